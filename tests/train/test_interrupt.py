"""Ctrl-C in a training loop (:mod:`strategic_arena.train.loop.interrupt`), with real SIGINTs.

The first Ctrl-C asks to stop after the step (or drops a step that changed nothing), the second
raises at once and puts the previous handler back; leaving the block puts it back too.
"""

from __future__ import annotations

import signal
from typing import Any

import pytest

from strategic_arena.train.loop.interrupt import StopRequest


def _ctrl_c() -> None:
    """Send this process SIGINT; its Python handler runs before the next line."""
    signal.raise_signal(signal.SIGINT)


def test_the_first_ctrl_c_asks_to_stop_and_the_second_raises() -> None:
    before = signal.getsignal(signal.SIGINT)
    stop = StopRequest()
    reached = []
    with pytest.raises(KeyboardInterrupt), stop.handling_ctrl_c(lambda: False):
        _ctrl_c()
        reached.append("after the first")  # the step goes on
        assert stop.requested
        _ctrl_c()
        reached.append("after the second")
    assert reached == ["after the first"]
    assert signal.getsignal(signal.SIGINT) is before


def test_a_step_that_changed_nothing_is_dropped_at_the_first_ctrl_c() -> None:
    stop = StopRequest()
    stage = "generate"
    with pytest.raises(KeyboardInterrupt), stop.handling_ctrl_c(lambda: stage == "generate"):
        _ctrl_c()
    assert stop.requested


def test_the_previous_handler_is_back_after_the_block() -> None:
    seen: list[int] = []

    def previous(signum: int, frame: Any) -> None:
        seen.append(signum)

    old = signal.signal(signal.SIGINT, previous)
    try:
        stop = StopRequest()
        with stop.handling_ctrl_c(lambda: False):
            assert signal.getsignal(signal.SIGINT) is not previous
            _ctrl_c()
        assert signal.getsignal(signal.SIGINT) is previous and seen == []
        _ctrl_c()
        assert seen == [signal.SIGINT]
    finally:
        signal.signal(signal.SIGINT, old)
