"""The core install (``pip install strategic-arena``, no extras): the CLI starts, and each
command that needs an extra names it in one line.

Each command runs in a subprocess through ``tests/core_only.py``, which refuses every module
outside the core's dependency closure, computed from the installed metadata (so the check
follows the real dependency tree). Before, ``strategic-arena --help`` was a traceback
(``No module named 'pydantic'``: the CLI imported the trainer's serving module at start).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
pytest.importorskip("packaging")


def core_cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    script = ROOT / "tests" / "core_only.py"
    return subprocess.run(
        [sys.executable, str(script), *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=600,
        check=False,
    )


def test_the_core_closure_leaves_out_every_extra() -> None:
    """What the hook refuses: the extras' modules, never the core's (nor OpenSpiel's YAML)."""
    sys.path.insert(0, str(ROOT / "tests"))
    try:
        from core_only import blocked_modules
    finally:
        sys.path.remove(str(ROOT / "tests"))
    blocked = blocked_modules()
    installed = {m for m in ("openai", "httpx", "pydantic", "numba", "torch") if _installed(m)}
    assert installed <= blocked
    assert not {"numpy", "pyspiel", "gymnasium", "pettingzoo", "yaml"} & blocked


def _installed(module: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(module) is not None


@pytest.mark.parametrize(
    "args",
    [["--help"], ["eval", "--help"], ["train", "--help"], ["serve-model", "--help"], ["envs"]],
)
def test_the_cli_starts_with_the_core_alone(args: list[str], tmp_path: Path) -> None:
    done = core_cli(*args, cwd=tmp_path)
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
    args: list[str], extra: str, tmp_path: Path
) -> None:
    done = core_cli(*args, cwd=tmp_path)
    assert done.returncode == 2, (done.stdout, done.stderr)
    errors = [line for line in done.stderr.splitlines() if "error:" in line]
    assert len(errors) == 1 and "Traceback" not in done.stderr, done.stderr
    assert f"pip install 'strategic-arena[{extra}]'" in errors[0]
