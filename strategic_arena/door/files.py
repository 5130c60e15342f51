"""Reading a file a user, a config or a checkpoint names: the one place such a file is opened.

A path that reaches us from outside is hostile until read: ``persona.txt -> /proc/self/environ``
would send the environment (API keys included) to an endpoint, a FIFO would block forever, a
300 MB file would be read whole, a device would never end. Every reader of such a file goes
through :func:`read_bytes` (or :func:`read_text`, :func:`read_json`, :func:`read_json_lines`),
which allows only:

* **a regular file**: not a directory, FIFO, socket or device (each named in the refusal);
* **no symbolic link as the file itself** (opened with ``O_NOFOLLOW``, checked on the open
  descriptor, so a file swapped for a link after a look is refused all the same); with
  ``within``, the file must also lie inside that folder once every link above it is resolved
  (a checkpoint's ``tokenizer: ../../../etc`` is refused);
* **at most the size cap of its kind** (:data:`SIZE_CAPS`), read with the cap plus one byte so
  a file whose size the kernel does not report (``/proc``) is bounded too;
* **UTF-8 text** for :func:`read_text`, and JSON no deeper than
  :data:`~strategic_arena.door.json_data.MAX_DEPTH` for :func:`read_json`.

Each refusal is :class:`~strategic_arena.door.errors.Refused`: one line naming the file (made
printable) and why. ``tests/test_door.py`` walks the package and fails on any module outside
the door that opens a file for reading or decodes JSON on its own.
"""

from __future__ import annotations

import importlib
import os
import stat
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal

from strategic_arena.door.errors import Refused
from strategic_arena.door.json_data import MAX_DEPTH, check_shape, decode
from strategic_arena.door.printable import printable_line

#: What a file is for, which sets its size cap and names it in messages.
Kind = Literal[
    "prompt",
    "persona",
    "settings",
    "config",
    "checkpoint",
    "data",
    "package",
    "log",
]

_MIB = 1024 * 1024

#: The largest file of each kind read, in bytes. A prompt or persona is a page or two of text;
#: settings and configs are a few KiB; checkpoint metadata (trainer state, metrics) is small;
#: data (benchmark and problem files, rows of a published table) is the largest kind the
#: project reads (MMLU's 14k rows are ~8 MB as JSON lines); a log is read back in part.
SIZE_CAPS: dict[str, int] = {
    "prompt": 256 * 1024,
    "persona": 256 * 1024,
    "settings": 1 * _MIB,
    "config": 4 * _MIB,
    "checkpoint": 64 * _MIB,
    "data": 256 * _MIB,
    "package": 16 * _MIB,
    "log": 64 * _MIB,
}

#: The most values a YAML file may expand to, its aliases followed (a config has hundreds).
MAX_YAML_VALUES = 100_000

#: The longest line of a JSON-lines file (one benchmark row or record).
MAX_LINE_BYTES = 4 * _MIB

_FILE_TYPES = (
    (stat.S_ISDIR, "a folder"),
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
)


def _what(kind: str, path: Path) -> str:
    return f"{kind} file {printable_line(path)}"


def _inside(path: Path, within: Path) -> bool:
    """Whether ``path`` lies inside ``within`` once links above it are resolved."""
    try:
        return path.resolve().is_relative_to(within.resolve())
    except (OSError, RuntimeError):  # a link loop
        return False


def _open(path: Path, kind: str) -> int:
    """A read-only descriptor of ``path`` (no link followed as the file itself)."""
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
    try:
        return os.open(path, flags)
    except OSError as error:
        if os.path.islink(path):
            raise Refused(
                f"{_what(kind, path)} is a symbolic link; give the file itself (a link could "
                "make us read and send a file you did not name)"
            ) from None
        if not os.path.lexists(path):
            raise Refused(f"no {kind} file {printable_line(path)}") from None
        raise Refused(f"{_what(kind, path)} cannot be read ({error.strerror})") from None


