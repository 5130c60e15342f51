"""The import layers: one order, written once (pyproject's import-linter contract), no cycles.

pyproject's ``[tool.importlinter]`` is the one statement of the layer order; these tests keep
everything else honest about it: the contract's name says what its layers are, its core layer
(the one above the door) leaves no top-level module of ``strategic_arena`` out, every layer line
of the docs is the contract's, and no module of the project takes part in an import cycle (the
contracts see packages; a cycle between two modules of one package slips between them).
"""

from __future__ import annotations

import pkgutil
import re
import sys
from pathlib import Path
from typing import Any

import pytest

if sys.version_info >= (3, 11):
    import tomllib
else:  # import-linter's own dependency on Python 3.10
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = "strategic_arena"


def _layers_contract() -> dict[str, Any]:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    contracts = config["tool"]["importlinter"]["contracts"]
    (layers,) = [c for c in contracts if c["type"] == "layers" and "containers" not in c]
    return layers


def _trainer_contract() -> dict[str, Any]:
    """The second layers contract: the trainer's packages, inside ``strategic_arena.train``."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    contracts = config["tool"]["importlinter"]["contracts"]
    (layers,) = [c for c in contracts if c["type"] == "layers" and "containers" in c]
    return layers


def _layer_modules(layer: str) -> list[str]:
    return [name.strip() for name in re.split(r"[|:]", layer)]


def _short(module: str) -> str:
    return module.removeprefix(f"{PACKAGE}.")


def layer_line() -> str:
    """The contract's order as the docs write it: highest first, then "core", then the door."""
    layers = _layers_contract()["layers"]
    named = [" | ".join(_short(m) for m in _layer_modules(layer)) for layer in layers[:-2]]
    return " -> ".join([*named, "core", _short(layers[-1])])


def test_the_contract_name_states_its_layers() -> None:
    assert _layers_contract()["name"] == f"Layers: {layer_line()}"


def test_the_core_layer_is_every_other_top_level_module() -> None:
    layers = _layers_contract()["layers"]
    top_level = {
        f"{PACKAGE}.{module.name}" for module in pkgutil.iter_modules([str(ROOT / PACKAGE)])
    }
    upper = {module for layer in layers[:-2] for module in _layer_modules(layer)}
    core = set(_layer_modules(layers[-2]))
    assert layers[-1] == f"{PACKAGE}.door"  # the bottom: imports nothing else of the package
    upper.add(layers[-1])
    assert upper - top_level == {"opponents"}  # every upper layer exists
    assert not core & upper
    assert sorted(top_level - upper - core) == [], "add these modules to the core layer"
    assert sorted(core - top_level) == [], "the core layer names modules that do not exist"


def test_every_layer_line_of_the_docs_is_the_contracts() -> None:
    line = layer_line()
    texts = {
        path.relative_to(ROOT).as_posix(): path.read_text(encoding="utf-8").replace("`", "")
        for path in [ROOT / "README.md", ROOT / "pyproject.toml", *(ROOT / "docs").glob("*.md")]
    }
    assert line in texts["README.md"]  # the README quotes it (code spans aside)
    quotes = [
        (name, " ".join(text[start : start + 2 * len(line)].split())[: len(line)])
        for name, text in texts.items()
        for start in (match.start() for match in re.finditer(r"\bcli ->", text))
    ]
    assert [quote for quote in quotes if quote[1] != line] == []


def trainer_layer_line() -> str:
    """The trainer contract's order as the docs write it: its layers highest first."""
    return " -> ".join(" ".join(layer.split()) for layer in _trainer_contract()["layers"])


def test_the_trainer_contract_name_states_its_layers() -> None:
    assert _trainer_contract()["containers"] == [f"{PACKAGE}.train"]
    assert _trainer_contract()["name"] == f"Trainer layers: {trainer_layer_line()}"


def test_the_trainer_layers_leave_out_no_module() -> None:
    layered = {name for layer in _trainer_contract()["layers"] for name in _layer_modules(layer)}
    train = ROOT / PACKAGE / "train"
    present = {module.name for module in pkgutil.iter_modules([str(train)])}
    assert sorted(present - layered) == []  # the deprecated addresses are gone
    assert sorted(layered - present) == []


def test_the_training_docs_quote_the_trainer_layers_once() -> None:
    line = trainer_layer_line()
    texts = {
        path.relative_to(ROOT).as_posix(): " ".join(path.read_text(encoding="utf-8").split())
        for path in [ROOT / "README.md", *(ROOT / "docs").glob("*.md")]
    }
    quoted = {name: text.replace("`", "").count(line) for name, text in texts.items()}
    assert {name: count for name, count in quoted.items() if count} == {"docs/training.md": 1}
    starts = [
        (name, text.replace("`", "")[match.start() : match.start() + len(line)])
        for name, text in texts.items()
        for match in re.finditer(r"\bloop -> ", text.replace("`", ""))
    ]
    assert [start for start in starts if start[1] != line] == []


def _strongly_connected_components(edges: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's algorithm, iterative (the import graph is deep enough to matter)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[list[str]] = []
    for root in sorted(edges):
        if root in index:
            continue
        work = [(root, iter(sorted(edges[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, successors = work[-1]
            for successor in successors:
                if successor not in index:
                    index[successor] = low[successor] = len(index)
                    stack.append(successor)
                    on_stack.add(successor)
                    work.append((successor, iter(sorted(edges[successor]))))
                    break
                if successor in on_stack:
                    low[node] = min(low[node], index[successor])
            else:
                work.pop()
                if work:
                    parent = work[-1][0]
                    low[parent] = min(low[parent], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    components.append(sorted(component))
    return components


def test_strongly_connected_components_find_a_known_cycle() -> None:
    edges = {"a": {"b"}, "b": {"c"}, "c": {"a", "d"}, "d": set(), "e": {"d"}}
    assert sorted(_strongly_connected_components(edges)) == [["a", "b", "c"], ["d"], ["e"]]


def test_no_import_cycle_between_modules() -> None:
    """Every import counts (in functions and under TYPE_CHECKING too): no module reaches itself."""
    grimp = pytest.importorskip("grimp", reason="grimp comes with import-linter (the [dev] extra)")
    graph = grimp.build_graph(PACKAGE, "opponents", cache_dir=None)
    edges = {
        module: set(graph.find_modules_directly_imported_by(module)) for module in graph.modules
    }
    assert len(edges) > 100  # the whole project was read
    cycles = [
        component for component in _strongly_connected_components(edges) if len(component) > 1
    ]
    assert cycles == []
    assert [module for module, imported in edges.items() if module in imported] == []
