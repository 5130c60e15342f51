"""docs/integrations.md: every Python example runs as written (with its framework installed)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

DOC = Path(__file__).resolve().parents[2] / "docs" / "integrations.md"
BLOCKS = re.findall(r"```python\n(.*?)```", DOC.read_text(encoding="utf-8"), re.DOTALL)
#: The framework each example needs, by what it imports.
NEEDS = {
    "import verifiers": "verifiers",
    "from trl": "trl",
    "integrations.openenv": "openenv.core",
    "from sb3_contrib": "sb3_contrib",
}


@pytest.mark.parametrize("index", range(len(BLOCKS)))
def test_doc_python_block_runs(index: int) -> None:
    block = BLOCKS[index]
    for marker, module in NEEDS.items():
        if marker in block:
            pytest.importorskip(module, reason=f"{module} (its extra) is not installed")
    exec(compile(block, f"docs/integrations.md block {index}", "exec"), {})


def test_every_framework_has_an_example() -> None:
    assert all(any(marker in block for block in BLOCKS) for marker in NEEDS)
