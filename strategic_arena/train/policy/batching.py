"""Token-balanced micro-batches: ranks get equal tokens, micro-batches hold similar lengths.

A step's turns differ in length by an order of magnitude (a one-token poker answer beside a
4096-token reasoning trace). Split by count, one rank can get most of the tokens while the
others wait for it at every FSDP collective; batched by arrival order, a short sequence pays
for the padding of a long one. So, for a list of sequence lengths:

1. :func:`balance_by_tokens` splits the indices over ``parts`` ranks by the greedy
   longest-processing-time rule (longest first, each to the rank with the fewest tokens so far;
   ties to the rank with fewer sequences, then the lower rank), which is within 4/3 of the best
   possible largest load;
2. :func:`micro_batches` sorts a rank's indices by length and cuts them into consecutive
   micro-batches of at most ``max_rows`` sequences and ``max_tokens`` padded tokens (rows x the
   longest; a sequence longer than the budget gets a micro-batch of its own): length bucketing;
3. :func:`plan_micro_batches` does both and pads every rank's list with empty micro-batches to
   the same count, since FSDP needs the same number of forward/backward passes on every rank
   (an empty micro-batch is a pass whose loss weight is zero).

Every rank computes the same plan from the same lengths, so no communication is needed. The
loss weights of the tokens are fixed for the whole minibatch beforehand
(:func:`strategic_arena.train.policy.learner.token_weights`), so any plan gives the same gradient.
This module needs only the standard library.
"""

from __future__ import annotations

from collections.abc import Sequence


def balance_by_tokens(sizes: Sequence[int], parts: int) -> list[list[int]]:
    """Indices of ``sizes`` in ``parts`` groups of near-equal total size (see the module).

    Each group lists its indices in the order they were assigned (longest first).
    """
    if parts < 1:
        raise ValueError(f"parts must be >= 1, got {parts}")
    groups: list[list[int]] = [[] for _ in range(parts)]
    loads = [0] * parts
    for index in sorted(range(len(sizes)), key=lambda i: (-sizes[i], i)):
        target = min(range(parts), key=lambda r: (loads[r], len(groups[r]), r))
        groups[target].append(index)
        loads[target] += sizes[index]
    return groups


def micro_batches(
    indices: Sequence[int], sizes: Sequence[int], *, max_rows: int, max_tokens: int | None = None
) -> list[list[int]]:
    """``indices`` sorted by size and cut into micro-batches (see the module docstring)."""
    if max_rows < 1:
        raise ValueError(f"max_rows must be >= 1, got {max_rows}")
    batches: list[list[int]] = []
    current: list[int] = []
    longest = 0
    for index in sorted(indices, key=lambda i: (sizes[i], i)):
        wider = max(longest, sizes[index])
        full = len(current) >= max_rows or (
            max_tokens is not None and wider * (len(current) + 1) > max_tokens
        )
        if current and full:
            batches.append(current)
            current, wider = [], sizes[index]
        current.append(index)
        longest = wider
    if current:
        batches.append(current)
    return batches


def plan_micro_batches(
    sizes: Sequence[int], world_size: int, *, max_rows: int, max_tokens: int | None = None
) -> list[list[list[int]]]:
    """Per rank, its micro-batches (indices into ``sizes``), as many on every rank.

    There is at least one; empty ones pad the lists of ranks with less to do.
    """
    per_rank = [
        micro_batches(group, sizes, max_rows=max_rows, max_tokens=max_tokens)
        for group in balance_by_tokens(sizes, world_size)
    ]
    passes = max(1, *(len(batches) for batches in per_rank))
    return [batches + [[] for _ in range(passes - len(batches))] for batches in per_rank]
