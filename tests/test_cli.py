"""The command as a whole: every subcommand's help, and the progress line's words."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from strategic_arena.arena.runner import Progress
from strategic_arena.cli import main

COMMANDS = [
    "envs",
    "play",
    "demo",
    "opponents",
    "serve",
    "solve",
    "eval",
    "report",
    "replay",
    "runs",
    "grade",
    "publish",
    "ladder",
    "train",
]


@pytest.mark.parametrize("command", COMMANDS)
def test_help_shows_no_empty_defaults(command: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as stop:
        main([command, "--help"])
    assert stop.value.code == 0
    text = capsys.readouterr().out
    assert "(default: None)" not in text and "(default: False)" not in text


def test_progress_words_match_the_final_line() -> None:
    # "with invalid answers" (the model's) and "incomplete (server failures)", as eval's final
    # line says them; never a bare "errors" beside "incomplete".
    bar = Progress(4, 0, label="run", stream=io.StringIO(), interval_s=0.0)
    bar.update(error=True)
    bar.update(incomplete=True)
    line = bar.line()
    assert "| 1 with invalid answers | 1 incomplete (server failures) |" in line
    assert "errors" not in line


@pytest.mark.parametrize("command", ["report", "runs", "grade", "replay 1", "publish"])
def test_a_file_that_is_not_a_database_gets_one_line(
    command: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("numba", reason="grade needs the [solvers] extra")
    not_a_db = tmp_path / "notes.txt"
    not_a_db.write_text("hello, not sqlite\n" * 100)
    assert main([*command.split(), "--db", str(not_a_db)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "it is not a results store" in err
    assert not_a_db.read_text() == "hello, not sqlite\n" * 100  # nothing lost


def test_replay_help_says_where_game_ids_are_listed(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["replay", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "strategic-arena runs --games RUN" in text and "report --json" not in text
