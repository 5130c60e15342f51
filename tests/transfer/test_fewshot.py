"""Few-shot transfer evaluation (a base model's protocol): K exemplars, never the problem's own.

The prompts are checked message by message; the end-to-end test asks a served solver over real
HTTP with ``shots`` set, gets the hand-computed accuracy, sees K exemplars in every request
body, and finds the number of shots in the stored run's settings (a rerun with another number
is refused).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from strategic_arena.arena.store import ResultsStore
from strategic_arena.backends import OpenAIBackend
from strategic_arena.problems import Problem
from strategic_arena.transfer import BENCHMARKS, BenchmarkRun, Protocol, cells, evaluate
from strategic_arena.transfer.exemplars import GSM8K_COT
from strategic_arena.transfer.fewshot import check_shots, fewshot_messages
from strategic_arena.transfer.prompts import PROMPTS
from tests.servers import FaultServer
from tests.transfer.oracle import ProblemOracle

SPIRAL, QWEN = PROMPTS["spiral_qwen3"], PROMPTS["qwen25_math_cot"]
PROBLEM = Problem("p1", "What is 2 + 3?", "5")
#: The third exemplar (Leah's chocolates, answer 39), written with other case and spacing.
LEAH = Problem(
    "p2",
    "  LEAH had 32 chocolates and her sister had 42.  If they ate 35, how many pieces do "
    "they have left in total?",
    "39",
)


def roles(messages: list[dict[str, str]]) -> list[str]:
    return [m["role"] for m in messages]


def assistant_texts(messages: list[dict[str, str]]) -> list[str]:
    return [m["content"] for m in messages if m["role"] == "assistant"]


@pytest.mark.parametrize("shots", range(9))
def test_a_prompt_holds_exactly_k_exemplars_then_the_problem(shots: int) -> None:
    messages = fewshot_messages(SPIRAL, PROBLEM, shots)
    assert roles(messages) == ["user", "assistant"] * shots + ["user"]
    # The problem last, asked exactly as zero-shot; the exemplars the first K, in order.
    assert messages[-1:] == SPIRAL.messages(PROBLEM)
    for number, exemplar in enumerate(GSM8K_COT[:shots]):
        assert messages[2 * number]["content"].startswith(f"Question: {exemplar.question}\n")
        assert messages[2 * number + 1]["content"] == (
            f"{exemplar.reasoning} The answer is \\boxed{{{exemplar.answer}}}."
        )


def test_the_first_exemplar_as_the_source_writes_it() -> None:
    (first, answer, _) = fewshot_messages(SPIRAL, PROBLEM, 1)
    assert first["content"] == (
        "Question: There are 15 trees in the grove. Grove workers will plant trees in the grove "
        "today. After they are done, there will be 21 trees. How many trees did the grove "
        "workers plant today?\nPlease reason step by step, and put your final answer within "
        "\\boxed{}."
    )
    assert answer["content"] == (
        "There are 15 trees originally. Then there were 21 trees after some more were planted. "
        "So there must have been 21 - 15 = 6. The answer is \\boxed{6}."
    )


def test_a_system_instruction_is_sent_once_first() -> None:
    messages = fewshot_messages(QWEN, PROBLEM, 2)
    assert roles(messages) == ["system", "user", "assistant", "user", "assistant", "user"]
    assert messages[1]["content"] == GSM8K_COT[0].question
    assert messages[-1] == {"role": "user", "content": "What is 2 + 3?"}


def test_an_exemplar_equal_to_the_problem_is_replaced_by_the_next() -> None:
    messages = fewshot_messages(SPIRAL, LEAH, 3)
    # Exemplars 1, 2 and 4 (not 3, the problem itself): three, and never its answer 39.
    assert assistant_texts(messages) == [
        f"{e.reasoning} The answer is \\boxed{{{e.answer}}}."
        for e in GSM8K_COT[:2] + GSM8K_COT[3:4]
    ]
    assert not any("39" in text for text in assistant_texts(messages))
    assert sum("chocolates" in m["content"] for m in messages) == 1  # the question, once
    assert len(assistant_texts(fewshot_messages(SPIRAL, LEAH, 7))) == 7
    with pytest.raises(ValueError, match="problem p2: 8 shots asked, but only 7 exemplars"):
        check_shots([PROBLEM, LEAH], 8)
    check_shots([PROBLEM, LEAH], 7)


@pytest.mark.parametrize(
    "question",
    [
        "Leah had 32 chocolates and her sister had 42. If they ate 35, how many pieces do they "
        "have left in total",  # no question mark
        "Leah had 32 chocolates, and her sister had 42. If they ate 35, how many pieces do they "
        "have left in total ?",  # a comma added, a space before the mark
        "leah had 32 chocolates and her sister had 42 -- if they ate 35, how many pieces do they "
        "have left in total?!",
    ],
)
def test_an_exemplar_that_differs_only_in_punctuation_is_still_the_problem(question: str) -> None:
    near = Problem("p3", question, "39")
    texts = assistant_texts(fewshot_messages(SPIRAL, near, 7))
    assert len(texts) == 7 and not any("\\boxed{39}" in text for text in texts)
    with pytest.raises(ValueError, match="only 7 exemplars"):
        check_shots([near], 8)


def test_shots_outside_the_exemplars_are_refused() -> None:
    for shots in (-1, 9):
        with pytest.raises(ValueError, match="shots must be between 0 and 8"):
            Protocol("spiral_qwen3", shots=shots)
        with pytest.raises(ValueError, match="shots must be between 0 and 8"):
            check_shots([PROBLEM], shots)


def test_a_few_shot_run_over_http_scores_the_known_accuracy(tmp_path: Path) -> None:
    pytest.importorskip("httpx", reason="the arena's backend needs httpx (the [arena] extra)")
    from tests.transfer.test_transfer_run import known_right, write_data

    folder = write_data(tmp_path / "data")
    protocol = Protocol("spiral_qwen3", samples=2, temperature=0.6, shots=4)
    planned = [BenchmarkRun(BENCHMARKS["arithmetic"], protocol, data_dir=str(folder))]
    # problem i has i mod 3 right answers of its 2 samples: 0+1+2+0+1+2+0+1+2+0 = 9 of 20.
    counts = {p.id: i % 3 for i, p in enumerate(planned[0].problems())}
    oracle = ProblemOracle(planned, known_right(counts))  # type: ignore[arg-type]
    server = FaultServer(service=oracle)  # type: ignore[arg-type]
    try:
        backend = OpenAIBackend("oracle", server.base_url, api_key_env=None, backoff_base_s=0)
        with ResultsStore(tmp_path / "t.sqlite") as store:
            (result,) = evaluate(
                store, "base", planned, backend.with_sampling, model="oracle", progress=False
            )
            (cell,) = cells(store)
            (settings,) = store.rows("SELECT settings FROM runs")
            for other in (2, 0):  # a rerun with another number of shots is not mixed in
                changed = [
                    BenchmarkRun(
                        BENCHMARKS["arithmetic"],
                        Protocol("spiral_qwen3", samples=2, temperature=0.6, shots=other),
                        data_dir=str(folder),
                    )
                ]
                with pytest.raises(ValueError, match="shots"):
                    evaluate(store, "base", changed, backend.with_sampling, model="oracle")
    finally:
        server.close()
    assert result.complete and result.samples == 20
    assert cell.metrics[0].name == "pass@1" and cell.metrics[0].mean == pytest.approx(9 / 20)
    assert '"shots": 4' in settings[0]
    bodies = [b for b in server.seen_bodies if "messages" in b]
    assert len(bodies) == 20
    for body in bodies:
        assert roles(body["messages"]) == ["user", "assistant"] * 4 + ["user"]
        assert assistant_texts(body["messages"])[3].endswith("\\boxed{8}.")  # Jason's 8


def test_shots_with_a_multi_agent_system_are_refused_before_any_request(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A system asks its roles with its own prompts: --shots would be silently ignored."""
    pytest.importorskip("httpx", reason="the arena's backend needs httpx (the [arena] extra)")
    from strategic_arena.cli import main
    from tests.transfer.test_transfer_run import write_data

    folder = write_data(tmp_path / "data")
    server = FaultServer()
    try:
        status = main(
            [
                *("transfer", "run", "--paper", "spiral", "--benchmarks", "arithmetic"),
                *("--data-dir", str(folder), "--shots", "2", "--system", "mad"),
                *("--base-url", server.base_url, "--db", str(tmp_path / "t.sqlite")),
            ]
        )
    finally:
        server.close()
    assert status == 2
    assert (
        "--shots is the single agent's few-shot prompt; the mad system" in capsys.readouterr().err
    )
    assert sum(server.served.values()) == 0 and not (tmp_path / "t.sqlite").exists()
