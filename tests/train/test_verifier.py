"""MAPoRL's learned verifier on a tiny local model: its loss falls, its accuracy is reported."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("torch", reason="the [train] extra (torch) is not installed")
pytest.importorskip("transformers", reason="the [train] extra (transformers) is not installed")

from strategic_arena.problems import Problem, generate_arithmetic
from strategic_arena.rl.verifiers import make_verifier
from strategic_arena.train.policy.tiny import build_tiny
from strategic_arena.train.policy.verifier import (
    VerifierSample,
    VerifierTraining,
    accuracy,
    balance,
    encode,
    label,
    split,
    train_verifier,
)

ENV = "debate-v0(count=24)"


def careful(answer: int) -> str:
    return f"I work it out step by step. The answer is \\boxed{{{answer}}}."


def hasty(answer: int) -> str:
    return f"I think {answer}. The answer is \\boxed{{{answer + 1}}}."


def synthetic(problems: list[Problem]) -> list[VerifierSample]:
    """Per problem: two careful (right) and two hasty (wrong) solutions, and one without a box."""
    samples = []
    for problem in problems:
        gold = int(problem.answer)
        solutions = [careful(gold), careful(gold) + " ", hasty(gold), hasty(gold) + " ", "no box"]
        samples += label(problem, solutions)
    return samples


def test_label_balance_and_split_follow_the_papers_recipe() -> None:
    problems = generate_arithmetic(6, seed=3)
    samples = synthetic(problems)
    assert len(samples) == 4 * 6  # the answers without a box are dropped
    assert [s.right for s in samples[:4]] == [True, True, False, False]
    one_each = balance(samples, per_class=1, seed=0)
    assert len(one_each) == 2 * 6
    assert sum(s.right for s in one_each) == 6
    lopsided = [s for s in samples if s.right or s.problem.id != problems[0].id]
    assert {s.problem.id for s in balance(lopsided, 2, 0)} == {p.id for p in problems[1:]}
    train, held_out = split(samples, held_out=0.5, seed=0)
    assert {s.problem.id for s in train}.isdisjoint({s.problem.id for s in held_out})
    assert len({s.problem.id for s in held_out}) == 3


def test_the_loss_falls_and_the_held_out_accuracy_is_reported(tmp_path: Path) -> None:
    model, tokenizer = build_tiny([ENV], hidden_size=32, layers=1, heads=2, seed=0)
    problems = generate_arithmetic(24, seed=0)  # the questions the tokenizer saw
    samples = balance(synthetic(problems), per_class=2, seed=0)
    train, held_out = split(samples, held_out=0.25, seed=0)
    # the loss reads the latter half of the solution's tokens, never the question's
    item = encode(tokenizer, train[0].problem, train[0].solution, max_tokens=512)
    assert item.solution_start < item.latter_half.start < len(item.ids)
    training = VerifierTraining(epochs=3, batch_size=8, learning_rate=3e-3, seed=0)
    verifier, losses = train_verifier(model, tokenizer, train, training)
    first, last = sum(losses[:3]) / 3, sum(losses[-3:]) / 3
    assert last < 0.5 * first, losses
    measured = accuracy(verifier, held_out)
    assert measured == 1.0
    # saved and loaded through the registry, it scores exactly as before
    verifier.save(tmp_path / "verifier")
    loaded = make_verifier("learned", path=str(tmp_path / "verifier"))
    items = [(s.problem, s.solution) for s in held_out]
    assert loaded.score_all(items) == pytest.approx(verifier.score_all(items), abs=1e-5)
    assert all(0.0 <= score <= 1.0 for score in loaded.score_all(items))


def test_a_folder_without_a_verifier_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="holds no saved verifier"):
        make_verifier("learned", path=str(tmp_path))


def test_the_cli_trains_a_verifier_from_the_tiny_policys_own_solutions(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import json

    from strategic_arena.cli import main

    out = tmp_path / "verifier"
    args = ["verifier", "train", "--model", "tiny", "--count", "12", "--paths", "4"]
    assert main([*args, "--max-new-tokens", "10", "--out", str(out)]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["problems"] == 12 and report["solutions"] == 48
    assert report["balanced"] == report["train"] + report["held_out"]
    assert report["balanced"] % 2 == 0 and report["held_out"] > 0
    assert 0.0 <= report["accuracy"] <= 1.0 and report["path"] == str(out)
    assert make_verifier("learned", path=str(out)).name == "learned"
