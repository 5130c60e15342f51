"""A tiny seeded CPU run writes the same ``metrics.jsonl`` as the trainer did before its split.

The reference files (``tests/train/golden/``) were written by the flat ``train/`` folder at
commit ef6bdac (``python -m tests.train.golden_runs``); every field but the timings must match.
Floats are compared to within a millionth, relative: the same arithmetic on another CPU may
round its last bits differently, which is not a change of behaviour.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

from tests.train.golden_runs import GOLDEN, RUNS, run


@pytest.mark.parametrize("name", sorted(RUNS))
def test_metrics_match_the_reference_but_for_timings(name: str, tmp_path: Path) -> None:
    lines = (GOLDEN / f"{name}.jsonl").read_text(encoding="utf-8").splitlines()
    expected = [json.loads(line) for line in lines]
    rows = run(name, tmp_path / "run")
    assert [sorted(row) for row in rows] == [sorted(row) for row in expected]
    for row, want in zip(rows, expected, strict=True):
        assert row == pytest.approx(want, rel=1e-6, abs=1e-12), row["step"]
