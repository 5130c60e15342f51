"""The CLI starts light: ``--help`` builds no command's parser, ``eval --help`` only eval's.

Structural checks (which modules a help imports, in a fresh interpreter), not timings: the
time is measured in benchmarks/README.md ("CLI start"). And the table of commands that
``--help`` reads agrees with what each command's module registers.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

import pytest

from strategic_arena.cli import _parser
from strategic_arena.cli.commands import COMMANDS

ROOT = Path(__file__).resolve().parents[1]

#: What no help may import: the trainer's and the solvers' dependencies, and the config's.
HEAVY = ("torch", "transformers", "numba", "pydantic", "vllm", "trueskill", "datasets")


def imported_by(*argv: str) -> set[str]:
    """The top-level packages loaded by ``strategic-arena ARGV`` (a help: exits 0)."""
    code = (
        "import json, sys\n"
        "from strategic_arena.cli import main\n"
        "try:\n"
        f"    main({list(argv)!r})\n"
        "except SystemExit as stop:\n"
        "    assert stop.code == 0, stop.code\n"
        "print(json.dumps(sorted({name.split('.')[0] for name in sys.modules})))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT
    )
    return set(json.loads(result.stdout.splitlines()[-1]))


def test_help_imports_no_game_engine_solver_or_trainer() -> None:
    loaded = imported_by("--help")
    assert loaded.isdisjoint(HEAVY)
    # Not even the games: the top-level help is the table of commands.
    assert loaded.isdisjoint({"numpy", "pyspiel", "open_spiel", "opponents", "pettingzoo"})


@pytest.mark.parametrize("command", ["eval", "report", "replay", "serve-model", "transfer"])
def test_a_commands_help_imports_no_trainer_or_numpy(command: str) -> None:
    """(``train --help`` lists the config's fields: it needs pydantic, the [train] extra.)"""
    loaded = imported_by(command, "--help")
    assert loaded.isdisjoint(HEAVY)
    if command in ("eval", "report", "replay"):  # their handlers are imported when they run
        assert loaded.isdisjoint({"numpy", "opponents", "pettingzoo", "gymnasium"})


def registered(parser: argparse.ArgumentParser) -> tuple[list[tuple[str, str | None]], dict]:
    """The commands ``parser`` lists (name and help line) and its parser of each."""
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return [(a.dest, a.help) for a in sub._choices_actions], dict(sub.choices)


@pytest.mark.parametrize("name", [command.name for command in COMMANDS])
def test_each_module_registers_its_commands_as_the_table_lists_them(name: str) -> None:
    """Built with its arguments, a command leaves the list ``--help`` shows unchanged."""
    listed, parsers = registered(_parser(name))
    assert listed == [(command.name, command.help) for command in COMMANDS]
    assert built(parsers[name]), f"{name}'s parser was not built"
    _, bare = registered(_parser(None))
    assert not built(bare[name])  # not named: by name and help line only


def built(parser: argparse.ArgumentParser) -> bool:
    """Whether a command's parser was built: it has a handler, arguments or actions."""
    return parser.get_default("handler") is not None or len(parser._actions) > 1


def test_an_unknown_command_is_refused_as_before(capsys: pytest.CaptureFixture[str]) -> None:
    from strategic_arena.cli import main

    with pytest.raises(SystemExit) as stop:
        main(["bogus"])
    assert stop.value.code == 2
    assert "invalid choice: 'bogus'" in capsys.readouterr().err
