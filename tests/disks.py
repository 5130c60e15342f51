"""A small real file system for full-disk tests: a tmpfs (root on Linux), filled to the byte."""

from __future__ import annotations

import errno
import os
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest


@contextmanager
def tmpfs(mount: Path, size: str) -> Iterator[Path]:
    """``mount`` as a tmpfs of ``size`` (``2m``); the test is skipped where none can be mounted."""
    mount.mkdir(exist_ok=True)
    try:
        done = subprocess.run(
            ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(mount)],
            capture_output=True,
        )
    except OSError:  # no mount command
        done = None
    if done is None or done.returncode != 0:
        pytest.skip("cannot mount a tmpfs here (the injected ENOSPC tests cover this)")
    try:
        yield mount
    finally:
        subprocess.run(["umount", str(mount)], check=True)


def resize(mount: Path, size: str) -> None:
    """Give the tmpfs at ``mount`` another size (room again after a full disk)."""
    subprocess.run(["mount", "-o", f"remount,size={size}", str(mount)], check=True)


def fill(folder: Path) -> None:
    """Fill the file system of ``folder`` to the last byte."""
    fd = os.open(folder / "filler", os.O_WRONLY | os.O_CREAT)
    try:
        for size in (65536, 4096, 1):  # big writes, then the last blocks and bytes
            with pytest.raises(OSError) as full:
                while True:
                    os.write(fd, b"\0" * size)
            assert full.value.errno == errno.ENOSPC
    finally:
        os.close(fd)
