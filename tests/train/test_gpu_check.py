"""``benchmarks/gpu_check.py``: a check that starts on a bare GPU machine, and says so without one.

The smoke mode runs as ``make gpu-check-smoke`` does (a subprocess) in an interpreter where
OpenSpiel, PettingZoo, gymnasium, transformers, pyyaml, safetensors, httpx and pydantic cannot be
imported (a meta-path blocker on ``PYTHONPATH``, as on a GPU machine that has only torch and
numpy): the rows that can run on a CPU report their figures through the project's own learner,
sharding and estimate over the torch-only model, and every other row is skipped with its reason.
"""

from __future__ import annotations

import json
import os
import resource
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("torch")

ROOT = Path(__file__).resolve().parents[2]

#: What a GPU machine with only torch and numpy lacks.
BLOCKED = (
    "pyspiel",
    "open_spiel",
    "pettingzoo",
    "gymnasium",
    "transformers",
    "yaml",
    "safetensors",
    "httpx",
    "textarena",
    "vllm",
    "openai",
    "pydantic",
)

BLOCKER = f"""
import sys

BLOCKED = {BLOCKED!r}


class Blocker:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in BLOCKED:
            raise ModuleNotFoundError(f"No module named {{name!r}} (blocked)", name=name)
        return None


sys.meta_path.insert(0, Blocker())
"""


def _check(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "gpu_check.py"), *args],
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
        cwd=ROOT,
        env={**os.environ, **env},
    )


def test_without_a_gpu_it_says_so_in_one_line_and_allocates_nothing_large(
    tmp_path: Path,
) -> None:
    out = tmp_path / "out"
    done = _check(["--out", str(out)], {"CUDA_VISIBLE_DEVICES": "", "PYTHONPATH": str(ROOT)})
    assert done.returncode == 1, done.stderr  # nothing ran: not a pass
    lines = done.stdout.splitlines()
    assert len(lines) == 1, done.stdout
    assert lines[0].startswith("gpu-check: no CUDA device here") and "--smoke" in lines[0]
    assert not out.exists()  # nothing ran, nothing written
    # the largest child so far: importing torch, not a 4B-shaped model (16.7 GB before)
    assert resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss < 2 * 2**20  # KiB: 2 GiB
    required = _check(["--require-gpu"], {"CUDA_VISIBLE_DEVICES": "", "PYTHONPATH": str(ROOT)})
    assert required.returncode == 1 and len(required.stdout.splitlines()) == 1


