"""The door stays the only door: no module outside it reads a file, decodes JSON or YAML, or
formats a connection target on its own.

The check reads the package's source (``ast``), so a new surface that opens a user-named file
with ``open()``, ``Path.read_text()`` or ``os.open()``, decodes with ``json.loads`` or
``yaml.safe_load``, or rebuilds a URL from its parts (``urlunsplit``) fails here, naming the
line. Writes are not reads and pass. :data:`ALLOWED` lists the few calls that are not input from
outside, each with the reason; an entry that no longer matches fails too, so it cannot linger.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "strategic_arena"
DOOR = PACKAGE / "door"

#: (module, the call's text) -> why it is not input from outside.
ALLOWED: dict[tuple[str, str], str] = {
    ("leaderboard/atomic.py", "os.open(path, os.O_RDONLY)"): (
        "a descriptor of the file just written, to fsync it: nothing is read"
    ),
}

#: Calls that decode text from outside.
_DECODERS = {
    ("json", "loads"),
    ("json", "load"),
    ("yaml", "safe_load"),
    ("yaml", "load"),
    ("yaml", "full_load"),
    ("yaml", "unsafe_load"),
    ("pickle", "loads"),
    ("pickle", "load"),
}
#: Modules whose ``open`` is not a file's.
_OTHER_OPENS = ("tarfile", "zipfile", "webbrowser", "gzip")
#: Calls that rebuild a URL from its parts: how a connection target is shown is the door's.
_URL_BUILDERS = {"urlunsplit", "urlunparse"}


def _mode(call: ast.Call, position: int) -> str | None:
    """The mode given to an ``open`` call (positional at ``position`` or ``mode=``)."""
    if len(call.args) > position and isinstance(call.args[position], ast.Constant):
        return str(call.args[position].value)
    for keyword in call.keywords:
        if keyword.arg == "mode" and isinstance(keyword.value, ast.Constant):
            return str(keyword.value.value)
    if len(call.args) > position or any(k.arg == "mode" for k in call.keywords):
        return "?"  # a mode computed at run time: counted as a read
    return None


def _reads(mode: str | None) -> bool:
    return mode is None or mode == "?" or not set(mode) & set("wax")


def _problem(call: ast.Call) -> str | None:
    """What ``call`` does on its own that only the door may, or ``None``."""
    func = call.func
    if isinstance(func, ast.Name):
        if func.id == "open" and _reads(_mode(call, 1)):
            return "opens a file for reading"
        if func.id in _URL_BUILDERS:
            return "formats a URL from its parts"
        return None
    if not isinstance(func, ast.Attribute):
        return None
    owner = func.value.id if isinstance(func.value, ast.Name) else None
    if (owner, func.attr) in _DECODERS:
        return f"decodes with {owner}.{func.attr}"
    if func.attr in _URL_BUILDERS:
        return "formats a URL from its parts"
    if func.attr in ("read_text", "read_bytes"):
        return f"reads a file with .{func.attr}()"
    if func.attr == "open" and owner == "os":
        flags = ast.unparse(call.args[1]) if len(call.args) > 1 else ""
        return None if "O_WRONLY" in flags or "O_RDWR" in flags else "opens a file descriptor"
    if func.attr == "open" and owner not in _OTHER_OPENS and _reads(_mode(call, 0)):
        return "opens a file for reading"
    return None


def violations(source: str, module: str) -> list[str]:
    """Each call in ``source`` that does the door's job, as ``module:line: call: problem``."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call) and (problem := _problem(node)) is not None:
            text = ast.unparse(node)
            if (module, text) not in ALLOWED:
                found.append(f"{module}:{node.lineno}: {text}: {problem}")
    return found


def _package_modules() -> list[tuple[str, str]]:
    return [
        (path.relative_to(PACKAGE).as_posix(), path.read_text(encoding="utf-8"))
        for path in sorted(PACKAGE.rglob("*.py"))
        if DOOR not in path.parents
    ]


def test_no_module_outside_the_door_reads_decodes_or_formats_a_target_itself() -> None:
    found = [line for module, source in _package_modules() for line in violations(source, module)]
    assert not found, "go through strategic_arena.door:\n" + "\n".join(found)


def test_every_allowed_call_still_exists() -> None:
    calls = {
        (module, ast.unparse(node))
        for module, source in _package_modules()
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.Call)
    }
    assert set(ALLOWED) <= calls, f"stale entries: {set(ALLOWED) - calls}"


@pytest.mark.parametrize(
    "line",
    [
        "text = open(user_path).read()",
        "text = open(user_path, 'rb').read()",
        "text = Path(user_path).read_text(encoding='utf-8')",
        "data = Path(user_path).read_bytes()",
        "with Path(user_path).open() as handle: pass",
        "fd = os.open(user_path, os.O_RDONLY)",
        "value = json.loads(body)",
        "value = yaml.safe_load(handle)",
        "url = urllib.parse.urlunsplit(parts)",
    ],
)
def test_a_deliberately_added_raw_read_is_caught(line: str) -> None:
    """The check fails on the holes it exists for (a raw ``open()`` of a user path first)."""
    source = f"def persona(user_path, body, handle, parts):\n    {line}\n"
    assert violations(source, "arena/new_surface.py"), line


@pytest.mark.parametrize(
    "line",
    [
        "open(out_path, 'w').write(text)",
        "Path(out_path).open('a', encoding='utf-8')",
        "Path(out_path).write_text(text)",
        "text = read_text(user_path, 'persona')",
    ],
)
def test_writes_and_the_door_itself_pass(line: str) -> None:
    assert not violations(f"def f(out_path, user_path, text):\n    {line}\n", "x.py"), line
