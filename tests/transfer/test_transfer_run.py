"""The transfer evaluation end to end: a served solver over real HTTP, known metric values,
hostile replies, kill -9 and resume, the CLI."""

from __future__ import annotations

import io
import json
import math
import os
import sqlite3
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from strategic_arena.arena.store import ResultsStore
from strategic_arena.backends import OpenAIBackend
from strategic_arena.cli import main
from strategic_arena.problems import write_gsm8k_jsonl
from strategic_arena.transfer import (
    BENCHMARKS,
    BenchmarkRun,
    Protocol,
    cells,
    evaluate,
    pass_at_k,
    render_table,
    report_data,
)
from tests.servers import FaultServer
from tests.transfer.oracle import ProblemOracle

pytest.importorskip("httpx", reason="the arena's backend needs httpx (the [arena] extra)")

MATH_ROWS = [
    {
        "problem": "Compute $\\frac{1}{2}+\\frac{1}{4}$.",
        "answer": "\\frac{3}{4}",
        "unique_id": "m1",
    },
    {"problem": "What is $\\sqrt{49}$?", "answer": "7", "unique_id": "m2"},
    {"problem": "Solve $2x=10$ for $x$.", "answer": "5", "unique_id": "m3"},
    {"problem": "Expand $(x+1)^2$.", "answer": "x^2+2x+1", "unique_id": "m4"},
    {"problem": "Write the interval $1<x\\le 2$.", "answer": "(1,2]", "unique_id": "m5"},
]
CHOICE_ROWS = [
    {
        "question": f"Which option is number {i}?",
        "subject": "college_physics",
        "choices": ["one", "two", "three", "four"],
        "answer": i % 4,
    }
    for i in range(10)
]


