"""Transfer runs on the published leaderboard: JSON (valid against its schema), markdown, page."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from strategic_arena.arena.store import ResultsStore
from strategic_arena.leaderboard import publish, schema
from strategic_arena.problems import write_gsm8k_jsonl
from strategic_arena.transfer import BENCHMARKS, BenchmarkRun, Protocol
from strategic_arena.transfer.runner import run_settings
from strategic_arena.transfer.store import Answer, open_run, run_name, save_answer


def test_published_pages_show_the_before_after_table(tmp_path: Path) -> None:
    jsonschema = pytest.importorskip("jsonschema", reason="the dev extra validates the JSON")
    write_gsm8k_jsonl(tmp_path / "arithmetic.jsonl", 4, seed=2)
    run = BenchmarkRun(
        BENCHMARKS["arithmetic"],
        Protocol("qwen25_math_cot", samples=2, metrics=("pass@1", "pass@2")),
        data_dir=str(tmp_path),
    )
    problems = run.problems()
    db = tmp_path / "t.sqlite"
    # before: 1 of 8 answers right; after: 6 of 8 (problem 3 right in both samples)
    right = {
        "before": {(problems[0].id, 1)},
        "after": {(p.id, s) for p in problems[1:] for s in (0, 1)},
    }
    with ResultsStore(db) as store:
        for label, good in right.items():
            stored = open_run(
                store, run_name(label, "arithmetic"), 0, run_settings(run, "m", problems)
            )
            for problem in problems:
                for sample in (0, 1):
                    ok = (problem.id, sample) in good
                    assert save_answer(
                        store, stored.id, Answer(problem.id, sample, ok, "1" if ok else None, "r")
                    )
            assert not save_answer(store, stored.id, Answer(problems[0].id, 0, True, "1", "again"))
    files = publish(db, tmp_path / "site")
    data = json.loads(files["leaderboard.json"].read_text())
    jsonschema.validate(data, schema())
    transfer = data["transfer"]
    assert transfer["labels"] == ["before", "after"] and transfer["benchmarks"] == ["arithmetic"]
    means = {c["label"]: {m["name"]: m["mean"] for m in c["metrics"]} for c in transfer["cells"]}
    assert means == {
        "before": {"pass@1": 0.125, "pass@2": 0.25},
        "after": {"pass@1": 0.75, "pass@2": 0.75},
    }
    markdown = files["LEADERBOARD.md"].read_text()
    assert "## Transfer evaluation" in markdown and "| before | 12.5 ± " in markdown
    assert "| after | 75.0 ± " in markdown
    page = files["index.html"].read_text()
    assert 'id="tab-transfer"' in page and "arithmetic pass@1" in page
