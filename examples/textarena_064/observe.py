"""What SPIRAL's models read, next to what the curated SPIRAL entries show: the first decisions.

SPIRAL trained on TextArena 0.6.4 (the release spiral-rl 0.2.0 pins) with its own copies of some
games (spiral-rl's ``KuhnPoker-v1``, ``SimpleNegotiation-v2``, ``PigDice-v1``,
``TruthAndDeception-v1``) and TextArena's own Tic-Tac-Toe and Snake; the curated entries run
TextArena 0.7.4's games. This script prints, as JSON, each game's observations at its first
decision and after a few scripted moves (seed 0, the entry's wrapper), under whichever
TextArena is importable:

    python examples/textarena_064/observe.py entries > v074.json            # TextArena 0.7.4
    pip download --no-deps textarena==0.6.4 -d /tmp/ta && unzip -q /tmp/ta/*.whl -d /tmp/ta/src
    PYTHONPATH=/tmp/ta/src python examples/textarena_064/observe.py spiral > v064.json

``spiral`` needs spiral-rl (the ``spiral`` extra) for its game copies; it loads them from their
files, without spiral's ``__init__`` (which imports its training stacks).
``python examples/textarena_064/observe.py diff v064.json v074.json`` prints the diff that
docs/textarena_064.md holds.
"""

from __future__ import annotations

import difflib
import importlib.metadata
import importlib.util
import json
import random
import sys
import types
from pathlib import Path

import textarena as ta
from textarena.wrappers.ObservationWrappers import llm_observation_wrapper as wrappers

WHOLE, LAST = "LLMObservationWrapper", "FirstLastObservationWrapper"
#: game -> (0.7.4 entry's id and parameters, what SPIRAL ran on 0.6.4, wrapper, scripted moves)
GAMES = {
    "TicTacToe": ("TicTacToe-v0-raw", {}, "TicTacToe-v0", LAST, ["[4]", "[0]", "[8]"]),
    "KuhnPoker": (
        "KuhnPoker-v0-raw", {"max_rounds": 5}, "KuhnPoker-v1", WHOLE, ["[check]", "[bet]", "[call]"]
    ),
    "SimpleNegotiation": (
        "SimpleNegotiation-v0-raw",
        {"max_turns": 10},
        "SimpleNegotiation-v2",
        WHOLE,
        ["[Offer: 1 Wheat -> 1 Wood]", "[Deny]", "Hello there."],
    ),
    "PigDice": (
        "PigDice-v0-raw",
        {"winning_score": 50, "max_turns": 50},
        "PigDice-v1",
        LAST,
        ["[roll]", "[hold]", "[roll]"],
    ),
    "TruthAndDeception": (
        "TruthAndDeception-v0-raw",
        {"max_turns": 6},
        "TruthAndDeception-v1",
        WHOLE,
        ["Which fact?", "Fact 1 is true.", "Why?"],
    ),
    "Snake": (
        "Snake-v0-raw",
        {"width": 5, "height": 5, "num_apples": 2, "max_turns": 40},
        "Snake-v0",
        LAST,
        ["[up]", "[down]", "[left]", "[right]"],
    ),
}  # fmt: skip


def register_spirals_copies() -> None:
    """Register spiral-rl's game copies with TextArena (spiral.core.envs, loaded alone)."""
    root = Path(str(importlib.metadata.distribution("spiral-rl").locate_file("spiral")))
    for name, path in (("spiral", root), ("spiral.core", root / "core")):
        package = types.ModuleType(name)
        package.__path__ = [str(path)]
        sys.modules[name] = package
    location = root / "core" / "envs" / "__init__.py"
    spec = importlib.util.spec_from_file_location(
        "spiral.core.envs", location, submodule_search_locations=[str(location.parent)]
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["spiral.core.envs"] = module
    spec.loader.exec_module(module)


def observations(env_id: str, params: dict[str, int], wrapper: str, moves: list[str]) -> list[str]:
    """The observation of the seat to move, at the start and after each scripted move."""
    random.seed(0)
    env = getattr(wrappers, wrapper)(env=ta.make(env_id, **params))
    env.reset(num_players=2, seed=0)
    views = []
    for move in [None, *moves]:
        if move is not None and env.step(action=move)[0]:
            break
        seat, text = env.get_observation()
        views.append(f"--- player {seat} ---\n{text}")
    return views


def main(which: str) -> None:
    """Print the observations of the entries (``entries``) or of SPIRAL's setting (``spiral``)."""
    if which == "spiral":
        register_spirals_copies()
    found = {}
    for game, (entry, params, spirals, wrapper, moves) in GAMES.items():
        if which == "spiral":  # a copy carries SPIRAL's settings; TextArena's own game, ours
            env_id, kwargs = spirals, (params if spirals.endswith("-v0") else {})
        else:
            env_id, kwargs = entry, params
        found[game] = observations(env_id, kwargs, wrapper, moves)
    version = str(getattr(ta, "__version__", ""))
    json.dump({"textarena": version, **found}, sys.stdout, indent=1)


def diff(spirals: str, entries: str) -> None:
    """Print, as markdown, the unified diff of each game's observations (SPIRAL's -> ours)."""
    before, after = (
        json.loads(Path(path).read_text(encoding="utf-8")) for path in (spirals, entries)
    )
    for game, (entry, _, copy, wrapper, moves) in GAMES.items():
        lines = list(
            difflib.unified_diff(
                "\n".join(before[game]).splitlines(),
                "\n".join(after[game]).splitlines(),
                f"SPIRAL: {copy} on TextArena {before['textarena']}",
                f"entry: {entry} on TextArena {after['textarena']}",
                lineterm="",
            )
        )
        print(f"### {game}\n")
        print(f"{wrapper}; scripted moves after the first decision: {', '.join(moves)}.\n")
        print("```diff" if lines else "No difference.")
        if lines:
            print("\n".join(lines))
            print("```")
        print()


if __name__ == "__main__":
    if sys.argv[1:2] == ["diff"]:
        diff(sys.argv[2], sys.argv[3])
    else:
        main(sys.argv[1] if len(sys.argv) > 1 else "entries")
