"""Run the CLI as on a core install: every module only an extra brings cannot be imported.

``python tests/core_only.py ARGS...`` runs ``strategic-arena ARGS`` with an import hook that
refuses each top-level module whose distributions are all outside the core's dependency
closure (``open_spiel``, ``pettingzoo``, ``gymnasium``, ``numpy`` and what they require,
markers evaluated, extras not followed). The closure is computed from the installed metadata,
so it follows the real dependency tree instead of a hand-kept list: what a fresh
``pip install strategic-arena`` has is what the CLI may import.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import importlib.metadata
import re
import sys
from collections.abc import Iterable, Sequence
from types import ModuleType

from packaging.requirements import Requirement

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


def blocked_modules() -> set[str]:
    """Top-level modules that no distribution of the core's closure provides."""
    core = closure(CORE) | {"strategic-arena", "pip", "setuptools", "packaging"}
    modules = importlib.metadata.packages_distributions()
    stdlib = sys.stdlib_module_names
    return {
        module
        for module, dists in modules.items()
        if not any(_normal(dist) in core for dist in dists) and module not in stdlib
    }


class _Refuse(importlib.abc.MetaPathFinder):
    def __init__(self, names: set[str]) -> None:
        self.names = names

    def find_spec(
        self, name: str, path: Sequence[str] | None = None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if name.split(".", 1)[0] in self.names:
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None


if __name__ == "__main__":
    # The repository root, not tests/, first on the path (tests/opponents/ is a test folder).
    sys.path[0] = str(__import__("pathlib").Path(__file__).resolve().parent.parent)
    refused = blocked_modules() - {"strategic_arena", "opponents", "tests"}
    sys.meta_path.insert(0, _Refuse(refused))
    from strategic_arena.cli import main

    raise SystemExit(main(sys.argv[1:]))
