# Two commands do all the set-up on a fresh machine (see README.md):
#   make arena  -- create .venv, install the package, run an arena evaluation on the embedded
#                  defaults (a served solver suite as the model), then print its report
#   make test   -- create .venv, install the package with its dev tools, lint, type-check, test
# (make demo: one seeded game with every prompt shown)
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-$(shell cat pyproject.toml Makefile | cksum | cut -d' ' -f1)

.PHONY: arena demo test lint typecheck unit bench clean

$(STAMP): pyproject.toml Makefile
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet torch==2.13.0
	$(BIN)/python -m pip install --quiet -e '.[dev,solvers,arena,train,verifiers,trl,openenv]'
	rm -f $(VENV)/.installed-* && touch $(STAMP)

arena: $(STAMP)
	$(BIN)/strategic-arena eval

demo: $(STAMP)
	$(BIN)/strategic-arena demo

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

typecheck: $(STAMP)
	$(BIN)/mypy

unit: $(STAMP)
	$(BIN)/pytest -n 2 -q

test: lint typecheck unit

bench: $(STAMP)
	$(BIN)/python -m pip install --quiet -e '.[dev,solvers,arena,bench]'
	$(BIN)/python benchmarks/bench_env_playouts.py
	$(BIN)/python benchmarks/bench_mcts.py
	$(BIN)/python benchmarks/bench_cfr.py
	$(BIN)/python benchmarks/bench_hanabi_bot.py
	$(BIN)/python benchmarks/bench_connect_four_solver.py
	$(BIN)/python benchmarks/bench_arena_overhead.py
	$(BIN)/python benchmarks/bench_train_step.py
	$(BIN)/python benchmarks/bench_faults.py

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache build *.egg-info
