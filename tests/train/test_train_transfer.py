"""The trainer's ``transfer`` section: reasoning benchmarks before and after training, through
the engine (in-process transformers, and a real vLLM CPU server), logged and summarised."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

from strategic_arena.arena.store import ResultsStore
from strategic_arena.cli import main
from strategic_arena.problems import write_gsm8k_jsonl
from strategic_arena.train.engines.vllm_server import default_vllm_python, vllm_unavailable_reason
from strategic_arena.train.loop.metrics import read_metrics
from strategic_arena.transfer import cells

Overrides = Callable[..., list[str]]

TRANSFER = (
    "transfer={paper: spiral, benchmarks: [arithmetic], data_dir: DATA, limit: 4, samples: 2, "
    "max_tokens: 8}"
)


def check_before_after(out: str, db: Path, name: str, last: int) -> None:
    """The summary's table holds the store's numbers for the first and the last step."""
    with ResultsStore.for_reading(db) as store:
        found = {cell.label: cell for cell in cells(store)}
    labels = [f"{name}/step-000000", f"{name}/step-{last:06d}"]
    assert sorted(found) == labels
    summary = out[out.index(f"run {name!r} finished") :]
    assert "transfer before/after" in summary
    for label in labels:
        cell = found[label]
        assert cell.complete == cell.problems == 4 and cell.answers == 8
        value = cell.metrics[0]
        shown = f"{100 * value.mean:.1f}" + (
            "" if value.half is None else f" ± {100 * value.half:.1f}"
        )
        assert re.search(rf"{re.escape(label)}\s+{re.escape(shown)}", summary), summary
    assert f"strategic-arena transfer report --db {db}" in summary
    settings = db.parent / "checkpoints" / f"step-{last:06d}" / "eval_settings.json"
    assert (
        f"strategic-arena transfer run --settings {settings} --base-url "
        f"http://127.0.0.1:8000/v1 --model {name}-step-{last} --label {name}/served-step-"
        f"{last:06d}"
    ) in summary
    # the checkpoint's settings hold the trainer's plan, which transfer run --settings reads
    plan = json.loads(settings.read_text(encoding="utf-8"))["serving"]["transfer"]
    assert plan == {
        "paper": "spiral",
        "benchmarks": ["arithmetic"],
        "data_dir": str(db.parents[1] / "data"),
        "samples": 2,
        "max_tokens": 8,
        "limit": 4,
        "seed": 0,
        "shots": 0,
    }


def test_a_tiny_run_prints_a_before_after_table(
    tiny_overrides: Overrides, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = tmp_path / "data"
    write_gsm8k_jsonl(data / "arithmetic.jsonl", 6, seed=1)
    overrides = tiny_overrides(
        "run.steps=2", "run.name=transfer-tiny", TRANSFER.replace("DATA", str(data))
    )
    assert main(["train", *[arg for item in overrides for arg in ("--set", item)]]) == 0
    out = capsys.readouterr().out
    db = tmp_path / "run" / "eval.db"
    check_before_after(out, db, "transfer-tiny", 2)
    logged = read_metrics(tmp_path / "run" / "metrics.jsonl")
    steps = [row["step"] for row in logged if "transfer/arithmetic/pass@1" in row]
    assert steps == [0, 2]


@pytest.mark.vllm
@pytest.mark.xdist_group("vllm")
def test_a_tiny_vllm_run_prints_a_before_after_table(tmp_path: Path) -> None:
    reason = vllm_unavailable_reason()
    if reason is not None:
        pytest.skip(f"no vLLM server here: {reason}")
    data = tmp_path / "data"
    write_gsm8k_jsonl(data / "arithmetic.jsonl", 6, seed=1)
    settings = [
        f"run.output_dir={tmp_path / 'run'}",
        "run.name=transfer-vllm",
        "run.steps=2",
        "run.checkpoint_every=0",
        "run.tensorboard=false",
        "run.resume=never",
        "eval.every=0",
        "games.episodes_per_game=8",
        f"vllm.python={default_vllm_python()}",
        TRANSFER.replace("DATA", str(data)),
    ]
    config = Path(__file__).parents[2] / "configs" / "tiny_vllm.yaml"
    args = [arg for item in settings for arg in ("--set", item)]
    result = subprocess.run(
        [sys.executable, "-m", "strategic_arena.cli", "train", "--config", str(config), *args],
        capture_output=True,
        text=True,
        timeout=1200,
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    check_before_after(result.stdout, tmp_path / "run" / "eval.db", "transfer-vllm", 2)