@pytest.mark.skipif(shutil.which("make") is None, reason="needs make")
def test_make_gpu_check_creates_no_venv_and_installs_nothing() -> None:
    # Under `make test` this runs inside make: its variables would make the inner make print
    # "Entering directory" lines (and pass its flags on), so the inner make gets neither.
    env = {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL")}
    done = subprocess.run(
        ["make", "--no-print-directory", "-n", "gpu-check", "gpu-check-smoke"],
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT,
        env=env,
    )
    commands = done.stdout
    assert "benchmarks/gpu_check.py --out gpu_check" in commands
    assert "benchmarks/gpu_check.py --smoke" in commands
    for word in ("pip", "venv", ".venv", "install"):
        assert word not in commands, commands
    assert commands.startswith("python3 ")  # the machine's own Python


@pytest.mark.slow
def test_smoke_mode_without_the_optional_dependencies(tmp_path: Path) -> None:
    (tmp_path / "sitecustomize.py").write_text(BLOCKER, encoding="utf-8")
    out = tmp_path / "out"
    env = {"PYTHONPATH": f"{tmp_path}{os.pathsep}{ROOT}", "CUDA_VISIBLE_DEVICES": ""}
    probe = subprocess.run(
        [sys.executable, "-c", "import transformers"], env={**os.environ, **env}, check=False
    )
    assert probe.returncode != 0  # the blocker works
    done = _check(["--smoke", "--out", str(out)], env)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    report = json.loads((out / "gpu_check.json").read_text())
    assert (out / "gpu_check.txt").read_text().startswith("GPU check on cpu")
    assert report["smoke"] is True and report["passed"] is True and report["model"] == "torch"
    rows = {row["name"]: row for row in report["rows"]}
    assert list(rows) == [
        "cuda",
        "precision",
        "learner",
        "handoff",
        "export",
        "fsdp",
        "fused_adamw",
        "loop",
        "handoff_h100",
        "vllm_tests",
        "bench_rollout",
        "colocated",
        "smoke_recipe",
    ]
    ran = {name for name, row in rows.items() if row["status"] == "ok"}
    assert ran == {"precision", "learner", "export", "fsdp", "fused_adamw", "loop"}
    loop = rows["loop"]["figures"]  # learning under bf16 autocast, on the torch-only model
    assert loop["steps"] == 30 and loop["compute"] == "bfloat16"
    assert loop["reward_first_5"] < 0.3 and loop["reward_last_5"] >= 0.5
    assert loop["logprob_gap_max"] < 1e-3  # engine and learner under the same autocast
    assert loop["resume_bit_equal"] == "True"  # on the CPU a resumed step repeats exactly
    for name, row in rows.items():
        if name not in ran:
            assert row["status"] == "skip" and row["note"], row
    assert "CPU" in rows["cuda"]["note"] and "CUDA" in rows["handoff"]["note"]
    precision = rows["precision"]["figures"]
    assert precision["moved_fp32_master_bf16_compute"] > 0.99
    assert precision["moved_bf16_weights"] < 0.05
    assert precision["forward_dtype"] == "torch.bfloat16"  # autocast over float32 masters
    learner = rows["learner"]["figures"]
    # the torch-only model has exactly the estimate's parameter count: embeddings 512 x 64
    # (tied), per layer attention 64 x (64 + 2 x 32) + 64 x 64, MLP 3 x 64 x 128, norms 2 x 64,
    # two layers, the final norm
    assert learner["parameters"] == 512 * 64 + 2 * (12_288 + 24_576 + 128) + 64 == 106_816
    for name in ("learner", "fsdp"):
        figures = rows[name]["figures"]
        assert figures["tokens_per_s"] > 0 and figures["host_peak_rss_gib"] > 0
        assert figures["clip_fraction"] == 0.0  # behaviour log-probs are the model's own
    assert rows["fsdp"]["figures"]["backend"] == "gloo"
    export = rows["export"]["figures"]
    assert (
        export["dtype"] == "bfloat16" and "safetensors is not installed" in rows["export"]["note"]
    )
    # 2 bytes a weight; the tied output head is streamed under its own name too
    assert export["bytes"] == 2 * (learner["parameters"] + 64 * 512)
    adamw = rows["fused_adamw"]["figures"]
    assert adamw["fused_step_s"] > 0 and adamw["foreach_step_s"] > 0
    for name in ("vllm_tests", "bench_rollout", "colocated", "smoke_recipe"):
        assert "smoke" in rows[name]["note"]
    assert "GPU check on cpu" in done.stdout and "passed" in done.stdout


def test_the_stand_in_server_takes_keeps_and_survives_a_wake_that_does_not_fit() -> None:
    """The handoff_h100 row's server (a torch-only child process), driven on the CPU."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        from gpu_handoff import StandInServer
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))
    server = StandInServer("cpu")
    try:
        assert server.take(4096) == {"ok": True, "held": 4096}  # started
        assert server.take(1024) == {"ok": True, "held": 5120}
        assert server.keep(512) == {"ok": True, "held": 512}  # asleep
        refused = server.take(2**62)  # a wake that cannot fit: an answer, not a dead process
        assert refused["ok"] is False and refused["held"] == 512 and refused["error"]
        assert server.take(100) == {"ok": True, "held": 612}
    finally:
        server.close()
    assert server.process.returncode == 0