def read_bytes(path: str | Path, kind: Kind, *, within: str | Path | None = None) -> bytes:
    """The bytes of the regular file ``path``, within the size cap of ``kind``.

    Args:
        path: the file a user, a config or a checkpoint named.
        kind: what it is for (:data:`SIZE_CAPS`).
        within: a folder the file must lie inside (a checkpoint's own files).

    Raises:
        Refused: not a regular file (says what it is), a link, outside ``within``, too large,
            or unreadable: one line.
    """
    where = Path(path).expanduser()
    if within is not None and not _inside(where, Path(within)):
        raise Refused(
            f"{_what(kind, where)} lies outside {printable_line(within)}, where it must be"
        )
    descriptor = _open(where, kind)
    mode = os.fstat(descriptor).st_mode
    if not stat.S_ISREG(mode):
        os.close(descriptor)
        name = next((name for test, name in _FILE_TYPES if test(mode)), "not a regular file")
        raise Refused(f"{_what(kind, where)} is {name}, not a regular file")
    with os.fdopen(descriptor, "rb") as file:
        cap = SIZE_CAPS[kind]
        try:
            data = file.read(cap + 1)
        except OSError as error:
            raise Refused(f"{_what(kind, where)} cannot be read ({error.strerror})") from None
    if len(data) > cap:
        raise Refused(f"{_what(kind, where)} is larger than the {_size(cap)} a {kind} may be")
    return data


def read_gzip(path: str | Path, kind: Kind) -> bytes:
    """The bytes a gzip file ``path`` holds, each side within the size cap of ``kind``.

    A gzip file is read as :func:`read_bytes` reads any file, then inflated no further than
    the cap, so a small file that would inflate to gigabytes (a bomb) is refused, not held.

    Raises:
        Refused: as :func:`read_bytes`, not gzip data, cut off, or larger than the cap
            once inflated: one line.
    """
    where = Path(path).expanduser()
    cap = SIZE_CAPS[kind]
    inflate = zlib.decompressobj(wbits=16 + zlib.MAX_WBITS)
    try:
        data = inflate.decompress(read_bytes(where, kind), cap + 1)
    except zlib.error as error:
        raise Refused(f"{_what(kind, where)} is not gzip data ({error})") from None
    if len(data) > cap or inflate.unconsumed_tail:
        raise Refused(f"{_what(kind, where)} inflates past the {_size(cap)} a {kind} may be")
    if not inflate.eof:
        raise Refused(f"{_what(kind, where)} is cut off (its gzip stream does not end)")
    return data


def read_text(
    path: str | Path,
    kind: Kind,
    *,
    within: str | Path | None = None,
    errors: Literal["strict", "replace"] = "strict",
) -> str:
    """The UTF-8 text of ``path`` (see :func:`read_bytes`).

    Args:
        path: the file.
        kind: what it is for.
        within: a folder the file must lie inside.
        errors: ``replace`` reads bytes that are not UTF-8 as U+FFFD (a third party's log);
            ``strict`` refuses them.

    Raises:
        Refused: as :func:`read_bytes`, or the bytes are not UTF-8.
    """
    data = read_bytes(path, kind, within=within)
    try:
        return data.decode("utf-8", errors=errors)
    except UnicodeDecodeError as error:
        raise Refused(f"{_what(kind, Path(path))} is not UTF-8 text (byte {error.start})") from None


def read_json(
    path: str | Path,
    kind: Kind,
    *,
    within: str | Path | None = None,
    max_depth: int = MAX_DEPTH,
    finite: bool = True,
) -> Any:
    """The JSON value in ``path`` (see :func:`read_bytes` and :func:`~.json_data.decode`).

    Raises:
        Refused: as :func:`read_text`, or not JSON, or nested deeper than ``max_depth``.
    """
    text = read_text(path, kind, within=within)
    return decode(text, _what(kind, Path(path)), max_depth=max_depth, finite=finite)


def read_yaml(path: str | Path, kind: Kind, *, max_depth: int = MAX_DEPTH) -> Any:
    """The YAML value in ``path`` (a training config), through :func:`read_text`.

    Raises:
        Refused: as :func:`read_text` or :func:`decode_yaml`.
    """
    return decode_yaml(read_text(path, kind), _what(kind, Path(path)), max_depth=max_depth)


