"""MARSHAL's multi-agent transfer test end to end: MAD and AutoGen against a scripted served
player over real HTTP, known accuracies, a peer endpoint, the report, kill -9 and resume."""

from __future__ import annotations

import os
import subprocess
import threading
from pathlib import Path

import pytest

from strategic_arena.arena.store import ResultsStore
from strategic_arena.backends import OpenAIBackend
from strategic_arena.leaderboard._transfer import transfer_data
from strategic_arena.transfer import (
    BENCHMARKS,
    BenchmarkRun,
    Protocol,
    cells,
    evaluate,
    render_table,
    report_data,
)
from strategic_arena.transfer.runner import Answerer
from strategic_arena.transfer.systems import SystemPlan, answerer
from strategic_arena.transfer.systems.mad import verdict
from tests.servers import FaultServer
from tests.transfer.systems_player import ScriptedPlayer
from tests.transfer.test_transfer_run import kill_9_then_rerun, transfer_run_command, write_data

pytest.importorskip("httpx", reason="the arena's backend needs httpx (the [arena] extra)")

#: Each system's accuracy on the 10 arithmetic problems by the player's rules (worked out by
#: hand in tests/transfer/systems_player.py's terms): single i < 3 -> 3/10; MAD: the negative's
#: first answer (0, 6), its second (1, 5, 9), the judge's affirmative (3, 7 wrong) -> 5/10;
#: AutoGen: first replies (0, 6, 4), later ones (2, 5, 8) -> 6/10.
EXPECTED = {"single": 3 / 10, "mad": 5 / 10, "autogen": 6 / 10}

#: Requests each system makes for the first four problems (i = 0..3), by the same rules:
#: MAD 3 + 6 + 3 + 11 (three rounds, then the judge twice); AutoGen 1 + 2 + 5 + 1.
FIRST_FOUR = {"mad": 23, "autogen": 9}


def arithmetic_run(folder: Path, name: str = "arithmetic") -> BenchmarkRun:
    """MARSHAL's protocol (greedy, one sample) on a benchmark of 10 problems (default: the
    generated arithmetic ones; ``mmlu_stem``: ten four-way choices)."""
    return BenchmarkRun(BENCHMARKS[name], Protocol("qwen25_math_cot"), data_dir=str(folder))


def backend(server: FaultServer, model: str = "player") -> OpenAIBackend:
    return OpenAIBackend(model, server.base_url, api_key_env=None, backoff_base_s=0)


def test_mad_and_autogen_give_the_known_accuracy_beside_the_single_agent(tmp_path: Path) -> None:
    folder = write_data(tmp_path / "data")
    planned = [arithmetic_run(folder), arithmetic_run(folder, "mmlu_stem")]
    run = planned[0]
    player = ScriptedPlayer([run.problems() for run in planned])
    server = FaultServer(service=player)  # type: ignore[arg-type]
    try:
        model = backend(server)
        with ResultsStore(tmp_path / "s.sqlite") as store:
            for name in ("single", "mad", "autogen"):
                system = answerer(SystemPlan(name), model.with_sampling, None)
                results = evaluate(
                    store,
                    "base",
                    planned,
                    model.with_sampling,
                    model="player",
                    progress=False,
                    answerer=system,
                )
                assert all(result.complete and result.failed == 0 for result in results)
            found = cells(store)
            published = transfer_data(store, None, lambda value: value)
            names = [r.name for r in store.runs()]
            transcripts = dict(
                store.rows(
                    "SELECT a.problem_id, a.response FROM transfer_answers a JOIN runs r "
                    "ON r.id = a.run_id WHERE r.name = ?",
                    ("transfer/base/arithmetic@autogen",),
                )
            )
    finally:
        server.close()
    assert names == [
        f"transfer/base/{bench}{system}"
        for system in ("", "@mad", "@autogen")
        for bench in ("arithmetic", "mmlu_stem")
    ]
    # the same known accuracy on the open answers and on the multiple-choice letters
    for bench in ("arithmetic", "mmlu_stem"):
        means = {c.system: c.metrics[0].mean for c in found if c.benchmark == bench}
        assert means == pytest.approx(EXPECTED, abs=1e-12)
    assert all(c.complete == c.problems == 10 and c.unreadable == 0.0 for c in found)
    # every role asked, and the debate's tokens summed over its turns (7 per reply)
    roles = {role for role, _ in player.asked}
    assert roles == {
        "single",
        "affirmative",
        "negative",
        "moderator",
        "judge",
        "assistant",
        "user_proxy",
    }
    for mad in (c for c in found if c.system == "mad"):
        assert mad.mean_completion_tokens == pytest.approx(7 * (5 * 3 + 3 * 6 + 2 * 11) / 10)
    # problem 2 went the whole way: three assistant replies, two of the user proxy's
    second = transcripts[run.problems()[2].id]
    assert second.count("[assistant]") == 3 and second.count("[user_proxy]") == 2
    table = render_table(found)
    lines = table.splitlines()
    assert lines[1].split()[:4] == ["system", "model", "avg", "arithmetic"]
    assert lines[2].split()[:3] == ["single", "base", "30.00"]
    assert lines[3].split()[:3] == ["mad", "base", "50.00"]
    assert lines[4].split()[:3] == ["autogen", "base", "60.00"]
    assert report_data(found)["systems"] == ["single", "mad", "autogen"]
    assert published is not None  # the leaderboard's rows: a system's beside the label's
    assert published["labels"] == ["base", "base (mad)", "base (autogen)"]


