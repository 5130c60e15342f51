"""One-line errors for config mistakes.

An unknown key is named with the nearest known one, a value of the wrong type with its key.
pydantic reports every problem with its location and kind; :func:`describe_error` turns that
into the line a user reads (``ppo.epochs must be an integer, got 'two'``), keeping the most
telling problem of a value that fits none of a union's types.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable, Sequence
from typing import Any

from pydantic import ValidationError

HELP = "(see strategic-arena train --help)"

#: pydantic error kinds -> what the value must be.
_MUST_BE: dict[str, str] = {
    "int_parsing": "must be an integer",
    "int_type": "must be an integer",
    "int_from_float": "must be an integer",
    "float_parsing": "must be a number",
    "float_type": "must be a number",
    "bool_parsing": "must be true or false",
    "bool_type": "must be true or false",
    "string_type": "must be a string",
    "list_type": "must be a list",
    "tuple_type": "must be a list",
    "dict_type": "must be a mapping",
    "mapping_type": "must be a mapping",
    "dataclass_type": "must be a mapping",
    "missing": "is required",
    "missing_argument": "is required",
}

#: Kinds that say a value is of the wrong shape: under a union, the least telling ones.
_SHAPE_KINDS = frozenset(_MUST_BE) - {"missing", "missing_argument"}

#: Location parts that name a union's branch, not a key (``str``, ``OpponentConfig``, ...).
_BRANCH = re.compile(r"^([A-Z]\w*|str|int|float|bool|none|.*\[.*)$")


def unknown_key(key: str, known: Iterable[str], where: str, elsewhere: str = "") -> str:
    """``unknown WHERE key 'KEY'; did you mean 'NEAR'?`` (``elsewhere``: a better hint)."""
    near = difflib.get_close_matches(key, list(known), n=1)
    hint = elsewhere or (f"did you mean {near[0]!r}?" if near else "")
    return f"unknown {where} key {key!r}{'; ' + hint if hint else ''} {HELP}"


def _path(loc: Sequence[int | str]) -> tuple[int | str, ...]:
    """A pydantic location without its union-branch parts."""
    return tuple(p for p in loc if isinstance(p, int) or not _BRANCH.match(p))


def dotted(path: Sequence[int | str]) -> str:
    """``games.opponents[0].spec`` from its parts."""
    text = ""
    for part in path:
        text += f"[{part}]" if isinstance(part, int) else f".{part}" if text else str(part)
    return text


def _message(error: Any, where: str) -> str:
    kind, value = error["type"], error.get("input")
    if kind == "value_error":
        text = str(error["msg"]).removeprefix("Value error, ")
        return text if not where or where in text else f"{where}: {text}"
    if kind == "literal_error":
        return f"{where} must be one of {error['ctx']['expected']}, got {value!r}"
    if value is None and kind in _SHAPE_KINDS:
        return f"{where} may not be null"
    rule = _MUST_BE.get(kind, str(error["msg"]).lower())
    shown = "" if kind in ("missing", "missing_argument") else f", got {value!r}"
    return f"{where} {rule}{shown}"


def _telling(errors: list[Any]) -> list[Any]:
    """The errors worth reading.

    A wrong-shape error whose location leads to another error (a union branch that did not
    fit) is left out.
    """
    paths = [_path(error["loc"]) for error in errors]
    kept = []
    for error, path in zip(errors, paths, strict=True):
        deeper = any(len(p) > len(path) and p[: len(path)] == path for p in paths)
        if not (error["type"] in _SHAPE_KINDS and deeper):
            kept.append(error)
    return kept


def describe_error(error: ValidationError, prefix: str = "", unknown: Any = None) -> str:
    """One line naming each problem of a failed validation (``prefix``: the section it is in).

    Args:
        error: pydantic's report.
        prefix: the dotted place of the validated value (``advantage``).
        unknown: ``unknown(path) -> str`` for an unknown key at ``path``; the plain message
            without it.
    """
    lines: list[str] = []
    for item in _telling(error.errors()):
        path = (*([prefix] if prefix else []), *_path(item["loc"]))
        if item["type"] == "unexpected_keyword_argument" and unknown is not None:
            text = unknown(path)
        elif item["type"] == "unexpected_keyword_argument":
            text = f"unknown key {dotted(path)!r} {HELP}"
        else:
            text = _message(item, dotted(path))
        if text not in lines:
            lines.append(text)
    return "; ".join(lines)
