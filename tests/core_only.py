"""A virtualenv holding only the core install: ``pip install strategic-arena``, no extras.

:func:`core_venv` makes a real venv (``python -m venv --without-pip``) whose site-packages
holds exactly the core's dependency closure -- ``open_spiel``, ``pettingzoo``, ``gymnasium``,
``numpy`` and what they require, markers evaluated, extras not followed -- linked from this
interpreter's installed files (no network, no download), plus the checkout on its path. The
closure is computed from the installed metadata, so it follows the real dependency tree: what a
fresh core install has is exactly what the venv can import, and ``import torch`` or ``import
pydantic`` fails there as it would on a user's machine.
"""

from __future__ import annotations

import importlib.metadata
import re
import subprocess
import sys
from collections.abc import Iterable
from pathlib import Path

from packaging.requirements import Requirement

ROOT = Path(__file__).resolve().parent.parent
CORE = ("open_spiel", "pettingzoo", "gymnasium", "numpy")


def _normal(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def closure(roots: Iterable[str]) -> set[str]:
    """The normalized names of ``roots`` and every distribution they require (no extras)."""
    seen: set[str] = set()
    todo = [_normal(root) for root in roots]
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        try:
            requires = importlib.metadata.requires(name) or []
        except importlib.metadata.PackageNotFoundError:
            continue
        for text in requires:
            requirement = Requirement(text)
            if requirement.marker is None or requirement.marker.evaluate({"extra": ""}):
                todo.append(_normal(requirement.name))
    return seen


def _top_entries(dist: importlib.metadata.Distribution) -> set[str]:
    """The site-packages entries a distribution installed (packages, modules, its metadata)."""
    entries = {Path(str(item)).parts[0] for item in dist.files or []}
    return {entry for entry in entries if entry not in ("..", "__pycache__")}


def core_venv(where: Path) -> Path:
    """A venv at ``where`` with only the core closure and the checkout; its ``python``."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(where)], check=True)
    version = f"python{sys.version_info.major}.{sys.version_info.minor}"
    site = where / "lib" / version / "site-packages"
    for name in sorted(closure(CORE)):
        try:
            dist = importlib.metadata.distribution(name)
        except importlib.metadata.PackageNotFoundError:
            continue
        for entry in _top_entries(dist):
            source = Path(str(dist.locate_file(entry)))
            if source.exists() and not (site / entry).exists():
                (site / entry).symlink_to(source)
    (site / "strategic_arena_checkout.pth").write_text(f"{ROOT}\n", encoding="utf-8")
    return where / "bin" / "python"
