"""Prompt versions: one per game and prompt files, stored with every game, mixes reported loudly."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

import strategic_arena as sa
from strategic_arena.arena import metrics
from strategic_arena.arena.prompt_versions import prompt_mixes, version_label
from strategic_arena.arena.store import ResultsStore
from strategic_arena.leaderboard import publish, schema
from strategic_arena.players import RandomPlayer
from strategic_arena.prompt_files import digest, package_files, package_root
from strategic_arena.prompt_sets import PromptSet, default_prompts

PROMPTS = package_root()


def _user_set(tmp_path: Path, files: dict[str, str]) -> PromptSet:
    root = tmp_path / "mine"
    for relative, text in files.items():
        (root / relative).parent.mkdir(parents=True, exist_ok=True)
        (root / relative).write_text(text, encoding="utf-8")
    return PromptSet.load(root)


def test_a_games_version_covers_exactly_the_files_it_reads() -> None:
    files = dict(package_files())
    read = {
        path: text
        for path, text in files.items()
        if "/" not in path or path.startswith(("styles/", "kuhn_poker/"))
    }
    assert sa.get_spec("kuhn_poker-v0").prompt_version == {
        "name": "default",
        "digest": digest(read.items()),
    }
    assert default_prompts().record("kuhn_poker") == sa.get_spec("kuhn_poker-v0").prompt_version
    # The two Hanabi variants read the same folder; other games differ.
    mini, simple = (sa.get_spec(e).prompt_version for e in ("mini_hanabi-v0", "simple_hanabi-v0"))
    assert mini == simple
    assert len({str(sa.get_spec(e).prompt_version) for e in sa.list_envs()}) == 6


def test_editing_one_games_rules_is_a_new_version_of_that_game_only(tmp_path: Path) -> None:
    rules = (PROMPTS / "kuhn_poker" / "rules.txt").read_text(encoding="utf-8")
    edited = _user_set(tmp_path, {"kuhn_poker/rules.txt": rules + "Bluff wisely.\n"})
    assert edited.version("kuhn_poker") != default_prompts().version("kuhn_poker")
    assert edited.version("tic_tac_toe") == default_prompts().version("tic_tac_toe")
    # A style is read by every game: editing it changes every version.
    style = (PROMPTS / "styles" / "boxed.txt").read_text(encoding="utf-8")
    restyled = _user_set(tmp_path / "b", {"styles/boxed.txt": style + "\n"})
    for folder in ("kuhn_poker", "tic_tac_toe"):
        assert restyled.version(folder) != default_prompts().version(folder)
    # A copy of the package's own file is the same prompt: the same version.
    same = _user_set(tmp_path / "c", {"kuhn_poker/rules.txt": rules})
    assert same.version("kuhn_poker") == default_prompts().version("kuhn_poker")


class _Reader(RandomPlayer):
    """A random player that says it reads the package's prompts (as a model player does)."""

    prompts = default_prompts()


def test_every_played_game_stores_its_games_prompt_version() -> None:
    record = sa.play_match_sync("kuhn_poker-v0", [_Reader(seed=1), RandomPlayer(seed=2)], 3)
    assert record.prompts == (sa.get_spec("kuhn_poker-v0").prompt_version, None)


def _mixed_store(path: Path) -> None:
    """Kuhn games of one player: two stored with the whole set's digest (as stored before
    versions, or after a prompt edit), three with the game's version."""
    old = default_prompts().record()
    new = sa.get_spec("kuhn_poker-v0").prompt_version
    with ResultsStore(path) as store:
        run_id = store.run("mixed", 0, {})
        for seed in range(5):
            players = [_Reader(seed=seed, name="model"), RandomPlayer(seed=seed + 9)]
            record = sa.play_match_sync("kuhn_poker-v0", players, seed)
            record = dataclasses.replace(record, prompts=(old if seed < 2 else new, None))
            store.add_game(run_id, f"g{seed}", record)


def test_report_and_publish_say_loudly_that_a_row_mixes_versions(tmp_path: Path) -> None:
    db = tmp_path / "arena.sqlite"
    _mixed_store(db)
    old = version_label(default_prompts().record())
    new = version_label(sa.get_spec("kuhn_poker-v0").prompt_version)
    with ResultsStore(db) as store:
        data = metrics.report(store)
        (mix,) = prompt_mixes(store.games())
    assert (mix.player, mix.env_id, mix.versions) == (
        "model",
        "kuhn_poker-v0",
        ((new, 3), (old, 2)),
    )
    assert json.loads(json.dumps(data))["prompt_mixes"] == [
        {"player": "model", "env_id": "kuhn_poker-v0", "versions": [[new, 3], [old, 2]]}
    ]
    text = metrics.render_text(data)
    assert f"WARNING: model on kuhn_poker-v0 pools 2 prompt versions: {new} (3 games)" in text
    out = tmp_path / "site"
    publish(db, out)
    published = json.loads((out / "leaderboard.json").read_text())
    assert published["prompt_mixes"] == [
        {
            "player": "model",
            "env_id": "kuhn_poker-v0",
            "versions": [{"version": new, "games": 3}, {"version": old, "games": 2}],
        }
    ]
    jsonschema = pytest.importorskip("jsonschema")
    jsonschema.validate(published, schema(), cls=jsonschema.Draft202012Validator)
    assert (
        "**Warning:** model on kuhn_poker-v0 pools 2 prompt versions"
        in (out / "LEADERBOARD.md").read_text()
    )
    assert "<strong>Warning:</strong> model on kuhn_poker-v0" in (out / "index.html").read_text()


def test_one_version_and_solvers_without_prompts_are_no_mix(tmp_path: Path) -> None:
    db = tmp_path / "arena.sqlite"
    with ResultsStore(db) as store:
        run_id = store.run("clean", 0, {})
        for seed in range(3):
            players = [_Reader(seed=seed, name="model"), RandomPlayer(seed=seed + 9)]
            store.add_game(run_id, f"g{seed}", sa.play_match_sync("kuhn_poker-v0", players, seed))
        data = metrics.report(store)
    publish(db, tmp_path / "site")
    assert data["prompt_mixes"] == []
    assert "WARNING" not in metrics.render_text(data)
    assert "prompt_mixes" not in json.loads((tmp_path / "site" / "leaderboard.json").read_text())
