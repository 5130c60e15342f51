"""Write a set of files into a folder all at once: a reader sees every new file or every old one.

Replacing files one by one (even each with an atomic ``os.replace``) leaves a window, and after
a crash a folder, where some files are new and some old. The only step the kernel does at once
is one rename, so the publication is one folder swapped in one rename:

1. every file is written into a new sibling folder ``.<name>.publish-<pid>-<random>`` (same
   file system), each flushed with ``fsync``, then the folder itself;
2. whatever else the target folder holds (``ladder.db``, a ``README.md``: files that are not
   ours) is hard-linked into the new folder, unchanged and not copied;
3. the new folder and the target are exchanged in one ``renameat2(RENAME_EXCHANGE)`` (Linux;
   elsewhere, or where the file system refuses it, two renames with a moment in which the
   target is missing, never mixed); the parent folder is flushed;
4. the old folder, now under the temporary name, is deleted.

A crash (kill -9, power loss) before step 3 leaves the old files as they were plus a
temporary folder; after it, the new ones. Leftover temporary folders of dead processes are
removed by the next write. A full disk fails in step 1, before anything is replaced.

Where the target cannot be swapped as a whole -- it holds sub-folders, is a mount point, is
the working folder (or above it) of this process, holds a database in use (an SQLite ``-wal``
or ``-journal`` file), or its file system has no hard links -- each file is instead written
beside its final name, flushed and renamed over it, in the order given: every file is then
whole, old or new, but for a moment some may be new and others old. :func:`write_all` says
which it did.
"""

from __future__ import annotations

import ctypes
import errno
import os
import secrets
import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import Literal

Mode = Literal["swapped", "per-file"]

#: Files beside an SQLite database that is open: its pages may live there, under that name,
#: and a folder swap would leave the copy a writer creates meanwhile in the old folder.
_LIVE_DATABASE = ("-wal", "-shm", "-journal")

_AT_FDCWD = -100
_RENAME_EXCHANGE = 2


def _fsync_path(path: Path) -> None:
    """Flush ``path`` (a file or a folder) to disk."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _write(path: Path, data: bytes) -> None:
    """Write ``data`` into the new file ``path`` and flush it (``OSError`` on a full disk)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        os.fsync(fd)
    finally:
        os.close(fd)


def _exchange(first: Path, second: Path) -> bool:
    """Swap two paths in one step; ``False`` where the system or file system cannot."""
    try:
        renameat2 = ctypes.CDLL(None, use_errno=True).renameat2
    except (AttributeError, OSError):
        return False
    result = renameat2(
        _AT_FDCWD, os.fsencode(first), _AT_FDCWD, os.fsencode(second), _RENAME_EXCHANGE
    )
    if result == 0:
        return True
    code = ctypes.get_errno()
    if code in (errno.ENOSYS, errno.EINVAL, errno.EOPNOTSUPP):
        return False
    raise OSError(code, os.strerror(code), str(first))


def _prefix(target: Path) -> str:
    return f".{target.name}.publish-"


def _remove_stale(target: Path) -> None:
    """Delete temporary folders that dead processes left beside ``target``."""
    for path in target.parent.glob(_prefix(target) + "*"):
        pid = path.name[len(_prefix(target)) :].split("-", 1)[0]
        if not pid.isdigit() or int(pid) == os.getpid():
            continue
        try:
            os.kill(int(pid), 0)
        except ProcessLookupError:
            shutil.rmtree(path, ignore_errors=True)
        except PermissionError:  # alive, someone else's
            continue


def _swappable(target: Path) -> bool:
    """Whether ``target`` can be replaced as a whole folder (see the module's rule)."""
    if not target.exists():
        return True
    if os.path.ismount(target):
        return False
    here = Path.cwd().resolve()
    if here == target or target in here.parents:
        return False
    return all(
        (not entry.is_dir() or entry.is_symlink()) and not entry.name.endswith(_LIVE_DATABASE)
        for entry in os.scandir(target)
    )


def _per_file(target: Path, files: Mapping[str, bytes]) -> None:
    """Each file written beside its final name, flushed, then renamed over it, in order."""
    target.mkdir(parents=True, exist_ok=True)
    temporary = {name: target / f".{name}.tmp-{os.getpid()}" for name in files}
    try:
        for name, data in files.items():
            _write(temporary[name], data)
        for name in files:
            os.replace(temporary[name], target / name)
        _fsync_path(target)
    finally:
        for path in temporary.values():
            path.unlink(missing_ok=True)


class _CannotSwap(Exception):
    """The target's other files cannot be carried over (no hard links here)."""


def _swap(target: Path, files: Mapping[str, bytes]) -> None:
    """The new folder built beside ``target`` and exchanged with it in one rename.

    Raises:
        _CannotSwap: the file system refuses hard links; nothing was replaced.
    """
    parent = target.parent
    parent.mkdir(parents=True, exist_ok=True)
    _remove_stale(target)
    staging = parent / f"{_prefix(target)}{os.getpid()}-{secrets.token_hex(4)}"
    staging.mkdir()
    try:
        for name, data in files.items():
            _write(staging / name, data)
        if target.exists():
            for entry in os.scandir(target):  # not ours: carried over as they are
                if entry.name not in files:
                    try:
                        os.link(entry.path, staging / entry.name, follow_symlinks=False)
                    except OSError as error:
                        if error.errno in (errno.ENOSPC, errno.EDQUOT):
                            raise
                        raise _CannotSwap(str(error)) from error
            mode = target.stat().st_mode & 0o7777
            os.chmod(staging, mode)
        _fsync_path(staging)
        if not target.exists():
            os.rename(staging, target)
        elif not _exchange(staging, target):
            aside = parent / f"{_prefix(target)}{os.getpid()}-{secrets.token_hex(4)}"
            os.rename(target, aside)
            os.rename(staging, target)
            staging = aside
        _fsync_path(parent)
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def write_all(folder: str | Path, files: Mapping[str, bytes]) -> Mode:
    """Write ``files`` (name -> content) into ``folder``, replacing them all at once.

    Returns:
        ``swapped`` when the folder was replaced in one rename (readers see all new files or
        all old ones), ``per-file`` when each file was replaced on its own (see the module).

    Raises:
        OSError: nothing could be written (a full disk, no permission); the old files are
            unchanged and no temporary file is left behind.
    """
    target = Path(folder).resolve()  # a symlinked folder: replace where it points
    if target.exists() and not target.is_dir():
        raise NotADirectoryError(errno.ENOTDIR, "not a folder", str(folder))
    if _swappable(target):
        try:
            _swap(target, files)
            return "swapped"
        except _CannotSwap:
            pass
    _per_file(target, files)
    return "per-file"