def test_a_peer_endpoint_plays_the_roles_given_it(tmp_path: Path) -> None:
    run = arithmetic_run(write_data(tmp_path / "data"))
    evaluated, peer = ScriptedPlayer([run.problems()]), ScriptedPlayer([run.problems()], "peer")
    servers = [FaultServer(service=evaluated), FaultServer(service=peer)]  # type: ignore[arg-type]
    roles = ("negative", "moderator", "judge")
    try:
        mine, theirs = backend(servers[0]).with_sampling, backend(servers[1], "peer").with_sampling

        def mad(rounds: int) -> Answerer:
            plan = SystemPlan("mad", rounds, roles, servers[1].base_url, "peer")
            return answerer(plan, mine, theirs)

        with ResultsStore(tmp_path / "p.sqlite") as store:
            evaluate(store, "base", [run], mine, model="player", progress=False, answerer=mad(3))
            (cell,) = cells(store)
            with pytest.raises(ValueError, match="other settings"):  # other rounds, same run
                evaluate(store, "base", [run], mine, model="player", answerer=mad(2))
    finally:
        for server in servers:
            server.close()
    assert {role for role, _ in evaluated.asked} == {"affirmative"}
    assert {role for role, _ in peer.asked} == {"negative", "moderator", "judge"}
    assert cell.metrics[0].mean == pytest.approx(EXPECTED["mad"])
    assert cell.settings["system"] == {
        "name": "mad",
        "rounds": 3,
        "peer_roles": ["judge", "moderator", "negative"],
        "peer_model": "peer",
    }


def test_verdict_reads_the_moderators_json_and_nothing_else() -> None:
    assert verdict('```json\n{"debate_answer": "12"}\n```') == "12"
    assert verdict('Sure. {"Reason": "x {y}", "debate_answer": 7}') == "7"
    assert verdict('{"debate_answer": ""}') is None
    assert verdict('{"debate_answer": true}') is None
    assert verdict('["debate_answer"]') is None
    assert verdict("{" * 100 + "}" * 100) is None
    assert verdict("no json") is None


@pytest.mark.parametrize("system", ["mad", "autogen"])
def test_kill_9_mid_run_resumes_to_the_known_accuracy(tmp_path: Path, system: str) -> None:
    folder = write_data(tmp_path / "data")
    run = arithmetic_run(folder)
    gate = threading.Semaphore(0)
    player = ScriptedPlayer([run.problems()], gate=gate)
    server = FaultServer(service=player)  # type: ignore[arg-type]
    db = tmp_path / "killed.sqlite"
    args = transfer_run_command("arithmetic", folder, server.base_url, db)
    args[args.index("spiral")] = "marshal"
    args += ["--system", system, "--api-key-env", "NO_KEY_HERE", "--concurrency", "1", "--quiet"]
    try:  # the preflight's request, then four problems: killed with the fifth's first request
        finished = kill_9_then_rerun(args, db, gate, 1 + FIRST_FOUR[system], 4)  # held; rerun
    finally:
        gate.release(10_000)
        server.close()
    assert finished.returncode == 0, finished.stderr
    rows_shown = [line.split()[:3] for line in finished.stdout.splitlines()]
    assert [system, "player", f"{100 * EXPECTED[system]:.2f}"] in rows_shown
    with ResultsStore.for_reading(db) as store:
        (cell,) = cells(store)
        rows = store.rows("SELECT problem_id, sample FROM transfer_answers")
    assert len(rows) == len(set(rows)) == 10
    assert cell.system == system and cell.metrics[0].mean == pytest.approx(EXPECTED[system])


