"""Start ``torchrun`` with two CPU processes from a test (skips when torchrun is missing)."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

import pytest


def free_port() -> int:
    """A TCP port free on 127.0.0.1 right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def torchrun(
    args: Sequence[str], *, nproc: int = 2, timeout_s: float = 900.0
) -> subprocess.CompletedProcess[str]:
    """``torchrun --nproc-per-node nproc ARGS`` on a free port, one OpenMP thread a process."""
    launcher = shutil.which("torchrun", path=str(Path(sys.executable).parent))
    if launcher is None:
        pytest.skip("torchrun is not installed next to this python")
    command = [launcher, "--nproc-per-node", str(nproc), "--master-port", str(free_port())]
    return subprocess.run(
        [*command, *args],
        capture_output=True,
        text=True,
        env={**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": _python_path()},
        timeout=timeout_s,
        check=False,
    )


def _python_path() -> str:
    """The repository root first (rank scripts import ``tests.*`` helpers), then the caller's."""
    root = str(Path(__file__).resolve().parents[2])
    return os.pathsep.join(p for p in (root, os.environ.get("PYTHONPATH", "")) if p)


def train_command() -> str:
    """The ``strategic-arena`` console script next to this python (torchrun runs it)."""
    return str(Path(sys.executable).parent / "strategic-arena")
