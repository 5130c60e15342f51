"""A run that explains itself: evaluation tables, the closing summary, clear one-line errors,
finished runs that say so, and checkpoint / endpoint opponents in ``eval_opponents``."""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Callable
from pathlib import Path

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

from strategic_arena.arena.metrics import summarize
from strategic_arena.arena.store import ResultsStore
from strategic_arena.asking import SETTINGS_FILE, read_settings
from strategic_arena.cli import main
from strategic_arena.serve import PlayerServer
from strategic_arena.train.config import load_config
from strategic_arena.train.loop.metrics import read_metrics
from strategic_arena.train.loop.trainer import Trainer
from tests.train.conftest import settings_sections

Overrides = Callable[..., list[str]]


def _train(overrides: list[str]) -> int:
    return main(["train", *[arg for item in overrides for arg in ("--set", item)]])


def test_evaluations_print_a_table_and_the_end_a_summary(
    tiny_overrides: Overrides, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    overrides = tiny_overrides(
        "run.steps=2",
        "eval.every=2",
        "eval.games=4",
        "eval.opponents={kuhn_poker-v0: [random, nash]}",
        "run.checkpoint_every=2",
        "run.name=console",
    )
    assert _train(overrides) == 0
    captured = capsys.readouterr()
    out = captured.out
    run = tmp_path / "run"
    db = run / "eval.db"
    # a progress line as eval's: step of steps, seconds per step once two steps are done, ETA
    final = captured.err.strip().splitlines()[-1]
    assert re.match(r"console \[#{20}\] 100% 2/2 steps \| [0-9.e+]+ s/step \| ETA 0s$", final)
    # the learning curves beside metrics.jsonl, with a line per evaluation opponent
    curves = (run / "curves.html").read_text(encoding="utf-8")
    for title in ("reward", "invalid-move rate", "KL", "entropy"):
        assert f"<h2>{title}</h2>" in curves
    assert "kuhn_poker-v0 vs nash" in curves and "kuhn_poker-v0 vs random" in curves
    assert f"curves       {run / 'curves.html'}" in out
    # the table's numbers are the store's
    with ResultsStore(db) as store:
        rows = {
            r.opponent: r
            for r in summarize(store, ["console/eval/step-000002"])
            if r.player == "console@step-2" and r.seat is None
        }
    assert set(rows) == {"random", "nash"}
    assert f"evaluation at step 2 (store {db}, run console/eval/step-000002)" in out
    for opponent, row in rows.items():
        wins = f"{row.wins / row.games:.1%}" if row.wins is not None else "-"
        pattern = (
            rf"kuhn_poker-v0\s+{opponent}\s+4\s+{re.escape(f'{row.mean_return:+.3f}')}\s+"
            rf"{re.escape(wins)}\s+{re.escape(f'{row.invalid_rate:.1%}')}"
        )
        assert re.search(pattern, out), (pattern, out)
    checkpoint = run / "checkpoints" / "step-000002"
    assert "run 'console' finished: step 2 of 2" in out
    assert f"checkpoint   {checkpoint}  (model: {checkpoint / 'policy'})" in out
    assert f"metrics      {run / 'metrics.jsonl'}" in out
    assert f"evaluations  {db}" in out
    assert f"strategic-arena report --db {db}" in out
    assert f"strategic-arena publish --db {db} --out {run / 'leaderboard'}" in out
    policy = (checkpoint / "policy").resolve()
    assert f"{policy} --served-model-name console-step-2 --host 127.0.0.1 --port 8000" in out
    assert "--generation-config vllm" in out
    settings = checkpoint / SETTINGS_FILE
    assert (
        "strategic-arena eval --base-url http://127.0.0.1:8000/v1 --model console-step-2 "
        f"--settings {settings} --name console@step-2 --envs kuhn_poker-v0 "
        "--opponents nash random --num-games 4 --seed 0"
    ) in out
    # the checkpoint says how its evaluation asked the policy: what --settings reads
    asking, sampling = read_settings(checkpoint)
    assert (asking.style, asking.strict, asking.policy) == ("boxed", False, "forfeit")
    assert asking.extra_body == {"include_stop_str_in_output": True}
    assert (sampling.temperature, sampling.max_tokens, sampling.top_k) == (1.0, 8, 0)


def test_a_finished_run_says_so_and_trains_nothing(
    tiny_overrides: Overrides, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    overrides = tiny_overrides("run.steps=1", "run.resume=auto", "run.checkpoint_every=1")
    assert _train(overrides) == 0
    metrics = tmp_path / "run" / "metrics.jsonl"
    before = metrics.read_text()
    capsys.readouterr()
    assert _train(overrides) == 0
    captured = capsys.readouterr()
    assert "run 'train' had already finished: step 1 of 1; nothing to do" in captured.out
    assert "resumed" not in captured.out + captured.err
    assert metrics.read_text() == before


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("steps: 3\nlr: [1e-3\n", "not valid YAML: expected ',' or ']', but got '<stream end>'"),
        ("model: ./no/such/model\n", "model: no model directory at ./no/such/model"),
    ],
)
def test_bad_yaml_and_a_missing_model_are_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str, message: str
) -> None:
    config = tmp_path / "bad.yaml"
    config.write_text(text)
    assert main(["train", "--config", str(config)]) == 2
    captured = capsys.readouterr()
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1 and message in lines[0], captured.err
    assert lines[0].startswith("strategic-arena train: error:")


