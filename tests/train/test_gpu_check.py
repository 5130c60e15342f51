"""``benchmarks/gpu_check.py --smoke``: the GPU check's code path, at tiny shapes on the CPU.

Runs the script as ``make gpu-check`` does (a subprocess) and reads its JSON: the precision row
shows float32 masters learning at lr 1e-6 where bfloat16 weights do not, the learner, FSDP and
export rows report their figures, and the vLLM rows are skipped with a reason.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_gpu_check_smoke_mode_writes_every_row(tmp_path: Path) -> None:
    out = tmp_path / "gpu_check.json"
    done = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "gpu_check.py"), "--smoke", "--json", str(out)],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    report = json.loads(out.read_text())
    assert report["smoke"] is True and report["passed"] is True and report["device"] == "cpu"
    rows = {row["name"]: row for row in report["rows"]}
    assert list(rows) == [
        "cuda",
        "precision",
        "learner",
        "fsdp",
        "export",
        "vllm_tests",
        "bench_rollout",
        "colocated",
    ]
    precision = rows["precision"]["figures"]
    assert precision["moved_fp32_master_bf16_compute"] > 0.99
    assert precision["moved_bf16_weights"] < 0.05
    assert precision["forward_dtype"] == "torch.bfloat16"  # autocast over float32 masters
    for name in ("learner", "fsdp"):
        assert rows[name]["status"] == "ok", rows[name]["note"]
        assert rows[name]["figures"]["tokens_per_s"] > 0
        assert rows[name]["figures"]["peak_memory_gib"] > 0
    assert rows["fsdp"]["figures"]["backend"] == "gloo"
    export = rows["export"]["figures"]
    assert export["dtype"] == "bfloat16"
    params = rows["learner"]["figures"]["parameters"]
    assert params * 2 <= export["bytes"] < params * 2 + 100_000  # 2 bytes a weight + header
    for name in ("cuda", "vllm_tests", "bench_rollout", "colocated"):
        assert rows[name]["status"] == "skip" and "smoke" in rows[name]["note"]
    assert "GPU check on cpu" in done.stdout and "passed" in done.stdout
