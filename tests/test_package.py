"""Packaging: lazy heavy imports, the missing-extra error, templates shipped in the wheel."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from strategic_arena._extras import MissingExtraError, require

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


def test_wheel_ships_templates_and_py_typed(tmp_path: Path) -> None:
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
            str(ROOT),
        ],
        check=True,
        capture_output=True,
    )
    wheel = next(tmp_path.glob("strategic_arena-*.whl"))
    names = set(zipfile.ZipFile(wheel).namelist())
    assert "strategic_arena/py.typed" in names and "opponents/py.typed" in names
    for template in (
        "system.txt",
        "user.txt",
        "styles/marshal.txt",
        "styles/boxed.txt",
        "styles/json.txt",
        "styles/tools.txt",
        "tic_tac_toe/rules.txt",
        "kuhn_poker/rules.txt",
        "leduc_poker/rules.txt",
        "hanabi/rules.txt",
        "connect_four/rules.txt",
    ):
        assert f"strategic_arena/prompts/{template}" in names, template
    for data in ("schema.json", "page.css", "page.js"):  # the leaderboard page and its schema
        assert f"strategic_arena/leaderboard/{data}" in names, data


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
