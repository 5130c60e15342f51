"""The committed flagship run (``make flagship``): its figures are the store's, and published.

``leaderboards/smollm2.db`` is the flagship run's evaluation store: SmolLM2-135M-Instruct before
training (step 0) and after (step 20), in the arena and on GSM8K and MATH-500. The docs' table
must be the one :mod:`strategic_arena.train.loop.before_after` computes from that store (so a
rerun that changes the store and forgets the docs fails here), and the shipped leaderboard must
carry both models beside the baselines, with their transfer rows.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from strategic_arena.arena.store import ResultsStore
from strategic_arena.train.config import load_config

ROOT = Path(__file__).resolve().parents[2]
STORE = ROOT / "leaderboards" / "smollm2.db"
CONFIG = ROOT / "configs" / "smollm2_flagship.yaml"

pytestmark = pytest.mark.skipif(
    not STORE.exists(), reason="leaderboards/smollm2.db is not in this checkout (make flagship)"
)


def test_the_docs_table_is_the_stores() -> None:
    from strategic_arena.train.loop.before_after import before_after, comparison_markdown

    cfg = load_config(str(CONFIG))
    with ResultsStore.for_reading(STORE) as store:
        comparison = before_after(store, cfg.run.name, 0, cfg.run.steps)
    table = comparison_markdown(comparison)
    assert table in (ROOT / "docs" / "flagship.md").read_text(encoding="utf-8")
    # Both sides of every row are there: two opponents in the arena, two benchmarks.
    assert set(comparison.arena) == {("kuhn_poker-v0", "random"), ("kuhn_poker-v0", "nash")}
    assert set(comparison.benchmarks) == {"gsm8k", "math500"}
    for sides in (*comparison.arena.values(), *comparison.benchmarks.values()):
        assert None not in sides
    for before, after in comparison.arena.values():
        assert before is not None and after is not None
        assert before.games == after.games == cfg.eval.games


def test_the_leaderboard_shows_both_models_beside_the_baselines() -> None:
    data = json.loads((ROOT / "leaderboards" / "leaderboard.json").read_text(encoding="utf-8"))
    (kuhn,) = [env for env in data["envs"] if env["env_id"] == "kuhn_poker-v0"]
    models = {row["player"] for row in kuhn["rows"] if not row["baseline"]}
    assert models == {"smollm2-135m-instruct@step-0", "smollm2-135m-instruct@step-20"}
    assert {"random", "nash"} <= {row["player"] for row in kuhn["rows"] if row["baseline"]}
    labels = set(data["transfer"]["labels"])
    assert labels == {"smollm2-135m-instruct/step-000000", "smollm2-135m-instruct/step-000020"}
    cells = {(cell["label"], cell["benchmark"]) for cell in data["transfer"]["cells"]}
    assert cells == {(label, bench) for label in labels for bench in ("gsm8k", "math500")}