def decode_yaml(text: str, what: str, *, max_depth: int = MAX_DEPTH) -> Any:
    """The value of the YAML ``text`` (a config file, a ``--set`` value).

    ``yaml.safe_load`` (PyYAML, imported here only) builds no objects but plain data; nesting
    deeper than ``max_depth`` is refused as JSON's is, and so are aliases that expand past
    :data:`MAX_YAML_VALUES` values (a "billion laughs" file).

    Raises:
        Refused: not YAML (the problem and its line), too deep or too large.
    """
    yaml: Any = importlib.import_module("yaml")  # PyYAML: a dependency, loaded on first use
    try:
        value = yaml.safe_load(text)
    except RecursionError:
        raise Refused(f"{what}: YAML nested deeper than the parser allows") from None
    except yaml.YAMLError as error:  # one line: what is wrong and where
        problem = getattr(error, "problem", None) or str(error).splitlines()[0]
        mark = getattr(error, "problem_mark", None)
        where = f" (line {mark.line + 1}, column {mark.column + 1})" if mark else ""
        raise Refused(f"{what}: not valid YAML: {problem}{where}") from None
    check_shape(value, what, max_depth, MAX_YAML_VALUES)
    return value


def read_json_lines(
    path: str | Path,
    kind: Kind,
    *,
    within: str | Path | None = None,
    finite: bool = True,
    skip_bad: bool = False,
) -> Iterator[tuple[int, Any]]:
    """``(line number, value)`` for each non-blank line of a JSON-lines file.

    The file is capped as a whole (:func:`read_bytes`) and each line at
    :data:`MAX_LINE_BYTES`, so a 300 MB one-line file is refused, not decoded.

    Args:
        path: the file.
        kind: what it is for.
        within: a folder the file must lie inside.
        finite: refuse non-finite numbers (a metrics log may hold a NaN loss: ``False``).
        skip_bad: skip a line that is not JSON (the last line of a log cut short by a kill)
            instead of refusing the file.

    Raises:
        Refused: as :func:`read_json`, naming the line.
    """
    text = read_text(path, kind, within=within)
    what = _what(kind, Path(path))
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        if len(line) > MAX_LINE_BYTES:
            raise Refused(f"{what}: line {number} is longer than {_size(MAX_LINE_BYTES)}")
        try:
            yield number, decode(line, f"{what}: line {number}", finite=finite)
        except Refused:
            if not skip_bad:
                raise


def tail_text(path: str | Path, kind: Kind, max_bytes: int) -> str:
    """The last ``max_bytes`` of the regular file ``path`` as text (bad UTF-8 replaced).

    For a third party's log that grows without bound (a vLLM server's), read back in part to
    say why it stopped. No link as the file itself, no FIFO or device; nothing is read whole.

    Raises:
        Refused: as :func:`read_bytes` (except the size cap).
    """
    where = Path(path).expanduser()
    descriptor = _open(where, kind)
    mode = os.fstat(descriptor).st_mode
    if not stat.S_ISREG(mode):
        os.close(descriptor)
        raise Refused(f"{_what(kind, where)} is not a regular file")
    with os.fdopen(descriptor, "rb") as file:
        size = os.fstat(descriptor).st_size
        file.seek(max(size - max_bytes, 0))
        data = file.read(max_bytes)
    return data.decode("utf-8", errors="replace")


def describe(path: str | Path) -> str:
    """What is at ``path`` in words (``a FIFO (named pipe)``, ``nothing``), for messages."""
    try:
        mode = os.lstat(Path(path).expanduser()).st_mode
    except OSError:
        return "nothing"
    if stat.S_ISLNK(mode):
        return "a symbolic link"
    for test, name in _FILE_TYPES:
        if test(mode):
            return name
    return "a regular file" if stat.S_ISREG(mode) else "not a regular file"


def _size(count: int) -> str:
    if count >= _MIB and count % _MIB == 0:
        return f"{count // _MIB} MiB"
    if count % 1024 == 0:
        return f"{count // 1024} KiB"
    return f"{count} bytes"
