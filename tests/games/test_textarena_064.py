"""docs/textarena_064.md, the exact differences from what SPIRAL's models read, stays true.

The page's diffs were written by ``examples/textarena_064/observe.py``; their right-hand side
is what the SPIRAL entries show on the pinned TextArena. Every added line of the page must
still be in the entries' observations today, so a TextArena or entry change that makes the
page wrong fails here (regenerate it as the page says).
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("textarena", reason="the [textarena] extra is not installed")

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "textarena_064.md"


def _observe() -> Any:
    spec = importlib.util.spec_from_file_location(
        "observe_064", ROOT / "examples" / "textarena_064" / "observe.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _page_sections() -> dict[str, list[str]]:
    """Each game's diff lines on the page."""
    sections: dict[str, list[str]] = {}
    current = None
    for line in PAGE.read_text(encoding="utf-8").splitlines():
        if line.startswith("### "):
            current = line[4:]
            sections[current] = []
        elif current is not None:
            sections[current].append(line)
    return sections


def test_what_the_page_says_the_entries_show_they_show(
    capsys: pytest.CaptureFixture[str],
) -> None:
    observe = _observe()
    observe.main("entries")
    shown = json.loads(capsys.readouterr().out)
    sections = _page_sections()
    assert set(sections) == set(observe.GAMES)
    for game, lines in sections.items():
        text = "\n".join(shown[game]).splitlines()
        added = [line[1:] for line in lines if line.startswith("+") and not line.startswith("+++")]
        missing = [line for line in added if line not in text]
        assert not missing, (game, missing[:3])
        same = [line for line in lines if line.startswith("No difference")]
        assert bool(same) != bool(added)  # a game has a diff or says it has none
