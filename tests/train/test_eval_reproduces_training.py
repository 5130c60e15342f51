"""The arena reproduces the trainer's own evaluation of a checkpoint (real vLLM CPU server).

``configs/tiny_vllm.yaml`` trains two steps through a vLLM server and evaluates the policy;
then the commands the run printed under ``next:`` are run as a user would: the vLLM command
serves the last checkpoint (on a free port instead of 8000), and the ``eval`` command plays the
trainer's evaluation games over HTTP. Every prompt the arena sent at a point of a game the
trainer's evaluation also reached is byte-identical to the one the trainer stored, the server
formats the chat into the very token ids the trainer's encoder makes, and the invalid rate and
mean return per game and opponent agree within their 95% intervals. Before the settings file,
the same commands gave 100% invalid answers where the trainer saw a few percent: vLLM dropped
the answer token that ended the reply.
"""

from __future__ import annotations

import contextlib
import io
import math
import os
import shlex
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("torch", reason="the [train] extra is not installed")
pytest.importorskip("openai", reason="the [arena] extra (openai) is not installed")

import httpx

from strategic_arena.arena.metrics import Summary, summarize
from strategic_arena.arena.store import ResultsStore
from strategic_arena.asking import read_settings
from strategic_arena.cli import main
from strategic_arena.problems import write_gsm8k_jsonl
from strategic_arena.train.engines.vllm_server import free_port, vllm_unavailable_reason
from strategic_arena.train.loop.rollout import PromptEncoder
from strategic_arena.train.policy.models import load_saved_tokenizer
from strategic_arena.transfer import cells

pytestmark = [pytest.mark.vllm, pytest.mark.xdist_group("vllm")]

CONFIG = Path(__file__).resolve().parents[2] / "configs" / "tiny_vllm.yaml"
RUN = "repro"
#: Few steps and games: the check is that both evaluations are the same experiment.
SETTINGS = (
    "run.steps=2",
    "eval.every=2",
    "run.checkpoint_every=2",
    "games.episodes_per_game=8",
    "eval.games=40",
    f"run.name={RUN}",
    "run.tensorboard=false",
    "run.resume=never",
)


@pytest.fixture(scope="module")
def trained(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[str]]:
    """The run's output folder and the commands it printed under ``next:``."""
    reason = vllm_unavailable_reason()
    if reason is not None:
        pytest.skip(f"no vLLM server here: {reason}")
    output = tmp_path_factory.mktemp("repro") / "run"
    data = tmp_path_factory.mktemp("data")
    write_gsm8k_jsonl(data / "arithmetic.jsonl", 6, seed=1)
    transfer = (
        f"transfer={{paper: spiral, benchmarks: [arithmetic], data_dir: {data}, limit: 4, "
        "samples: 2, max_tokens: 8}"
    )
    overrides = [*SETTINGS, f"run.output_dir={output}", transfer]
    args = ["train", "--config", str(CONFIG), *[a for o in overrides for a in ("--set", o)]]
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        assert main(args) == 0
    lines = printed.getvalue().splitlines()
    commands = [line.strip() for line in lines[lines.index("next:") + 1 :]]
    return output, commands


@pytest.fixture(scope="module")
def served(
    trained: tuple[Path, list[str]], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[int, str]]:
    """The printed serving command, run on a free port: ``(port, eval command)``."""
    _, commands = trained
    serve = next(c for c in commands if "vllm.entrypoints.openai.api_server" in c)
    evaluate = next(c for c in commands if c.startswith("strategic-arena eval"))
    port = free_port("127.0.0.1")
    line = serve.split("   # ")[0].replace("--port 8000", f"--port {port}")
    log = tmp_path_factory.mktemp("serve") / "server.log"
    with log.open("wb") as sink:
        process = subprocess.Popen(
            ["bash", "-c", line], stdout=sink, stderr=subprocess.STDOUT, start_new_session=True
        )
    try:
        _wait_healthy(process, port, log)
        yield port, evaluate.replace("127.0.0.1:8000", f"127.0.0.1:{port}")
    finally:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(60)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()


def _wait_healthy(process: subprocess.Popen[bytes], port: int, log: Path) -> None:
    for _ in range(1200):  # a start-up guard, not a measurement: 10 minutes
        if process.poll() is not None:
            pytest.fail(f"the printed vLLM command exited:\n{log.read_text()[-3000:]}")
        try:
            if httpx.get(f"http://127.0.0.1:{port}/health", timeout=5).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.5)
    pytest.fail(f"the printed vLLM command never became healthy:\n{log.read_text()[-3000:]}")


def _interval(row: Summary) -> tuple[tuple[float, float], tuple[float, float]]:
    """95% intervals of the mean return (Student t) and the invalid rate (Wilson)."""
    half = row.ci95 or 0.0
    n, k, z = row.answers, row.invalid_answers, 1.96
    centre = (k + z * z / 2) / (n + z * z)
    spread = z * math.sqrt(k * (n - k) / n + z * z / 4) / (n + z * z)
    return (row.mean_return - half, row.mean_return + half), (centre - spread, centre + spread)