def test_the_command_line_checks_the_peer_and_asks_it_for_its_roles(tmp_path: Path) -> None:
    folder = write_data(tmp_path / "data")
    run = arithmetic_run(folder)
    evaluated, peer = ScriptedPlayer([run.problems()]), ScriptedPlayer([run.problems()], "peer")
    servers = [FaultServer(service=evaluated), FaultServer(service=peer)]  # type: ignore[arg-type]
    db = tmp_path / "peer.sqlite"
    args = transfer_run_command("arithmetic", folder, servers[0].base_url, db)
    args[args.index("spiral")] = "marshal"
    args += ["--system", "autogen", "--peer-roles", "user_proxy"]
    args += ["--peer-base-url", servers[1].base_url, "--api-key-env", "EVAL_KEY", "--quiet"]
    args += ["--peer-api-key-env", "PEER_KEY"]
    keys = {"EVAL_KEY": "sk-evaluated-0123456789", "PEER_KEY": "sk-peer-0123456789"}
    try:
        finished = subprocess.run(
            args, capture_output=True, text=True, timeout=600, env={**os.environ, **keys}
        )
    finally:
        for server in servers:
            server.close()
    assert finished.returncode == 0, finished.stderr
    # each key to its own origin only: the evaluated endpoint's key never reaches the peer
    assert servers[0].seen_keys and set(servers[0].seen_keys) == {f"Bearer {keys['EVAL_KEY']}"}
    assert servers[1].seen_keys and set(servers[1].seen_keys) == {f"Bearer {keys['PEER_KEY']}"}
    # each endpoint's preflight request (the single agent's prompt), then only its own roles
    assert {role for role, _ in evaluated.asked} == {"single", "assistant"}
    assert {role for role, _ in peer.asked} == {"single", "user_proxy"}
    with ResultsStore.for_reading(db) as store:
        (cell,) = cells(store)
    assert cell.run == "transfer/player/arithmetic@autogen"
    assert cell.settings["system"]["peer_model"] == "peer"  # the only model the peer lists
    assert cell.metrics[0].mean == pytest.approx(EXPECTED["autogen"])


def test_a_label_that_reads_like_another_rows_title_never_covers_its_result(
    tmp_path: Path,
) -> None:
    """An endpoint names its model: ``base (mad)`` must not land on the row of ``base`` in MAD."""
    from strategic_arena.leaderboard._transfer import transfer_markdown
    from strategic_arena.leaderboard.markdown import escape
    from strategic_arena.transfer.store import Answer, open_run, run_name, save_answer

    def settings(system: str) -> dict[str, object]:
        base = {"kind": "transfer", "benchmark": "arithmetic", "problems": 2, "prompt": "p"}
        return base if system == "single" else {**base, "system": {"name": system}}

    with ResultsStore(tmp_path / "s.sqlite") as store:
        for label, system, right in (("base", "mad", True), ("base (mad)", "single", False)):
            run = open_run(store, run_name(label, "arithmetic", system), 0, settings(system))
            for problem in ("p0", "p1"):
                save_answer(store, run.id, Answer(problem, 0, right, "1", "reply"))
        published = transfer_data(store, None, lambda value: value)
    assert published is not None
    assert published["labels"] == ["base (mad) [mad]", "base (mad) [single]"]
    means = {c["label"]: c["metrics"][0]["mean"] for c in published["cells"]}
    assert means == {"base (mad) [mad]": 1.0, "base (mad) [single]": 0.0}
    table = "\n".join(transfer_markdown(published, escape))
    assert "| base (mad) \\[mad\\] | 100.0" in table and "| base (mad) \\[single\\] | 0.0" in table
