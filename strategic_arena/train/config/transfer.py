"""The trainer's ``transfer`` section: reasoning benchmarks at chosen checkpoints.

Its keys are a transfer plan's (:class:`~strategic_arena.transfer.TransferPlan`: paper,
benchmarks, data folder, overrides; the keys of ``configs/transfer_*.yaml``) and when to run
it. The trainer asks the policy through its own engine (:mod:`strategic_arena.train.
transfer_eval`), stores the answers in the evaluation store (``eval.db``) under the labels
``<run_name>/step-NNNNNN``, logs ``transfer/<benchmark>/<metric>`` metrics and prints the
before/after table in its closing summary.
"""

from __future__ import annotations

from dataclasses import dataclass

from strategic_arena.transfer.benchmarks import TransferPlan

__all__ = ["TransferConfig"]


@dataclass(frozen=True)
class TransferConfig(TransferPlan):
    """Reasoning benchmarks before, during and after training (docs/transfer.md)."""

    at_start: bool = True
    """Evaluate the starting model before the first step (the "before" row)."""
    every: int = 0
    """Also every this many steps (0: only before the first and after the last step)."""
    concurrency: int = 64
    """Samples asked at once (the engine batches them)."""

    def problems(self) -> list[str]:
        """What is wrong with the values (empty when they are fine)."""
        found = []
        if self.every < 0:
            found.append("transfer.every must be >= 0 (0: before and after only)")
        if self.concurrency < 1:
            found.append("transfer.concurrency must be >= 1")
        try:
            self.runs()  # the paper, the benchmarks, the overrides (no file is read)
        except ValueError as error:
            found.append(f"transfer: {error}")
        return found
