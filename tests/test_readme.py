"""The README's Python examples run as written, and run clean: no error is logged and nothing
is written to stderr (a traceback printed by a finalizer does not fail a script, but a reader
sees it)."""

from __future__ import annotations

import gc
import logging
import re
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[1] / "README.md"
TEXT = README.read_text(encoding="utf-8")
BLOCKS = re.findall(r"^```python\n(.*?)^```", TEXT, re.DOTALL | re.MULTILINE)


@pytest.mark.parametrize("index", range(len(BLOCKS)))
def test_readme_python_block_runs(
    index: int, capfd: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING)
    exec(compile(BLOCKS[index], f"README.md block {index}", "exec"), {})
    gc.collect()  # finalizers (an unclosed client's) run now, inside the test
    errors = [record for record in caplog.records if record.levelno >= logging.ERROR]
    assert not errors, [record.getMessage() for record in errors]
    assert capfd.readouterr().err == ""


def test_every_python_block_is_collected() -> None:
    """Each fenced Python block starts a line (an indented one would not run as written)."""
    assert len(BLOCKS) == TEXT.count("```python") >= 2