def write_data(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    write_gsm8k_jsonl(folder / "arithmetic.jsonl", 10, seed=5)
    for name, rows in (("math500.jsonl", MATH_ROWS), ("mmlu_stem.jsonl", CHOICE_ROWS)):
        (folder / name).write_text("".join(json.dumps(row) + "\n" for row in rows))
    return folder


def runs(folder: Path, samples: int, metrics: tuple[str, ...]) -> list[BenchmarkRun]:
    protocol = Protocol("spiral_qwen3", samples=samples, temperature=0.6, metrics=metrics)
    return [
        BenchmarkRun(BENCHMARKS[name], protocol, data_dir=str(folder))
        for name in ("arithmetic", "math500", "mmlu_stem")
    ]


def known_right(counts: dict[str, int]) -> object:
    """Right on sample j of a problem iff j < its count (every problem listed)."""
    return lambda problem_id, sample: sample < counts[problem_id]


def test_metrics_equal_known_values_over_http(tmp_path: Path) -> None:
    folder = write_data(tmp_path / "data")
    planned = runs(folder, 4, ("pass@1", "avg@4", "pass@2", "pass@4"))
    # problem i of each file has i mod 5 right answers among its 4 samples (0, 1, 2, 3, 4)
    counts = {p.id: i % 5 for run in planned for i, p in enumerate(run.problems())}
    oracle = ProblemOracle(planned, known_right(counts))  # type: ignore[arg-type]
    server = FaultServer(service=oracle)  # type: ignore[arg-type]
    try:
        backend = OpenAIBackend("oracle", server.base_url, api_key_env=None, backoff_base_s=0)
        with ResultsStore(tmp_path / "t.sqlite") as store:
            stream = io.StringIO()
            results = evaluate(
                store, "before", planned, backend.with_sampling, model="oracle", stream=stream
            )
            found = cells(store)
    finally:
        server.close()
    assert [r.complete for r in results] == [True] * 3
    finals = stream.getvalue().splitlines()[-1:]
    assert "before mmlu_stem [####################] 100% 40/40 answers" in finals[0]
    assert "answers/s | ETA 0s" in finals[0]
    assert sorted(oracle.asked) == sorted({(pid, s) for pid in counts for s in range(4)})
    # c = 0..4 of n = 4: pass@1 = avg@4 = 1/2; pass@2 = (0 + 1/2 + 5/6 + 1 + 1) / 5 = 2/3;
    # pass@4 = 4/5 (every problem with a right answer). math500 has exactly one of each c.
    expected = {"pass@1": 1 / 2, "avg@4": 1 / 2, "pass@2": 2 / 3, "pass@4": 4 / 5}
    for cell in found:
        assert {m.name: m.mean for m in cell.metrics} == pytest.approx(expected, abs=1e-12)
        assert cell.complete == cell.problems and cell.unreadable == 0.0
    assert [c.benchmark for c in found] == ["arithmetic", "math500", "mmlu_stem"]
    table = render_table(found)
    assert "50.0 ±" in table and "arithmetic pass@1" in table
    assert json.loads(json.dumps(report_data(found)))["labels"] == ["before"]


def test_pass_at_k_is_the_unbiased_estimator() -> None:
    assert pass_at_k(4, 2, 2) == pytest.approx(1 - math.comb(2, 2) / math.comb(4, 2))
    assert pass_at_k(32, 0, 8) == 0.0 and pass_at_k(32, 25, 8) == 1.0
    assert pass_at_k(10, 3, 1) == pytest.approx(0.3)
    with pytest.raises(ValueError):
        pass_at_k(2, 1, 3)


HOSTILE = [
    ["a", "list"],
    {"an": "object"},
    12345,
    "\\boxed{" * 20_000,
    "{" * 50_000 + "\\boxed{unclosed",
    "\ud800\x00 \\boxed{9^{9^{9^{9^{9}}}}}",
    "\\boxed{" + "x" * 100_000 + "}",
]


def test_hostile_and_malformed_replies_count_wrong_never_crash(tmp_path: Path) -> None:
    folder = write_data(tmp_path / "data")
    (planned,) = runs(folder, 1, ("pass@1",))[:1]
    ids = [p.id for p in planned.problems()]
    hostile = dict(zip(ids, HOSTILE, strict=False))  # the first 7 problems; the rest right
    oracle = ProblemOracle([planned], lambda pid, s: True, reply=lambda pid, s: hostile.get(pid))
    # the server's own faults on top: retried by the backend, never scored
    server = FaultServer(service=oracle, rate=0.3, seed=3, kinds=("500", "429", "drop"))  # type: ignore[arg-type]
    try:
        backend = OpenAIBackend(
            "oracle", server.base_url, api_key_env=None, backoff_base_s=0, max_attempts=20
        )
        with ResultsStore(tmp_path / "h.sqlite") as store:
            (result,) = evaluate(
                store, "m", [planned], backend.with_sampling, model="oracle", progress=False
            )
            (cell,) = cells(store)
    finally:
        server.close()
    assert result.complete and result.failed == 0
    assert cell.metrics[0].mean == pytest.approx(3 / 10)
    # the two last hostile replies close their box: read, and wrong; the others hold no answer
    assert cell.unreadable == pytest.approx(5 / 10)


def stored_answers(db: Path) -> int:
    try:
        con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
        try:
            return int(con.execute("SELECT COUNT(*) FROM transfer_answers").fetchone()[0])
        finally:
            con.close()
    except sqlite3.OperationalError:
        return 0


def transfer_run_command(benchmark: str, data_dir: Path, base_url: str, db: Path) -> list[str]:
    """``transfer run`` of one benchmark with SPIRAL's protocol, as a subprocess's arguments."""
    return [
        sys.executable,
        "-m",
        "strategic_arena.cli",
        "transfer",
        "run",
        "--paper",
        "spiral",
        "--benchmarks",
        benchmark,
        "--data-dir",
        str(data_dir),
        "--base-url",
        base_url,
        "--db",
        str(db),
    ]


def kill_9_then_rerun(
    args: list[str], db: Path, gate: threading.Semaphore, permits: int, stored: int
) -> subprocess.CompletedProcess[str]:
    """Run ``args`` with ``permits`` replies allowed, SIGKILL it once ``stored`` answers are
    stored (the next requests held by the server), check that many are, and rerun it to the end.
    """
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    gate.release(permits)
    process = subprocess.Popen(args, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    while stored_answers(db) < stored and process.poll() is None:
        time.sleep(0.05)
    process.kill()  # SIGKILL mid-run
    process.wait()
    assert stored_answers(db) == stored
    gate.release(10_000)
    return subprocess.run(args, env=env, capture_output=True, text=True, timeout=600)


def test_kill_9_mid_run_resumes_to_the_same_result(tmp_path: Path) -> None:
    folder = write_data(tmp_path / "data")
    planned = runs(folder, 4, ("pass@1",))[:1]
    counts = {p.id: i % 5 for i, p in enumerate(planned[0].problems())}
    gate = threading.Semaphore(0)
    oracle = ProblemOracle(planned, known_right(counts), gate=gate)  # type: ignore[arg-type]
    server = FaultServer(service=oracle)  # type: ignore[arg-type]
    db = tmp_path / "killed.sqlite"
    args = [
        *transfer_run_command("arithmetic", folder, server.base_url, db),
        "--samples",
        "4",
        "--api-key-env",
        "NO_KEY_HERE",
        "--label",
        "after",
        "--concurrency",
        "4",
        "--quiet",
    ]
    try:  # the preflight's request, then 13 answers; killed, then rerun
        finished = kill_9_then_rerun(args, db, gate, 1 + 13, 13)
    finally:
        gate.release(10_000)
        server.close()
    assert finished.returncode == 0, finished.stderr
    assert "after" in finished.stdout and "50.0" in finished.stdout
    with ResultsStore.for_reading(db) as store:
        (cell,) = cells(store)
        rows = store.rows("SELECT problem_id, sample FROM transfer_answers")
    assert len(rows) == len(set(rows)) == 40  # one answer per sample, none twice
    assert cell.metrics[0].mean == pytest.approx(1 / 2)


def test_missing_file_is_one_clear_line(tmp_path: Path) -> None:
    result = subprocess.run(
        transfer_run_command("aime24", tmp_path, "http://127.0.0.1:9/v1", tmp_path / "x.sqlite"),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1
    assert f"no file {tmp_path / 'aime24.jsonl'}" in lines[0]
    assert "transfer fetch aime24" in lines[0] and "HuggingFaceH4/aime_2024" in lines[0]


def test_fetch_offline_names_the_file_and_arithmetic_needs_no_network(tmp_path: Path) -> None:
    env = {**os.environ, "HF_DATASETS_OFFLINE": "1", "HF_HUB_OFFLINE": "1"}
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "strategic_arena.cli",
            "transfer",
            "fetch",
            "arithmetic",
            "gsm8k",
            "--data-dir",
            str(tmp_path),
        ],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )
    assert result.returncode == 1
    assert (tmp_path / "arithmetic.jsonl").is_file()
    assert "arithmetic.jsonl written (generated)" in result.stdout
    (line,) = result.stderr.strip().splitlines()
    assert line.startswith("gsm8k: cannot fetch openai/gsm8k (main), split test")
    assert str(tmp_path / "gsm8k.jsonl") in line


def test_the_lm_eval_route_reports_the_same_accuracy(tmp_path: Path) -> None:
    pytest.importorskip("lm_eval", reason="lm-eval comes with the lm-eval extra")
    from strategic_arena.transfer import TransferPlan
    from strategic_arena.transfer.lm_eval_route import run_lm_eval

    folder = write_data(tmp_path / "data")
    plan = TransferPlan(
        paper="marshal", benchmarks=("arithmetic", "math500", "mmlu_stem"), data_dir=str(folder)
    )
    planned = plan.runs()
    problems = [p for run in planned for p in run.problems()]
    right = {p.id for i, p in enumerate(problems) if i % 3 != 1}  # a known subset
    oracle = ProblemOracle(planned, lambda pid, s: pid in right)
    server = FaultServer(service=oracle)  # type: ignore[arg-type]
    try:
        backend = OpenAIBackend("oracle", server.base_url, api_key_env=None, backoff_base_s=0)
        with ResultsStore(tmp_path / "l.sqlite") as store:
            evaluate(store, "m", planned, backend.with_sampling, model="oracle", progress=False)
            ours = {c.benchmark: c.metrics[0].mean for c in cells(store)}
        theirs = run_lm_eval(
            plan, base_url=server.base_url, model="oracle", out_dir=tmp_path / "lm"
        )
    finally:
        server.close()
    expected = {
        run.benchmark.name: sum(p.id in right for p in run.problems()) / len(run.problems())
        for run in planned
    }
    assert ours == pytest.approx(expected) and theirs == pytest.approx(expected)
    assert min(expected.values()) > 0 and max(expected.values()) < 1
    # --out holds lm-eval's results objects (a call per system instruction: the maths prompt's
    # and the multiple-choice one's), with the same scores
    written = sorted((tmp_path / "lm").glob("results-*.json"))
    assert [path.name for path in written] == ["results-1.json", "results-2.json"]
    results = [json.loads(path.read_text())["results"] for path in written]
    assert {
        name.removeprefix("strategic_arena_"): entry["exact_match,box"]
        for part in results
        for name, entry in part.items()
    } == pytest.approx(expected)


@pytest.mark.parametrize("action", ["run", "report", "fetch", "lm-eval"])
def test_transfer_help_shows_no_empty_defaults(
    action: str, capsys: pytest.CaptureFixture[str]
) -> None:
    from strategic_arena.cli import main

    with pytest.raises(SystemExit) as stop:
        main(["transfer", action, "--help"])
    assert stop.value.code == 0
    text = capsys.readouterr().out
    assert "(default: None)" not in text and "(default: False)" not in text


def test_with_sampling_shares_one_client_and_sends_its_own_seed(tmp_path: Path) -> None:
    import asyncio

    from strategic_arena.asking import Sampling
    from strategic_arena.transfer.prompts import prompt

    folder = write_data(tmp_path / "data")
    planned = runs(folder, 1, ("pass@1",))[:1]
    problem = planned[0].problems()[0]
    messages = prompt("spiral_qwen3").messages(problem)
    server = FaultServer(service=ProblemOracle(planned, lambda pid, s: True))  # type: ignore[arg-type]
    try:
        base = OpenAIBackend("oracle", server.base_url, api_key_env=None)
        copies = [base.with_sampling(Sampling(seed=seed, max_tokens=5)) for seed in (7, 8)]

        async def ask() -> list[object]:
            for copy in copies:
                assert (await copy.complete(messages)).error is None
            clients = [await copy._client_for_this_loop() for copy in copies]
            await copies[0].aclose()  # a copy's close leaves the shared client open
            assert not clients[0].is_closed
            await base.aclose()
            return clients

        clients = asyncio.run(ask())
    finally:
        server.close()
    assert clients[0] is clients[1] and clients[0].is_closed  # type: ignore[attr-defined]
    assert [body.get("seed") for body in server.seen_bodies] == [7, 8]
    assert base.sampling.seed is None


def test_an_empty_reply_the_model_ended_is_its_wrong_answer_asked_once(tmp_path: Path) -> None:
    """A weak model that stops at once answers nothing: scored wrong, stored, never re-asked.

    Before, every empty reply was retried as the server's failure and never stored, so a rerun
    asked it again and the run never completed.
    """
    folder = write_data(tmp_path / "data")
    (run,) = runs(folder, 1, ("pass@1",))[:1]
    problems = run.problems()
    empty = {problem.id for i, problem in enumerate(problems) if i % 2 == 0}
    oracle = ProblemOracle(
        [run],
        lambda problem_id, sample: True,
        reply=lambda problem_id, sample: "" if problem_id in empty else None,
    )
    server = FaultServer(service=oracle)  # type: ignore[arg-type]
    db = tmp_path / "t.sqlite"
    args = transfer_run_command("arithmetic", folder, server.base_url, db)[3:]
    try:
        assert main([*args, "--quiet", "--samples", "1"]) == 0
        asked = list(oracle.asked)
        assert main([*args, "--quiet", "--samples", "1"]) == 0  # complete: nothing to ask
    finally:
        server.close()
    assert len(oracle.asked) == len(asked) + 1  # the rerun's preflight only
    answered = Counter(asked[1:])  # after the preflight's request
    assert set(answered.values()) == {1} and len(answered) == len(problems)
    with ResultsStore.for_reading(db) as store:
        (cell,) = cells(store)
        rows = store.rows("SELECT response, correct, finish_reason FROM transfer_answers")
    assert cell.metrics[0].mean == pytest.approx(1 - len(empty) / len(problems))
    assert sorted(r for r in rows if r[0] == "") == [("", 0, "stop")] * len(empty)


def test_a_first_attempt_that_stored_nothing_pins_no_settings(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Every request of the first attempt failed: the rerun may change its settings; once
    answers are stored, other settings are refused with options that exist."""
    folder = write_data(tmp_path / "data")
    (run,) = runs(folder, 1, ("pass@1",))[:1]
    oracle = ProblemOracle([run], lambda problem_id, sample: True)
    server = FaultServer(["ok"] + ["500"] * 10, service=oracle)  # type: ignore[arg-type]
    db = tmp_path / "t.sqlite"
    args = [*transfer_run_command("arithmetic", folder, server.base_url, db)[3:], "--quiet"]
    args += ["--samples", "1", "--max-attempts", "1"]
    try:
        assert main([*args, "--max-tokens", "8192"]) == 1  # the preflight passed, then 500s
        with ResultsStore.for_reading(db) as store:
            assert stored_answers(db) == 0 and len(store.runs()) == 1
        assert main([*args, "--max-tokens", "512"]) == 0  # not pinned: nothing was stored
        capsys.readouterr()
        assert main([*args, "--max-tokens", "256"]) == 2  # pinned now by ten answers
    finally:
        server.close()
    with ResultsStore.for_reading(db) as store:
        (stored,) = store.runs()
    assert stored.settings["max_tokens"] == 512 and stored_answers(db) == 10
    err = capsys.readouterr().err
    assert "max_tokens (512 stored, now 256)" in err
    assert "Give this one another name (another --label)" in err
    assert f"strategic-arena runs --delete transfer/oracle/arithmetic --db {db}" in err


def test_runs_delete_takes_a_transfer_runs_answers_with_it(tmp_path: Path) -> None:
    """The suggested delete works: the answers go too (they reference the run), and a new run
    of the same name starts empty (no answer of the old one is read as its)."""
    from strategic_arena.transfer.store import Answer, answered, open_run, save_answer

    db = tmp_path / "t.sqlite"
    with ResultsStore(db) as store:
        run = open_run(store, "transfer/base/arithmetic", 1, {"kind": "transfer"})
        save_answer(store, run.id, Answer("p0", 0, True, "1", "reply"))
    assert main(["runs", "--db", str(db), "--delete", "transfer/base/arithmetic"]) == 0
    with ResultsStore(db) as store:
        assert store.rows("SELECT count(*) FROM transfer_answers") == [(0,)]
        again = open_run(store, "transfer/base/arithmetic", 1, {"kind": "transfer", "x": 1})
        assert answered(store, again.id) == set()


def test_a_budget_beyond_the_served_context_is_one_line_before_any_request(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """vLLM lists each model's max_model_len: 8,192 answer tokens cannot fit 2,048."""
    folder = write_data(tmp_path / "data")
    (run,) = runs(folder, 1, ("pass@1",))[:1]

    class Served(ProblemOracle):
        def models(self) -> dict[str, Any]:
            listed = super().models()
            listed["data"][0]["max_model_len"] = 2048
            return listed

    oracle = Served([run], lambda problem_id, sample: True)
    server = FaultServer(service=oracle)  # type: ignore[arg-type]
    db = tmp_path / "t.sqlite"
    args = [*transfer_run_command("arithmetic", folder, server.base_url, db)[3:], "--quiet"]
    try:
        assert main([*args, "--max-tokens", "8192", "--samples", "1"]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert not oracle.asked and not db.exists()  # not even the preflight's request
        assert main([*args, "--max-tokens", "1024", "--samples", "1"]) == 0  # it fits
    finally:
        server.close()
    assert len(err) == 1, err
    assert (
        "--max-tokens 8192 (arithmetic) does not fit the context of 'oracle' at "
        f"{server.base_url}: 2048 tokens for the prompt and the answer together" in err[0]
    )


def test_transfer_run_settings_reads_the_trainers_plan_and_chat_arguments(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A checkpoint's settings hold its trainer's plan and chat-template arguments."""
    from strategic_arena.asking import Asking, Sampling, write_settings

    folder = write_data(tmp_path / "data")
    checkpoint = tmp_path / "step-000040"
    checkpoint.mkdir()
    plan = {"paper": "spiral", "benchmarks": ["arithmetic"], "data_dir": str(folder)}
    plan |= {"samples": 1, "limit": 3, "max_tokens": 64, "seed": 7, "shots": 0}
    thinking = Asking(chat_template_kwargs={"enable_thinking": False})
    write_settings(checkpoint, thinking, Sampling(), {"transfer": plan})
    (run,) = runs(folder, 1, ("pass@1",))[:1]
    oracle = ProblemOracle([run], lambda problem_id, sample: True)
    server = FaultServer(service=oracle)  # type: ignore[arg-type]
    db = tmp_path / "t.sqlite"
    common = ["--base-url", server.base_url, "--db", str(db), "--quiet"]
    try:
        assert main(["transfer", "run", "--settings", str(checkpoint), *common]) == 0
        bodies = [b for b in server.seen_bodies if "messages" in b]
        assert (
            main(["transfer", "run", "--settings", str(checkpoint), "--config", "x", *common]) == 2
        )
        bare = tmp_path / "bare"
        bare.mkdir()
        write_settings(bare, thinking, Sampling(), {})
        assert main(["transfer", "run", "--settings", str(bare), *common]) == 2
    finally:
        server.close()
    assert len(bodies) == 1 + 3  # the preflight, then 3 problems x 1 sample
    assert all(b["chat_template_kwargs"] == {"enable_thinking": False} for b in bodies)
    assert all(b["max_tokens"] == 64 for b in bodies[1:])
    with ResultsStore.for_reading(db) as store:
        (cell,) = cells(store)
    assert (cell.problems, cell.settings["samples"], cell.settings["max_tokens"]) == (3, 1, 64)
    err = capsys.readouterr().err
    assert "give --config or --settings, not both" in err
    assert "its trainer ran no transfer evaluation (no transfer plan in its settings)" in err
