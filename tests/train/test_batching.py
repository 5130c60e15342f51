"""Token-balanced micro-batches: known splits, equal pass counts, token budgets."""

from __future__ import annotations

import pytest

from strategic_arena.train.policy.batching import (
    balance_by_tokens,
    micro_batches,
    plan_micro_batches,
)


def test_ranks_get_equal_tokens_not_equal_turns() -> None:
    sizes = [100, 10, 10, 10, 10, 10, 10, 10, 10, 10, 10]  # one long sequence, ten short
    groups = balance_by_tokens(sizes, 2)
    assert groups == [[0], [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]]
    assert [sum(sizes[i] for i in g) for g in groups] == [100, 100]
    # round-robin by turn count would give rank 0 150 tokens and rank 1 50
    assert sum(sizes[0::2]) == 150
    assert balance_by_tokens([7, 5, 4, 3, 1], 2) == [[0, 3], [1, 2, 4]]  # loads 10 and 10
    assert balance_by_tokens([], 3) == [[], [], []]
    with pytest.raises(ValueError):
        balance_by_tokens([1], 0)


def test_micro_batches_bucket_by_length_under_a_token_budget() -> None:
    sizes = [50, 3, 40, 4, 5, 45]
    assert micro_batches(range(6), sizes, max_rows=2) == [[1, 3], [4, 2], [5, 0]]
    # 64 padded tokens: three short rows fit (3 x 5), the long ones go alone (40 + 45 > 64)
    assert micro_batches(range(6), sizes, max_rows=8, max_tokens=64) == [
        [1, 3, 4],
        [2],
        [5],
        [0],
    ]
    assert micro_batches([0], [500], max_rows=4, max_tokens=64) == [[0]]  # too long: alone


def test_every_rank_gets_the_same_number_of_passes() -> None:
    plan = plan_micro_batches([100, 10, 10, 10, 10], 2, max_rows=2)
    assert plan == [[[0], []], [[1, 2], [3, 4]]]
    assert plan_micro_batches([], 2, max_rows=4) == [[[]], [[]]]
    every = sorted(
        i for rank in plan_micro_batches([9, 8, 7, 1, 1, 1], 3, max_rows=1) for b in rank for i in b
    )
    assert every == list(range(6))
