"""Stopping a server's whole process group: the check ``VLLMServer.stop`` waits on.

``stop`` kills the group and then waits until :func:`running_group_members` is empty, so a
caller that checks for leftovers (or starts the next server) right after it finds none still
exiting. This checks that function against a real process group of a shell and its child.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time

from strategic_arena.train.engines.vllm_server import running_group_members


def test_running_group_members_lists_a_group_until_it_has_exited() -> None:
    # A shell that starts a child in the same group: both are listed, then neither once killed
    # (the child is orphaned; whether anyone reaps it, it no longer runs).
    process = subprocess.Popen(
        ["sh", "-c", "sleep 600 & wait"], start_new_session=True, stdout=subprocess.DEVNULL
    )
    try:
        deadline = time.monotonic() + 60  # a start-up guard, not a measurement
        while len(running_group_members(process.pid)) < 2 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert process.pid in running_group_members(process.pid)
        assert len(running_group_members(process.pid)) == 2
    finally:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()
    deadline = time.monotonic() + 60
    while running_group_members(process.pid) and time.monotonic() < deadline:
        time.sleep(0.01)
    assert running_group_members(process.pid) == []
    assert running_group_members(os.getpgrp()) != []  # this test's own group is running
