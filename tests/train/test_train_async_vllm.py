"""``configs/tiny_vllm.yaml --set max_staleness=1`` through a real vLLM CPU server it starts.

The run is killed with SIGKILL after a checkpoint and resumed: every completed step appears
once, no trained game is more than one version behind, weight syncs froze the requests in
flight (``/pause?mode=keep``) instead of aborting them, and the policy learns to answer.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

from strategic_arena.train.engines.vllm_server import (
    default_vllm_python,
    vllm_unavailable_reason,
)
from strategic_arena.train.policy.checkpoint import checkpoint_dir, load_trainer_state
from tests.train.test_train_resume import _wait_for

pytestmark = [pytest.mark.vllm, pytest.mark.slow, pytest.mark.xdist_group("vllm")]

CONFIG = Path(__file__).parents[2] / "configs" / "tiny_vllm.yaml"
STEPS = 16


def _train(out: Path, vllm_python: str, resume: str) -> subprocess.Popen[bytes]:
    settings = [
        "rollout.max_staleness=1",
        f"run.output_dir={out}",
        f"run.steps={STEPS}",
        "eval.every=0",
        "run.checkpoint_every=4",
        "run.tensorboard=false",
        f"run.resume={resume}",
        f"vllm.python={vllm_python}",
    ]
    args = [arg for item in settings for arg in ("--set", item)]
    return subprocess.Popen(
        [sys.executable, "-m", "strategic_arena.cli", "train", "--config", str(CONFIG), *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )


def test_async_tiny_vllm_trains_within_staleness_one_and_survives_kill_9(
    tmp_path: Path,
) -> None:
    reason = vllm_unavailable_reason()
    if reason is not None:
        pytest.skip(f"no vLLM server here: {reason}")
    python = default_vllm_python()
    out = tmp_path / "run"
    killed = _train(out, python, "never")
    _wait_for(checkpoint_dir(out, 4) / "trainer.pt", killed)
    killed.send_signal(signal.SIGKILL)
    killed.wait()
    if killed.stdout:
        killed.stdout.close()
    kept_log = (out / "vllm-server.log").read_text()

    resumed = _train(out, python, "auto")
    output, _ = resumed.communicate(timeout=900)
    assert resumed.returncode == 0, output.decode()[-3000:]

    rows = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    assert [row["step"] for row in rows] == list(range(1, STEPS + 1))  # none lost, none twice
    assert load_trainer_state(checkpoint_dir(out, STEPS))["step"] == STEPS
    for row in rows:
        assert row["async/max_lag"] <= 1, row["step"]
        assert row["async/dropped_stale"] == 0
        assert row["async/staleness_lag_0"] + row["async/staleness_lag_1"] == row["train/episodes"]
        assert row["sync/weight_version"] == row["step"]
    assert any(row["async/staleness_lag_1"] > 0 for row in rows)  # the loop did overlap
    assert "/pause?mode=keep" in kept_log + (out / "vllm-server.log").read_text()
    # Learns: the invalid rate of the last three steps is at most 60% of the first step's. When
    # a sync lands mid-round depends on thread timing, so the path is not reproducible: one run
    # here went 0.625 -> 0.165 (0.5 at step 10 on the way), so the bound leaves room for a
    # slower path while still failing a run that does not learn.
    first = rows[0]["train/invalid_rate"]
    last = sum(row["train/invalid_rate"] for row in rows[-3:]) / 3
    assert last <= 0.6 * first, (first, last)
