"""The problems core: schema loaders, answer extraction and checks, the generated set."""

from __future__ import annotations

import csv
import json
import operator
import os
from collections.abc import Callable
from pathlib import Path

import pytest

from strategic_arena.problems import (
    SCHEMAS,
    Problem,
    ProblemFileError,
    answers_equal,
    check_answer,
    extract_boxed,
    extract_choice,
    fallback_equal,
    generate_arithmetic,
    load_problems,
    write_gsm8k_jsonl,
)
from strategic_arena.problems import answers as answers_module


def _jsonl(path: Path, rows: list[dict[str, object]]) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("so \\boxed{42}.", "42"),
        ("\\boxed{1} then \\boxed{\\frac{1}{2}}", "\\frac{1}{2}"),
        ("\\boxed{a{b{c}}d}", "a{b{c}}d"),
        ("\\fbox{7} is it", "7"),
        ("\\boxed{3} and \\fbox{4}", "4"),
        ("\\boxed 5$", "5"),
        ("\\boxed{2} \\boxed{unclosed", None),
        ("no box", None),
        ("\\boxed", None),
    ],
)
def test_extract_boxed(text: str, expected: str | None) -> None:
    assert extract_boxed(text) == expected


@pytest.mark.parametrize(
    ("text", "n", "expected"),
    [
        ("\\boxed{B}", 4, "B"),
        ("\\boxed{(C)}", 4, "C"),
        ("\\boxed{\\text{D}}", 4, "D"),
        ("\\boxed{E}", 4, None),
        ("The answer is (B). Actually the answer is (A)", 4, "A"),
        ("Answer: J", 10, "J"),
        ("I think so", 4, None),
        ("\\boxed{42}", 4, None),
    ],
)
def test_extract_choice(text: str, n: int, expected: str | None) -> None:
    assert extract_choice(text, n) == expected


@pytest.mark.parametrize(
    ("predicted", "gold", "equal"),
    [
        ("72", "72", True),
        ("72.0", "72", True),
        ("1,000", "1000", True),
        ("\\frac{3}{4}", "0.75", True),
        ("\\dfrac{3}{4}", "3/4", True),
        ("x = 5", "5", True),
        ("$5$.", "5", True),
        ("90^\\circ", "90", True),
        ("\\text{(B)}", "(b)", True),
        ("73", "72", False),
        ("", "72", False),
        ("1/0", "0", False),
    ],
)
def test_fallback_is_exact(predicted: str, gold: str, equal: bool) -> None:
    assert fallback_equal(predicted, gold) is equal


def test_math_verify_sees_equal_values_written_differently() -> None:
    pytest.importorskip("math_verify", reason="math-verify comes with the transfer extra")
    assert answers_equal("\\frac{\\sqrt{3}}{2}", "\\frac{\\sqrt3}{2}")
    assert answers_equal("(1, 2)", "(1,2)")
    assert answers_equal("\\sqrt{4}", "2")
    assert not answers_equal("\\sqrt{5}", "2")


