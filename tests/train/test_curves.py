"""``curves.html``: a run's learning curves from ``metrics.jsonl``; the steps' progress line."""

from __future__ import annotations

import io
import re
from pathlib import Path

from strategic_arena.arena.runner import Progress
from strategic_arena.train.loop.curves import charts, curves_page, write_curves
from strategic_arena.train.loop.metrics import read_metrics

GOLDEN = Path(__file__).parent / "golden" / "marshal.jsonl"


def test_a_golden_run_draws_each_quantity_with_a_point_per_logged_step(tmp_path: Path) -> None:
    rows = read_metrics(GOLDEN)
    keys = sorted({key for row in rows for key in row})
    drawn = {chart.title: chart.series for chart in charts(keys)}
    assert drawn["reward"] == {"train/reward": "train/reward"}
    assert drawn["KL"] == {"approx_kl": "train/approx_kl", "kl_ref": "train/kl_ref"}
    assert set(drawn) >= {"reward", "invalid-move rate", "KL", "entropy"}
    page = write_curves(rows, tmp_path, "golden").read_text(encoding="utf-8")
    assert not (tmp_path / "curves.html.tmp").exists()
    reward = page.split("<h2>reward</h2>", 1)[1].split("</svg>", 1)[0]
    (points,) = re.findall(r"<polyline points=\"([^\"]*)\"", reward)
    assert len(points.split()) == sum("train/reward" in row for row in rows)
    # the reward's extremes are the axis' labels
    values = [row["train/reward"] for row in rows if "train/reward" in row]
    assert f">{max(values):.4g}</text>" in reward and f">{min(values):.4g}</text>" in reward


def test_each_evaluation_opponent_gets_a_line_and_names_are_escaped() -> None:
    hostile = "<script>alert(1)</script>"
    rows = [
        {"step": s, f"eval/kuhn_poker-v0/{name}/mean_return": v}
        for s, v in ((2, -0.5), (4, 0.25))
        for name in ("nash", hostile)
    ] + [{"step": 4, "eval/kuhn_poker-v0/nash/seat0/mean_return": 1.0}]
    (chart,) = charts(sorted({key for row in rows for key in row}))
    assert chart.title == "evaluation return vs each opponent"
    assert list(chart.series) == [f"kuhn_poker-v0 vs {hostile}", "kuhn_poker-v0 vs nash"]
    page = curves_page(rows, "<b>run</b>")
    assert "<script>" not in page and "<b>run</b>" not in page
    assert "&lt;script&gt;alert(1)" in page and "&lt;b&gt;run&lt;/b&gt;" in page
    assert "<h2>reward</h2>" not in page  # no row has it: no empty chart


def test_the_steps_progress_line_says_seconds_per_step_and_an_eta() -> None:
    now = [0.0]
    stream = io.StringIO()
    progress = Progress(
        300,
        100,  # resumed at step 100
        label="run",
        unit="steps",
        seconds_per="step",
        count_errors=False,
        stream=stream,
        interval_s=0.0,
        clock=lambda: now[0],
    )
    for _ in range(3):
        now[0] += 12.5
        progress.update()
    line = stream.getvalue().strip().splitlines()[-1]
    # two intervals of 12.5 s between three steps; 197 steps left: 2462.5 s
    assert (
        line
        == "run [#######-------------]  34% 103/300 steps (100 resumed) | 12.5 s/step | ETA 41m02s"
    )
