"""Prompt sets: loading and checking a folder, overriding templates, and keeping results apart.

End to end: ``eval --prompts examples/prompts/spiral --style spiral`` against the built-in solver
suite over real HTTP, beside a default run in the same store; the store records each game's
prompt set and ``report`` keeps the two players apart.
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
from pathlib import Path

import pytest

import strategic_arena as sa
from strategic_arena.arena.store import ResultsStore
from strategic_arena.asking import Asking
from strategic_arena.cli import main
from strategic_arena.prompt_sets import PromptSet, default_prompts, load_prompts
from strategic_arena.prompting import render_messages

pytest.importorskip("openai", reason="the [arena] extra (openai) is not installed")

SPIRAL_SET = Path(__file__).parents[1] / "examples" / "prompts" / "spiral"
SPIRAL_OPENING = "You are playing a two-player zero-sum game. Make valid actions to win.\n"
SPIRAL_CLOSING = "Please reason step by step, and put your final answer within \\boxed{}."


def kuhn_view() -> sa.SeatView:
    env = sa.make("kuhn_poker-v0")
    env.reset(seed=0)
    return env.seat_view(env.agent_selection)


def test_the_spiral_set_is_spirals_template_in_one_user_turn() -> None:
    prompts = PromptSet.load(SPIRAL_SET)
    assert prompts.name == "spiral" and len(prompts.digest) == 64
    view = kuhn_view()
    messages = render_messages("kuhn_poker-v0", view, "spiral", prompts=prompts)
    assert [m["role"] for m in messages] == ["user"]  # no system message, as in SPIRAL
    text = messages[0]["content"]
    assert text.startswith(SPIRAL_OPENING + "Observation: You are playing Kuhn Poker.")
    assert text.endswith(SPIRAL_CLOSING)
    assert sa.get_spec("kuhn_poker-v0").rules in text and view.text in text
    assert "- check\n- bet\n" in text


def test_a_set_overrides_only_its_files(tmp_path: Path) -> None:
    (tmp_path / "kuhn_poker").mkdir()
    (tmp_path / "kuhn_poker" / "rules.txt").write_text("Bet with a King.\n", encoding="utf-8")
    (tmp_path / "styles").mkdir()
    (tmp_path / "styles" / "marshal.txt").write_text(
        "Answer <answer>$example</answer>.", encoding="utf-8"
    )
    prompts = PromptSet.load(tmp_path)
    view = kuhn_view()
    default = render_messages("kuhn_poker-v0", view)
    system, user = render_messages("kuhn_poker-v0", view, prompts=prompts)
    assert (
        "# Rules\nBet with a King.\n\n# How to answer\nAnswer <answer>check</answer>."
        in (system["content"])
    )
    assert user == default[1]  # user.txt falls back to the package's
    # another game keeps its own rules; the style override applies to it too
    env = sa.make("tic_tac_toe-v0")
    env.reset(seed=0)
    ttt = env.seat_view(env.agent_selection)
    system = render_messages("tic_tac_toe-v0", ttt, prompts=prompts)[0]["content"]
    assert sa.get_spec("tic_tac_toe-v0").rules in system
    assert system.endswith("Answer <answer>X(1,1)</answer>.")
    # the default set renders exactly as without a set
    assert render_messages("kuhn_poker-v0", view, prompts=default_prompts()) == default


def test_the_digest_follows_the_prompt_files_only(tmp_path: Path) -> None:
    copy = tmp_path / "spiral"
    shutil.copytree(SPIRAL_SET, copy)
    original = PromptSet.load(SPIRAL_SET)
    assert PromptSet.load(copy).digest == original.digest
    (copy / "README.md").write_text("notes", encoding="utf-8")
    assert PromptSet.load(copy).digest == original.digest
    loaded = PromptSet.load(copy)
    (copy / "user.txt").write_text("$observation\n$actions", encoding="utf-8")
    assert PromptSet.load(copy).digest != original.digest
    # a loaded set renders what its digest covers, whatever happens to the folder afterwards
    (user,) = render_messages("kuhn_poker-v0", kuhn_view(), "spiral", prompts=loaded)
    assert user["content"].startswith(SPIRAL_OPENING)
    assert load_prompts(None) == default_prompts() and default_prompts().is_default


@pytest.mark.parametrize(
    ("path", "text", "message"),
    [
        ("kuhn_poker/rule.txt", "x", "not a prompt file"),
        ("styles/fancy.txt", "x", "not a prompt file"),
        ("user.txt", "$observation $board", "unknown placeholder(s) $board"),
        ("styles/boxed.txt", "costs $5", "a '$' that is no placeholder"),
        ("chess/rules.txt", "x", "not a prompt file"),
    ],
)
def test_bad_sets_are_refused_naming_the_file(
    tmp_path: Path, path: str, text: str, message: str
) -> None:
    (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
    (tmp_path / path).write_text(text, encoding="utf-8")
    with pytest.raises(ValueError, match=r"prompt set .*" + path.replace("/", ".")) as error:
        PromptSet.load(tmp_path)
    assert message in str(error.value)


def test_eval_with_a_bad_set_is_one_error_line_and_stores_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "arena.sqlite"
    args = ["eval", "--db", str(db), "--quiet", "--envs", "kuhn_poker-v0", "--num-games", "2"]
    assert main([*args, "--prompts", str(tmp_path / "missing")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith("strategic-arena: error: prompt set") and "no such folder" in err[-1]
    assert "Traceback" not in "\n".join(err)
    if db.exists():
        with ResultsStore(db) as store:
            assert store.runs() == [] and store.games() == []


def test_eval_spiral_prompts_are_recorded_and_reported_apart(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "arena.sqlite"
    common = ["eval", "--db", str(db), "--quiet", "--envs", "kuhn_poker-v0", "--num-games", "2"]
    assert main([*common, "--no-report"]) == 0
    spiral = ["--prompts", str(SPIRAL_SET), "--style", "spiral", "--no-report"]
    assert main([*common, *spiral]) == 0
    digest = PromptSet.load(SPIRAL_SET).digest
    spiral_name = f"solver-suite+prompts-spiral@{digest[:12]}"
    with ResultsStore(db) as store:
        players = store.players()
        assert players[spiral_name].params["prompts"] == f"spiral@{digest[:12]}"
        assert players[spiral_name].params["style"] == "spiral"
        assert "prompts" not in players["solver-suite"].params
        games = store.games()
        assert len(games) == 8
        for game in games:
            seat = next(i for i, name in enumerate(game.players) if name.startswith("solver"))
            # Each game stores its prompt version: the digest of the files Kuhn reads.
            expected = (
                {"name": "spiral", "digest": PromptSet.load(SPIRAL_SET).version("kuhn_poker")}
                if game.players[seat] == spiral_name
                else default_prompts().record("kuhn_poker")
            )
            assert game.prompts[seat] == expected
            assert game.prompts[1 - seat] is None  # the opponent reads no prompt
            first = next(m for m in store.moves(game.id) if m.seat == seat)
            roles = [message["role"] for message in first.prompt]
            assert roles == (["user"] if game.players[seat] == spiral_name else ["system", "user"])
    capsys.readouterr()
    assert main(["report", "--db", str(db), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert set(data["candidates"]) == {"solver-suite", spiral_name}
    per_player = {s["player"] for s in data["summaries"] if s["opponent"] == "nash"}
    assert per_player == {"solver-suite", spiral_name}
    # One name for two prompt sets is refused: results never pool.
    assert main([*common, *spiral, "--name", "solver-suite", "--run-name", "mixed"]) == 2
    assert "already has a player named 'solver-suite'" in capsys.readouterr().err


def test_a_game_session_renders_with_its_prompt_set() -> None:
    from strategic_arena.integrations.session import GameSession

    session = GameSession("kuhn_poker-v0", asking=Asking(style="spiral", prompts=str(SPIRAL_SET)))
    session.reset(seed=0, seat=0)
    messages = session.messages()
    assert [m["role"] for m in messages] == ["user"]
    assert messages[0]["content"].startswith(SPIRAL_OPENING)
    assert session.step("\\boxed{bet}").error is None  # SPIRAL's bare box is a move
    strict = GameSession("kuhn_poker-v0", asking=Asking(style="spiral", require_reasoning=True))
    strict.reset(seed=0, seat=0)
    outcome = strict.step("\\boxed{bet}")
    assert outcome.error is not None and outcome.error.kind == "missing_reasoning"


def test_the_trainer_takes_a_style_prompt_set_and_require_reasoning() -> None:
    pytest.importorskip("yaml", reason="the [train] extra (pyyaml) is not installed")
    from strategic_arena.train.config import load_config
    from strategic_arena.train.loop.rollout import configured_player

    cfg = load_config(
        None,
        ["answer.style=spiral", f"answer.prompts={SPIRAL_SET}", "answer.require_reasoning=true"],
    )
    player = configured_player(cfg, None, None, 0, name="policy")  # type: ignore[arg-type]
    assert player.style.name == "spiral" and player.asking.require_reasoning is True
    assert player.prompts == PromptSet.load(SPIRAL_SET)
    with pytest.raises(ValueError, match="style must be one of marshal, boxed"):
        load_config(None, ["answer.style=xml"])
    with pytest.raises(ValueError, match="no such folder"):
        load_config(None, ["answer.prompts=/no/such/prompt/set"])


def test_a_store_from_before_prompt_sets_gains_the_column_and_keeps_its_games(
    tmp_path: Path,
) -> None:
    import sqlite3

    from strategic_arena.arena.match import MatchRecord

    db = tmp_path / "old.sqlite"
    record = MatchRecord("kuhn_poker-v0", 1, ("a", "b"), (), (1.0, -1.0), "complete")
    with ResultsStore(db) as store:
        run_id = store.run("old", 0, {})
        assert store.add_game(run_id, "k/0", record)
    with sqlite3.connect(db) as con:  # the games table as a version-4 store has it
        con.execute("ALTER TABLE games DROP COLUMN prompts")
    with ResultsStore(db) as store:
        (old,) = store.games()
        assert old.prompts == () and old.returns == (1.0, -1.0)
        spiral = {"name": "spiral", "digest": "0" * 64}
        assert store.add_game(run_id, "k/1", dataclasses.replace(record, prompts=(spiral, None)))
        assert store.games()[1].prompts == (spiral, None)


def test_play_shows_the_prompts_of_a_set(capsys: pytest.CaptureFixture[str]) -> None:
    args = ["play", "kuhn_poker-v0", "--style", "spiral", "--prompts", str(SPIRAL_SET)]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "--- user ---\n" + SPIRAL_OPENING in out and "--- system ---" not in out
    assert main(["play", "kuhn_poker-v0", "--prompts", str(SPIRAL_SET / "missing")]) == 2
    assert "no such folder" in capsys.readouterr().err


def test_the_spiral_config_uses_spirals_parser_and_template() -> None:
    pytest.importorskip("yaml", reason="the [train] extra (pyyaml) is not installed")
    from strategic_arena.train.config import load_config

    configs = Path(__file__).parents[1] / "configs"
    for name in ("spiral_multi_game.yaml", "spiral_multi_game_no_rae.yaml"):
        cfg = load_config(configs / name)
        assert cfg.answer.style == "spiral" and cfg.answer.prompts is not None
        assert PromptSet.load(cfg.answer.prompts) == PromptSet.load(SPIRAL_SET)


def test_a_link_to_the_environment_is_refused_and_nothing_reaches_the_endpoint(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # The attack: kuhn_poker/rules.txt -> /proc/self/environ sent the whole environment, API
    # key included, in the system message to the endpoint and into moves.prompt.
    from tests.hostile import HostileServer
    from tests.test_hostile_endpoints import assert_nowhere, random_service

    secret = "sk-environment-secret-0123456789"
    monkeypatch.setenv("OPENAI_API_KEY", secret)
    prompts = tmp_path / "evil"
    (prompts / "kuhn_poker").mkdir(parents=True)
    environ = Path("/proc/self/environ")
    (prompts / "kuhn_poker" / "rules.txt").symlink_to(environ if environ.exists() else "/etc/hosts")
    db = tmp_path / "arena.sqlite"
    with HostileServer(random_service()) as server:
        args = ["eval", "--base-url", server.base_url, "--envs", "kuhn_poker-v0", "--db", str(db)]
        assert main([*args, "--num-games", "2", "--quiet", "--prompts", str(prompts)]) == 2
        assert server.requests == [] and server.authorizations == []  # not even /models
    out, err = capsys.readouterr()
    (line,) = err.strip().splitlines()
    assert line.startswith("strategic-arena: error: prompt set") and "Traceback" not in err
    assert "kuhn_poker/rules.txt is a symbolic link" in line
    assert not db.exists()
    assert_nowhere(secret, out + err, tmp_path / "evil" / "kuhn_poker")


@pytest.mark.parametrize("kind", ["file link", "folder link", "fifo", "too large"])
def test_a_set_reads_only_regular_files_of_its_own_folder(tmp_path: Path, kind: str) -> None:

    prompts = tmp_path / "set"
    prompts.mkdir()
    outside = tmp_path / "outside"
    (outside / "kuhn_poker").mkdir(parents=True)
    (outside / "kuhn_poker" / "rules.txt").write_text("rules from elsewhere")
    if kind == "file link":
        (prompts / "kuhn_poker").mkdir()
        (prompts / "kuhn_poker" / "rules.txt").symlink_to(outside / "kuhn_poker" / "rules.txt")
        expected = "kuhn_poker/rules.txt is a symbolic link"
    elif kind == "folder link":  # it used to be skipped silently: an empty set, a new name
        (prompts / "kuhn_poker").symlink_to(outside / "kuhn_poker")
        expected = "kuhn_poker is a symbolic link"
    elif kind == "fifo":  # reading it would wait for ever
        (prompts / "kuhn_poker").mkdir()
        os.mkfifo(prompts / "kuhn_poker" / "rules.txt")
        expected = "kuhn_poker/rules.txt is a FIFO (named pipe), not a regular file"
    else:
        (prompts / "kuhn_poker").mkdir()
        (prompts / "kuhn_poker" / "rules.txt").write_text("x" * (256 * 1024 + 1))
        expected = "kuhn_poker/rules.txt is larger than the 256 KiB a prompt may be"
    with pytest.raises(ValueError, match="prompt set") as error:
        PromptSet.load(prompts)
    assert expected in str(error.value)


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() == 0, reason="root reads any folder")
def test_a_game_folder_that_cannot_be_read_is_an_error_not_an_empty_set(tmp_path: Path) -> None:
    prompts = tmp_path / "set"
    (prompts / "kuhn_poker").mkdir(parents=True)
    (prompts / "kuhn_poker" / "rules.txt").write_text("my rules")
    (prompts / "kuhn_poker").chmod(0)
    try:
        with pytest.raises(ValueError, match=r"cannot read kuhn_poker/ \(Permission denied\)"):
            PromptSet.load(prompts)
    finally:
        (prompts / "kuhn_poker").chmod(0o755)