def test_without_math_verify_the_fallback_decides(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(answers_module, "_VERIFIER", [None])
    assert answers_equal("0.5", "\\frac{1}{2}")
    assert not answers_equal("\\sqrt{4}", "2")  # the fallback is exact, not symbolic


@pytest.mark.parametrize(
    "hostile",
    [
        None,
        b"\\boxed{72}",
        72,
        "\x00" * 50,
        "{" * 100_000,
        "\\boxed{" * 50_000,
        "9^{9^{9^{9^{9}}}}" * 100,
        "\\frac{" * 300 + "1" + "}" * 300,
        "\ud800\\boxed{71",
        "x" * 5_000_000,
    ],
)
def test_hostile_answers_are_wrong_never_errors(hostile: object) -> None:
    gold = Problem("p", "q", "72")
    choice = Problem("c", "q", "A", ("yes", "no"))
    assert answers_equal(hostile, "72") is False
    assert check_answer(gold, hostile) is False
    assert check_answer(choice, hostile) is False
    assert extract_choice(hostile, 2) is None


def test_check_answer_reads_box_or_letter() -> None:
    assert check_answer(Problem("p", "q", "72"), "work... \\boxed{72}")
    assert not check_answer(Problem("p", "q", "72"), "72")  # no box, no answer
    assert check_answer(Problem("c", "q", "B", ("x", "y", "z")), "so \\boxed{B}")


def test_generated_arithmetic_is_deterministic_and_exact(tmp_path: Path) -> None:
    problems = generate_arithmetic(40, seed=3)
    assert problems == generate_arithmetic(40, seed=3)
    assert problems != generate_arithmetic(40, seed=4)
    assert len({problem.id for problem in problems}) == 40
    assert all(problem.answer.isdigit() for problem in problems)
    path = write_gsm8k_jsonl(tmp_path / "arith.jsonl", 40, seed=3)
    loaded = load_problems(path, "gsm8k")
    assert [(p.id, p.question, p.answer) for p in loaded] == [
        (p.id, p.question, p.answer) for p in problems
    ]
    # every worked solution's steps reach its answer: re-evaluate each "a op b = c"
    for line in path.read_text().splitlines():
        row = json.loads(line)
        for step in row["answer"].splitlines()[:-1]:
            expression, result = step.split(" = ")
            left = expression.split()[-3:]
            a, op, b = int(left[0]), left[1], int(left[2])
            value = {"+": operator.add, "-": operator.sub, "*": operator.mul}.get(op)
            expected = int(result.split()[0].rstrip("."))
            if value is None:  # a division: exact
                assert op == "/" and a == b * expected
            else:
                assert value(a, b) == expected


def test_each_schema_reads_its_published_layout(tmp_path: Path) -> None:
    gsm = _jsonl(tmp_path / "g.jsonl", [{"question": "1+1?", "answer": "1+1=2\n#### 2,000"}])
    assert load_problems(gsm, "gsm8k")[0].answer == "2000"
    math = _jsonl(
        tmp_path / "m.jsonl",
        [
            {"problem": "p1", "solution": "s", "answer": "\\frac12", "unique_id": "test/1.json"},
            {"problem": "p2", "solution": "so \\boxed{7}"},
        ],
    )
    loaded = load_problems(math, "math500")
    assert [(p.id, p.answer) for p in loaded] == [("test/1.json", "\\frac12"), ("math-2", "7")]
    aime = _jsonl(tmp_path / "a.jsonl", [{"id": 60, "problem": "p", "answer": 204}])
    assert load_problems(aime, "aime")[0] == Problem("60", "p", "204", (), "competition:a.jsonl")
    amc = _jsonl(tmp_path / "amc.jsonl", [{"question": "q", "answer": 27.0}])
    assert load_problems(amc, "amc")[0].answer == "27"
    olympiad = _jsonl(
        tmp_path / "o.jsonl", [{"id": 1, "question": "q", "final_answer": ["$3$", "$4$"]}]
    )
    assert load_problems(olympiad, "olympiadbench")[0].answer == "3, 4"
    pro = _jsonl(
        tmp_path / "p.jsonl",
        [{"question_id": 5, "question": "q", "options": list("abcdefghij"), "answer": "J"}],
    )
    assert load_problems(pro, "mmlu_pro")[0].choices[9] == "j"
    mmlu = _jsonl(
        tmp_path / "mm.jsonl",
        [
            {"question": "q1", "subject": "college_physics", "choices": ["a", "b"], "answer": 1},
            {"question": "q2", "subject": "world_religions", "choices": ["a", "b"], "answer": 0},
        ],
    )
    assert len(load_problems(mmlu, "mmlu")) == 2
    assert [p.answer for p in load_problems(mmlu, "mmlu_stem")] == ["B"]
    aqua = _jsonl(
        tmp_path / "aq.jsonl",
        [{"question": "q", "options": ["A)21", "B)22", "C)23"], "correct": "C"}],
    )
    assert load_problems(aqua, "aqua_rat")[0].choices == ("21", "22", "23")
    anli = _jsonl(
        tmp_path / "n.jsonl", [{"uid": "u", "premise": "p", "hypothesis": "h", "label": 2}]
    )
    problem = load_problems(anli, "anli")[0]
    assert problem.answer == "C" and problem.choices[2] == "contradiction"


def test_gpqa_reads_its_csv_and_orders_choices_by_a_seed(tmp_path: Path) -> None:
    path = tmp_path / "gpqa_diamond.csv"
    columns = ["Record ID", "Question", "Correct Answer"] + [
        f"Incorrect Answer {n}" for n in (1, 2, 3)
    ]
    with path.open("w", newline="") as handle:
        writer = csv.DictWriter(handle, columns)
        writer.writeheader()
        for index in range(12):
            values = [f"r{index}", f"q{index}", "right", "w1", "w2", "w3"]
            writer.writerow(dict(zip(columns, values, strict=True)))
    problems = load_problems(path, "gpqa_diamond")
    assert all(p.choices[ord(p.answer) - ord("A")] == "right" for p in problems)
    assert len({p.answer for p in problems}) > 1  # the right answer is not always first
    assert problems == load_problems(path, "gpqa")


def test_tinygsm_without_answers_is_refused_clearly(tmp_path: Path) -> None:
    path = _jsonl(tmp_path / "t.jsonl", [{"question": "q", "code": "def f(): return 1"}])
    with pytest.raises(ProblemFileError, match=r"t\.jsonl:1: TinyGSM rows carry a program"):
        load_problems(path, "tinygsm")
    path = _jsonl(tmp_path / "t2.jsonl", [{"question": "q", "code": "...", "answer": 4}])
    assert load_problems(path, "tinygsm")[0].answer == "4"


@pytest.mark.parametrize(
    ("content", "schema", "message"),
    [
        (
            '{"question": "q", "answer": "#### 1"}\n{bad\n',
            "gsm8k",
            r"x\.jsonl: line 2: not JSON",
        ),
        ('{"question": "q", "answer": "no marker"}\n', "gsm8k", r":1: field 'answer' has no '####"),
        ('{"answer": "#### 1"}\n', "gsm8k", r":1: missing field 'question'"),
        ("[1]\n", "gsm8k", r":1: a row must be a JSON object"),
        ('{"question": "q", "choices": ["a"], "answer": 3}\n', "mmlu", r"names no choice"),
        ('{"id": 1, "problem": "p", "answer": 1}\n' * 2, "aime", r":2: id '1' is used again"),
        ("\n", "gsm8k", r"no problems in the file"),
    ],
)
def test_bad_files_give_one_clear_line(
    tmp_path: Path, content: str, schema: str, message: str
) -> None:
    path = tmp_path / "x.jsonl"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(ProblemFileError, match=message) as raised:
        load_problems(path, schema)
    assert "\n" not in str(raised.value)


DEEP = "[" * 100_000 + "]" * 100_000


def _fifo(path: Path) -> Path:
    os.mkfifo(path)
    return path


def _link(path: Path) -> Path:
    target = _jsonl(path.with_name("target.jsonl"), [{"question": "q", "answer": "#### 1"}])
    path.symlink_to(target)
    return path


@pytest.mark.parametrize(
    ("name", "make", "schema", "message"),
    [
        (
            "deep.jsonl",
            lambda p: p.write_text('{"question": ' + DEEP + ', "answer": "#### 1"}\n'),
            "gsm8k",
            r"deep\.jsonl: line 1: JSON nested deeper than 64 levels",
        ),
        ("deep.json", lambda p: p.write_text(DEEP), "gsm8k", r"nested deeper than 64 levels"),
        (
            "deep.csv",
            lambda p: p.write_text(f'question,subject,choices,answer\nq,math,"{DEEP}",0\n'),
            "mmlu",
            r"deep\.csv:2: field 'choices' must be a list of choices",
        ),
        ("latin1.jsonl", lambda p: p.write_bytes(b'{"q": "\xe9"}\n'), "gsm8k", r"not UTF-8"),
        ("fifo.jsonl", _fifo, "gsm8k", r"fifo\.jsonl is a FIFO \(named pipe\), not a regular"),
        ("link.jsonl", _link, "gsm8k", r"link\.jsonl is a symbolic link"),
    ],
)
def test_the_door_refuses_a_hostile_file_in_one_line(
    tmp_path: Path, name: str, make: Callable[[Path], object], schema: str, message: str
) -> None:
    path = tmp_path / name
    make(path)
    with pytest.raises(ProblemFileError, match=message) as raised:
        load_problems(path, schema)
    assert "\n" not in str(raised.value)


def test_an_olympiad_answer_that_is_no_json_list_is_its_own_text(tmp_path: Path) -> None:
    path = _jsonl(tmp_path / "o.jsonl", [{"question": "q", "final_answer": "[[[1"}])
    assert load_problems(path, "olympiadbench")[0].answer == "[[[1"
    bomb = _jsonl(tmp_path / "b.jsonl", [{"question": "q", "final_answer": DEEP}])
    assert load_problems(bomb, "olympiadbench")[0].answer == DEEP


def test_missing_file_and_unknown_schema(tmp_path: Path) -> None:
    with pytest.raises(ProblemFileError, match="no such file"):
        load_problems(tmp_path / "none.jsonl", "gsm8k")
    with pytest.raises(ValueError, match="unknown problem schema 'nope'; known: ") as raised:
        load_problems(tmp_path / "none.jsonl", "nope")
    assert all(name in str(raised.value) for name in SCHEMAS)


def test_the_debate_and_the_transfer_prompts_write_choices_each_in_their_format() -> None:
    from strategic_arena.games.debate import question_text as debate_question
    from strategic_arena.transfer.prompts import question_text as transfer_question

    mc = Problem(id="q", question="Which?", answer="B", choices=("2 {x}", "4"))
    assert debate_question(mc) == "Which?\nA. 2 {x}\nB. 4"  # one a line; braces kept
    assert transfer_question(mc) == "Which?\nAnswer Choices: (A) 2 {x} (B) 4"  # Qwen2.5-Math's
    plain = Problem(id="p", question="2 + 2?", answer="4")
    assert debate_question(plain) == transfer_question(plain) == "2 + 2?"
