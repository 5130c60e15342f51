"""Ctrl-C in a training loop: the first stops after the step and saves, the second aborts.

A run interrupted by a person must keep what it learned: the first Ctrl-C (SIGINT) asks the
loop to stop once the step under way is done, then the loop saves a checkpoint. Where the step
has changed nothing yet (its games are still being played) there is nothing to finish, and
the step is dropped at once. A second Ctrl-C raises :class:`KeyboardInterrupt` wherever the
loop is (and puts the previous handler back, so a third one is Python's own). The single
policy's :class:`~strategic_arena.train.loop.trainer.Trainer` and the co-trainer
(:mod:`strategic_arena.train.loop.cotrain`) both stop this way.
"""

from __future__ import annotations

import logging
import signal
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

log = logging.getLogger("strategic_arena.train")


class StopRequest:
    """Whether Ctrl-C asked the loop to stop, and the SIGINT handler that records it.

    Attributes:
        requested: Ctrl-C was pressed (the loop stops after the step under way).
        stage: the stage the loop is in (:meth:`during`; ``idle`` between stages): what the
            first Ctrl-C does depends on it, and the loop names it when it stops.
    """

    def __init__(self) -> None:
        self.requested = False
        self.stage = "idle"

    @contextmanager
    def during(self, stage: str) -> Iterator[None]:
        """Mark the block as the loop's ``stage`` (left as it is when the block raises)."""
        self.stage = stage
        yield
        self.stage = "idle"

    @contextmanager
    def handling_ctrl_c(self, droppable: Callable[[], bool]) -> Iterator[None]:
        """Handle SIGINT inside the block as the module docstring says.

        Args:
            droppable: whether the step under way may be dropped at the first Ctrl-C (nothing
                has changed yet); asked when Ctrl-C arrives.

        Outside the main thread (where no signal handler can be set) the block runs unguarded.
        """
        try:
            previous = signal.getsignal(signal.SIGINT)
        except ValueError:  # not the main thread: no handler
            yield
            return

        def handle(signum: int, frame: Any) -> None:
            if self.requested:
                signal.signal(signal.SIGINT, previous)
                raise KeyboardInterrupt
            self.requested = True
            if droppable():
                raise KeyboardInterrupt  # nothing has changed yet: drop the step
            log.warning("Ctrl-C: finishing the step, then saving (Ctrl-C again to abort)")

        try:
            signal.signal(signal.SIGINT, handle)
        except ValueError:
            yield
            return
        try:
            yield
        finally:
            signal.signal(signal.SIGINT, previous)
