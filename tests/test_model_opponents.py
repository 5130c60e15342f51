"""``eval --opponents model:NAME@BASE_URL``: two endpoints play each other from the CLI.

Both endpoints are real HTTP servers on 127.0.0.1 (``strategic-arena serve``'s PlayerServer)
serving solvers as models; the evaluated one is named by ``--base-url``, the other in
``--opponents``, with a built-in opponent beside it.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from strategic_arena.arena.model_opponents import ModelOpponent
from strategic_arena.arena.store import ResultsStore
from strategic_arena.cli import main
from strategic_arena.leaderboard import reproduce
from strategic_arena.serve import PlayerServer

pytest.importorskip("openai", reason="the [arena] extra (openai) is not installed")

KUHN = "kuhn_poker-v0"


def test_two_endpoints_play_each_other_and_both_are_entrants(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RIVAL_KEY", "sk-rival-secret-0123456789")
    db = tmp_path / "arena.sqlite"
    with (
        PlayerServer("nash", model="nash-model") as ours,
        PlayerServer("random", model="random-model") as rival,
    ):
        args = [
            "eval",
            "--base-url",
            ours.base_url,
            "--model",
            "nash-model",
            "--envs",
            KUHN,
            "--opponents",
            f"model:random-model@{rival.base_url}",
            "random",
            "--opponent-api-key-env",
            "RIVAL_KEY",
            "--num-games",
            "4",
            "--seed",
            "3",
            "--db",
            str(db),
            "--quiet",
            "--json",
        ]
        assert main(args) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["candidates"] == ["nash-model", "random-model"]
    rows = {
        (s["player"], s["opponent"]): s["games"] for s in report["summaries"] if s["seat"] is None
    }
    # Each model against the other (both seats, 4 games), and the evaluated one against random.
    assert rows[("nash-model", "random-model")] == 4
    assert rows[("random-model", "nash-model")] == 4
    assert rows[("nash-model", "random")] == 4
    with ResultsStore(db) as store:
        players = store.players()
        assert players["random-model"].kind == "llm"
        assert players["random-model"].params["base_url"] == rival.base_url
        assert players["random-model"].params["model"] == "random-model"
        (run,) = store.runs()
        assert run.settings["opponents"] == {
            KUHN: [f"model:random-model@{rival.base_url}", "random"]
        }
        seated = [set(game.players) for game in store.games()]
        rerun = reproduce.command(run.name, run.seed, run.settings)
    # The published command plays the run again, the model opponent included.
    assert rerun is not None
    assert f"--opponents model:random-model@{rival.base_url} random" in rerun
    assert seated.count({"nash-model", "random-model"}) == 4
    # The opponent's key went to its endpoint only: nothing stored holds it.
    assert b"sk-rival-secret" not in db.read_bytes()


def _eval(ours: PlayerServer, db: Path, *extra: str) -> list[str]:
    """``eval`` arguments: nash-model at ``ours`` on 4 Kuhn games into ``db``, plus ``extra``."""
    return [
        "eval",
        "--base-url",
        ours.base_url,
        "--model",
        "nash-model",
        "--envs",
        KUHN,
        "--num-games",
        "4",
        "--seed",
        "3",
        "--db",
        str(db),
        "--quiet",
        "--json",
        *extra,
    ]


def test_a_model_opponent_is_reported_under_its_display_name(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "arena.sqlite"
    with (
        PlayerServer("nash", model="nash-model") as ours,
        PlayerServer("random", model="random-model") as rival,
    ):
        spec = f"model:random-model@{rival.base_url} as rival"
        assert main(_eval(ours, db, "--opponents", spec)) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["candidates"] == ["nash-model", "rival"]
    rows = {(s["player"], s["opponent"]) for s in report["summaries"] if s["seat"] is None}
    assert rows == {("nash-model", "rival"), ("rival", "nash-model")}
    with ResultsStore(db) as store:
        players = store.players()
        assert set(players) == {"nash-model", "rival"}
        assert players["rival"].params["model"] == "random-model"
        assert players["rival"].params["base_url"] == rival.base_url
        (run,) = store.runs()
        rerun = reproduce.command(run.name, run.seed, run.settings)
    # The published command names it the same way (the spec is one quoted word).
    assert rerun is not None and f"--opponents 'model:random-model@{rival.base_url} as rival'" in (
        rerun
    )


def test_the_evaluated_model_as_its_own_opponent_is_one_entrant(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The newcomer's case: a checkpoint evaluated as ``--name step-40`` and also named as a
    ``model:`` opponent on the same server was two entrants, the path-named copy ranked apart."""
    db = tmp_path / "arena.sqlite"
    with PlayerServer("nash", model="nash-model") as ours:
        spec = f"model:nash-model@{ours.base_url}"
        assert main(_eval(ours, db, "--name", "step-40", "--opponents", spec, "random")) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["candidates"] == ["step-40"]
    rows = {(s["player"], s["opponent"]): s for s in report["summaries"] if s["seat"] is None}
    # One entrant: no second name, and no games of the model against itself in a
    # competitive game (the runner never seats an entrant against itself there).
    assert set(rows) == {("step-40", "random"), ("random", "step-40")}
    assert rows[("step-40", "random")]["games"] == 4
    with ResultsStore(db) as store:
        assert set(store.players()) == {"step-40", "random"}


def test_a_bad_model_opponent_is_one_error_line_and_stores_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "arena.sqlite"
    common = ["eval", "--envs", KUHN, "--num-games", "2", "--db", str(db), "--quiet"]
    for spec, message in (
        ("model:nash", "expected model:NAME@BASE_URL"),
        ("model:x@http://user:key@127.0.0.1:9/v1", "carries credentials"),
    ):
        assert main([*common, "--opponents", spec]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and message in err[0] and "Traceback" not in err[0]
        assert "key@" not in err[0]  # the credential is not echoed
    assert not db.exists()


def test_the_spec_reads_model_and_base_url() -> None:
    parsed = ModelOpponent.parse("model:Qwen/Qwen3-4B@http://localhost:8001/v1")
    assert parsed == ModelOpponent("Qwen/Qwen3-4B", "http://localhost:8001/v1")
    assert parsed is not None and parsed.spec == "model:Qwen/Qwen3-4B@http://localhost:8001/v1"
    assert ModelOpponent.parse("mcts:simulations=10") is None
    named = ModelOpponent.parse("model:/runs/x/policy@http://localhost:8000/v1  as  step 40 ")
    assert named == ModelOpponent("/runs/x/policy", "http://localhost:8000/v1", "step 40")
    assert named is not None and named.spec.endswith("/v1 as step 40")
    assert ModelOpponent.parse(named.spec) == named


def test_the_reproducing_command_keeps_the_evaluated_models_name() -> None:
    settings = {
        "model": {"model": "m", "base_url": "http://127.0.0.1:1/v1", "style": "marshal"},
        "candidates": ["mine", "other"],
        "opponents": {KUHN: ["model:other@http://127.0.0.1:2/v1", "random"]},
        "num_games": 4,
        "protocol": None,
    }
    rerun = reproduce.command("r", 3, settings)
    assert rerun is not None and "--model m --name mine" in rerun