def _overlap(a: tuple[float, float], b: tuple[float, float]) -> bool:
    return a[0] <= b[1] and b[0] <= a[1]


def test_the_printed_eval_of_the_served_checkpoint_reproduces_the_trainers_evaluation(
    trained: tuple[Path, list[str]], served: tuple[int, str], tmp_path: Path
) -> None:
    output, _ = trained
    port, evaluate = served
    checkpoint = output / "checkpoints" / "step-000002"
    db = tmp_path / "arena.sqlite"
    args = [*shlex.split(evaluate)[1:], "--db", str(db), "--quiet", "--no-report"]
    assert main(args) == 0
    name = f"{RUN}@step-2"
    with ResultsStore(output / "eval.db") as store:
        ours = f"{RUN}/eval/step-000002"
        trainer_games = {g.game_key: g for g in store.games(store.run_id(ours))}
        trainer_moves = {key: store.moves(g.id) for key, g in trainer_games.items()}
        trainer_rows = {
            (r.env_id, r.opponent): r
            for r in summarize(store, [ours])
            if r.player == name and r.seat is None
        }
    with ResultsStore(db) as store:
        (run,) = store.runs()
        arena_games = {g.game_key: g for g in store.games(run.id)}
        arena_moves = {key: store.moves(g.id) for key, g in arena_games.items()}
        arena_rows = {
            (r.env_id, r.opponent): r
            for r in summarize(store, [run.name])
            if r.player == name and r.seat is None
        }
    # The same games: the trainer's deals (keys and seeds) against the same opponents.
    assert set(arena_games) == set(trainer_games)
    assert all(arena_games[k].seed == trainer_games[k].seed for k in trainer_games)
    # Byte-identical prompts wherever both games reached the same point.
    compared = 0
    for key, moves in arena_moves.items():
        for mine, theirs in zip(moves, trainer_moves[key], strict=False):
            if mine.prompt or theirs.prompt:
                assert mine.prompt == theirs.prompt, key
                compared += 1
            if mine.action != theirs.action:
                break  # the games part here: later prompts may differ
    assert compared >= len(arena_games)  # at least the first decision of every game
    # The server formats the chat as the trainer's encoder does, to the token.
    asking, _ = read_settings(checkpoint)
    encoder = PromptEncoder(load_saved_tokenizer(checkpoint / "policy", tiny=True), asking)
    prompt = next(m.prompt for moves in arena_moves.values() for m in moves if m.prompt)
    reply = httpx.post(
        f"http://127.0.0.1:{port}/tokenize",
        json={"model": f"{RUN}-step-2", "messages": [dict(m) for m in prompt]},
        timeout=60,
    ).json()
    assert reply["tokens"] == encoder.encode(prompt)
    # The same numbers, within their 95% intervals, per game and opponent.
    assert (
        set(arena_rows)
        == set(trainer_rows)
        == {("kuhn_poker-v0", "nash"), ("kuhn_poker-v0", "random")}
    )
    for key, row in trainer_rows.items():
        mine = arena_rows[key]
        assert mine.games == row.games == 40
        (returns, invalid), (their_returns, their_invalid) = _interval(mine), _interval(row)
        assert _overlap(returns, their_returns), (key, mine.mean_return, row.mean_return)
        assert _overlap(invalid, their_invalid), (key, mine.invalid_rate, row.invalid_rate)


def test_the_printed_transfer_run_of_the_served_checkpoint_reproduces_the_trainers(
    trained: tuple[Path, list[str]], served: tuple[int, str], tmp_path: Path
) -> None:
    """``transfer run --settings CHECKPOINT``: the trainer's plan, asked of the served model."""
    output, commands = trained
    port, _ = served
    command = next(c for c in commands if c.startswith("strategic-arena transfer run"))
    checkpoint = output / "checkpoints" / "step-000002"
    assert f"--settings {checkpoint / 'eval_settings.json'}" in command
    db = tmp_path / "transfer.sqlite"
    line = command.replace("127.0.0.1:8000", f"127.0.0.1:{port}")
    assert main([*shlex.split(line)[1:], "--db", str(db), "--quiet"]) == 0
    with ResultsStore.for_reading(output / "eval.db") as store:
        (theirs,) = [c for c in cells(store) if c.label == f"{RUN}/step-000002"]
    with ResultsStore.for_reading(db) as store:
        (mine,) = cells(store)
    assert mine.label == f"{RUN}/served-step-000002"
    # the same benchmark, problems, prompt, samples, sampling and budget: the same experiment
    same = ("benchmark", "problems", "problems_sha256", "prompt", "samples", "temperature")
    assert {k: mine.settings[k] for k in (*same, "top_p", "max_tokens")} == {
        k: theirs.settings[k] for k in (*same, "top_p", "max_tokens")
    }
    assert mine.problems == theirs.problems == 4 and mine.answers == theirs.answers == 8
    for a, b in zip(mine.metrics, theirs.metrics, strict=True):
        assert a.name == b.name
        half_a, half_b = a.half or 0.0, b.half or 0.0
        assert _overlap((a.mean - half_a, a.mean + half_a), (b.mean - half_b, b.mean + half_b))
