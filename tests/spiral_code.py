"""SPIRAL's own code for the cross-checks: one file of the installed ``spiral-rl``, loaded alone.

The version is the package's own metadata: the ``spiral`` extra of pyproject.toml pins
``spiral-rl``, and ``make`` installs exactly that requirement (``--no-deps``: spiral-rl 0.2.0
pins ``textarena==0.6.4``, which cannot sit beside the ``textarena`` extra's 0.7.4, and the
cross-checks load only pure-Python files; ``import spiral`` would import its OAT and Tinker
stacks). A file is loaded by path, never through ``import spiral``.

Where ``spiral-rl`` is missing the cross-checks skip, saying why -- unless the environment
variable ``STRATEGIC_ARENA_REQUIRED_EXTRAS`` names ``spiral`` (``make test`` sets it), where a
missing or different ``spiral-rl`` fails: CI runs them, none skipped.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import os
from pathlib import Path
from types import ModuleType

import pytest
from packaging.requirements import Requirement

#: The environment variable naming the extras whose tests must run (comma-separated).
REQUIRED_EXTRAS = "STRATEGIC_ARENA_REQUIRED_EXTRAS"


def extra_requirements(extra: str) -> list[Requirement]:
    """The requirements strategic-arena's installed metadata lists for ``extra`` (none where the
    package is not installed: a source tree on ``PYTHONPATH``)."""
    try:
        lines = importlib.metadata.requires("strategic-arena") or []
    except importlib.metadata.PackageNotFoundError:
        return []
    found = []
    for line in lines:
        requirement = Requirement(line)
        if requirement.marker is not None and requirement.marker.evaluate({"extra": extra}):
            found.append(requirement)
    return found


def _missing(reason: str) -> None:
    """Skip with ``reason``, or fail where the ``spiral`` extra is required."""
    required = {name.strip() for name in os.environ.get(REQUIRED_EXTRAS, "").split(",")}
    if "spiral" in required:
        pytest.fail(f"{REQUIRED_EXTRAS} requires the spiral extra: {reason}")
    pytest.skip(reason)


def spiral_file(relative: str) -> ModuleType:
    """``spiral/<relative>`` of the installed spiral-rl, executed as a module of its own.

    Skips (or fails: module docstring) where spiral-rl is not installed, is not the version
    the ``spiral`` extra pins, or lacks the file.
    """
    pins = [r for r in extra_requirements("spiral") if r.name == "spiral-rl"]
    pin = f"spiral-rl{pins[0].specifier}" if pins else "spiral-rl"
    try:
        distribution = importlib.metadata.distribution("spiral-rl")
    except importlib.metadata.PackageNotFoundError:
        _missing(f"spiral-rl is not installed (pip install --no-deps '{pin}')")
        raise AssertionError("unreachable") from None
    if pins and distribution.version not in pins[0].specifier:
        _missing(f"spiral-rl {distribution.version} is installed, the spiral extra pins {pin}")
    path = Path(str(distribution.locate_file(f"spiral/{relative}")))
    spec = importlib.util.spec_from_file_location(f"_spiral_{path.stem}", path)
    if spec is None or spec.loader is None or not path.is_file():
        _missing(f"spiral-rl {distribution.version} has no spiral/{relative}")
        raise AssertionError("unreachable")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