def test_checkpoint_and_endpoint_opponents_play_in_evaluation(
    tiny_overrides: Overrides, tmp_path: Path
) -> None:
    first = load_config(None, tiny_overrides("run.steps=1", "run.checkpoint_every=1"))
    with Trainer(first) as trainer:
        trainer.train()
    frozen = Path(first.run.output_dir) / "checkpoints" / "step-000001" / "policy"
    with PlayerServer("nash", model="served-nash") as endpoint:
        cfg = load_config(
            None,
            [
                *tiny_overrides("run.steps=1", "eval.every=1", "eval.games=4"),
                f"run.output_dir={tmp_path / 'second'}",
                f"eval.opponents={{kuhn_poker-v0: [checkpoint:{frozen}, "
                f"{{spec: served-nash, base_url: '{endpoint.base_url}'}}]}}",
            ],
        )
        with Trainer(cfg) as trainer:
            trainer.train()
    records = read_metrics(tmp_path / "second" / "metrics.jsonl")
    assert f"eval/kuhn_poker-v0/checkpoint:{frozen}/invalid_rate" in records[0]
    assert "eval/kuhn_poker-v0/served-nash/mean_return" in records[0]
    with sqlite3.connect(tmp_path / "second" / "eval.db") as db:
        kinds = dict(db.execute("SELECT name, kind FROM players"))
        games = db.execute("SELECT COUNT(*) FROM games").fetchone()[0]
    assert kinds == {
        "train@step-1": "policy",
        f"checkpoint:{frozen}": "checkpoint",
        "served-nash": "llm",
    }
    assert games == 8
    with ResultsStore(tmp_path / "second" / "eval.db") as store:
        served = [r for r in summarize(store) if r.player == "served-nash" and r.seat is None]
    # the solver behind the endpoint answered every move validly, over real HTTP
    assert served and served[0].games == 4 and served[0].invalid_rate == 0.0


def test_the_printed_eval_command_carries_the_runs_reasoning_rule(tmp_path: Path) -> None:
    from strategic_arena.train.engines.serving import write_eval_settings
    from strategic_arena.train.loop.console import run_summary

    for rule in (False, None):
        sets = ["model.name=tiny", "answer.style=boxed", f"run.output_dir={tmp_path}"]
        if rule is not None:
            sets.append(f"answer.require_reasoning={str(rule).lower()}")
        cfg = load_config(None, sets)
        checkpoint = tmp_path / f"rule-{rule}" / "step-000003"
        (checkpoint / "policy").mkdir(parents=True)
        (checkpoint / "policy" / "config.json").write_text("{}")
        write_eval_settings(checkpoint, 3, "float32", 512, **settings_sections(cfg))
        text = run_summary(cfg, 3, checkpoint)
        # the command asks as the run did: its settings file, the reasoning rule included
        assert f"--settings {checkpoint / SETTINGS_FILE}" in text
        asking, _ = read_settings(checkpoint)
        assert asking.style == "boxed" and asking.require_reasoning is rule
