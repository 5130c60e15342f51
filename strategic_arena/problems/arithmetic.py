"""A generated set of arithmetic word problems with exact integer answers, in GSM8K's style.

:func:`generate_arithmetic` draws ``n`` problems from a seed (the same seed, the same problems,
on any machine: every draw comes from one ``numpy.random.Generator``). Each is a short story of
two or three operations whose answer is a non-negative integer, with a worked solution ending
``#### N`` as GSM8K writes it (:func:`arithmetic_rows`); :func:`generate_arithmetic` reads those
rows with the ``gsm8k`` schema, and :func:`write_gsm8k_jsonl` writes them as a GSM8K-schema file
that :func:`~strategic_arena.problems.load_problems` reads back to the same problems. The set
needs no download: tests and smoke runs of the transfer evaluation use it, and it is no measure
of a model's reasoning (real benchmarks are).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import numpy as np

from strategic_arena.problems.records import Problem
from strategic_arena.problems.schemas import GSM8K

__all__ = ["arithmetic_rows", "generate_arithmetic", "write_gsm8k_jsonl"]

_NAMES = ("Ada", "Ben", "Chloe", "Dev", "Emma", "Farid", "Grace", "Hugo", "Iris", "Jon")
_ITEMS = ("apples", "marbles", "stickers", "books", "pencils", "shells", "cards", "coins")

#: A story: the draw -> (question, solution steps, answer).
Story = Callable[[np.random.Generator], tuple[str, list[str], int]]


def _pick(rng: np.random.Generator, options: tuple[str, ...]) -> str:
    return options[int(rng.integers(len(options)))]


def _buy_and_give(rng: np.random.Generator) -> tuple[str, list[str], int]:
    name, item = _pick(rng, _NAMES), _pick(rng, _ITEMS)
    start, bags, per_bag = (int(x) for x in rng.integers([5, 2, 3], [40, 9, 12]))
    given = int(rng.integers(1, start + bags * per_bag))
    bought = bags * per_bag
    answer = start + bought - given
    question = (
        f"{name} has {start} {item}. {name} buys {bags} bags with {per_bag} {item} in each bag, "
        f"then gives {given} {item} to a friend. How many {item} does {name} have now?"
    )
    steps = [
        f"{name} buys {bags} * {per_bag} = {bought} {item}.",
        f"{name} then has {start} + {bought} = {start + bought} {item}.",
        f"After giving {given} away, {start + bought} - {given} = {answer}.",
    ]
    return question, steps, answer


def _shared_equally(rng: np.random.Generator) -> tuple[str, list[str], int]:
    name, item = _pick(rng, _NAMES), _pick(rng, _ITEMS)
    friends, each = (int(x) for x in rng.integers([2, 2], [9, 15]))
    kept = int(rng.integers(friends))  # fewer than the friends: each got as many as possible
    total = friends * each + kept
    question = (
        f"{name} shares {total} {item} among {friends} friends so that each friend gets the "
        f"same number and as many as possible; {kept} {item} are left over. How many {item} "
        "does each friend get?"
    )
    steps = [
        f"{total} - {kept} = {total - kept} {item} are shared.",
        f"Each friend gets {total - kept} / {friends} = {each}.",
    ]
    return question, steps, each


#: Stories of one product less a part of it: (question, first step, second step), each a
#: format string over a, b (the factors), product, c (the part taken away) and the answer.
_PRODUCT_LESS = (
    (
        "{name} saves {a} dollars every week for {b} weeks and then spends {c} dollars on a "
        "game. How many dollars does {name} have left?",
        "{name} saves {a} * {b} = {product} dollars.",
        "After the game, {product} - {c} = {answer} dollars are left.",
    ),
    (
        "A hall has {b} rows of {a} seats. {c} seats are taken. How many seats are free?",
        "The hall has {b} * {a} = {product} seats.",
        "{product} - {c} = {answer} seats are free.",
    ),
)


def _product_less(rng: np.random.Generator) -> tuple[str, list[str], int]:
    question, first, second = _PRODUCT_LESS[int(rng.integers(len(_PRODUCT_LESS)))]
    a, b, c = (int(x) for x in rng.integers([3, 2, 1], [30, 20, 50]))
    c = min(c, a * b - 1)
    answer = a * b - c
    values = {
        "name": _pick(rng, _NAMES),
        "a": a,
        "b": b,
        "product": a * b,
        "c": c,
        "answer": answer,
    }
    steps = [first.format(**values), second.format(**values)]
    return question.format(**values), steps, answer


#: The stories, drawn uniformly.
STORIES: tuple[Story, ...] = (_buy_and_give, _shared_equally, _product_less)


def arithmetic_rows(n: int, seed: int) -> list[dict[str, str]]:
    """``n`` problems drawn from ``seed`` as GSM8K rows: ``id``, ``question``, ``answer``."""
    if n < 0:
        raise ValueError(f"n must be >= 0, not {n}")
    rng = np.random.default_rng(seed)
    rows = []
    for index in range(n):
        story = STORIES[int(rng.integers(len(STORIES)))]
        question, steps, answer = story(rng)
        solution = "\n".join([*steps, f"#### {answer}"])
        rows.append({"id": f"arithmetic-{seed}-{index}", "question": question, "answer": solution})
    return rows


def generate_arithmetic(n: int, seed: int) -> list[Problem]:
    """``n`` arithmetic word problems drawn from ``seed`` (ids ``arithmetic-<seed>-<i>``)."""
    reader = GSM8K()
    source = f"arithmetic:seed={seed}"
    return [reader.problem(row, row["id"], source) for row in arithmetic_rows(n, seed)]


def write_gsm8k_jsonl(path: str | Path, n: int, seed: int) -> Path:
    """Write :func:`arithmetic_rows` as a GSM8K-schema JSON Lines file at ``path`` (returned)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    text = "".join(json.dumps(row) + "\n" for row in arithmetic_rows(n, seed))
    path.write_text(text, encoding="utf-8")
    return path
