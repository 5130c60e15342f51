"""The core install (``pip install strategic-arena``, no extras): the CLI starts, and each
command that needs an extra names it in one line.

Each command runs in a real virtualenv that holds only the core's dependency closure
(``tests/core_only.py``: built from this interpreter's installed files, no network). Before,
``strategic-arena --help`` was a traceback there (``No module named 'pydantic'``: the CLI
imported the trainer's serving module at start).
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

pytest.importorskip("packaging")

from tests.core_only import core_venv


@pytest.fixture(scope="module")
def python(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return core_venv(tmp_path_factory.mktemp("core") / "venv")


def core_cli(python: Path, *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(python), "-m", "strategic_arena.cli", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=600,
        check=False,
    )


def test_the_venv_holds_the_core_and_nothing_else(python: Path, tmp_path: Path) -> None:
    probe = "import importlib.util as u; print(*(u.find_spec(m) is not None for m in {}))"
    core = ["numpy", "pyspiel", "gymnasium", "pettingzoo", "strategic_arena", "opponents"]
    extras = ["torch", "pydantic", "openai", "httpx", "numba", "trueskill", "textarena"]
    for modules, expected in ((core, "True"), (extras, "False")):
        done = subprocess.run(
            [str(python), "-c", probe.format(modules)],
            capture_output=True,
            text=True,
            cwd=tmp_path,
            check=True,
        )
        assert done.stdout.split() == [expected] * len(modules), (modules, done.stdout)


@pytest.mark.parametrize(
    "args",
    [["--help"], ["eval", "--help"], ["train", "--help"], ["serve-model", "--help"], ["envs"]],
)
def test_the_cli_starts_with_the_core_alone(python: Path, args: list[str], tmp_path: Path) -> None:
    done = core_cli(python, *args, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize(
    ("args", "extra"),
    [
        (["train", "--print-config"], "train"),
        (["eval", "--num-games", "1", "--no-report", "--db", "r.sqlite"], "arena"),
    ],
)
def test_a_command_that_needs_an_extra_names_it_in_one_line(
    python: Path, args: list[str], extra: str, tmp_path: Path
) -> None:
    done = core_cli(python, *args, cwd=tmp_path)
    assert done.returncode == 2, (done.stdout, done.stderr)
    errors = [line for line in done.stderr.splitlines() if "error:" in line]
    assert len(errors) == 1 and "Traceback" not in done.stderr, done.stderr
    assert f"pip install 'strategic-arena[{extra}]'" in errors[0], errors[0]
