"""Decoding JSON from outside: bounded depth, finite numbers, one-line errors.

``json.loads`` on text nested 100,000 levels deep ends in ``RecursionError`` (a traceback,
not a message), and it reads ``1e999`` as infinity and ``NaN`` as a number, which no server
takes back. :func:`decode` is the one place the package decodes JSON that came from a file,
an endpoint, a store or a command line: it refuses nesting deeper than ``max_depth`` and, unless
asked not to, non-finite numbers, each in one line naming what was decoded.
"""

from __future__ import annotations

import json
import math
from typing import Any

from strategic_arena.door.errors import Refused

#: How deeply JSON from outside may nest. The deepest the project writes is a settings file's
#: per-game sampling or a stored player's parameters (about 5 levels); 64 leaves room for a
#: user's own ``extra_body`` and refuses a bomb long before Python's recursion limit.
MAX_DEPTH = 64


def _finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"the number {text[:20]} is too large to be finite")
    return value


def _no_constant(name: str) -> float:
    raise ValueError(f"{name} is not a number JSON may carry")


def decode(
    text: str | bytes, what: str, *, max_depth: int | None = MAX_DEPTH, finite: bool = True
) -> Any:
    """The value of the JSON ``text``.

    Args:
        text: the JSON (bytes are read as UTF-8).
        what: what it is (``settings file x.json``), put before every error.
        max_depth: the deepest nesting of arrays and objects allowed; ``None``: only what the
            parser's own stack allows (a hot path whose size is bounded already: an endpoint's
            reply, whose values :mod:`strategic_arena.http_body` counts).
        finite: refuse ``NaN``, ``Infinity`` and numbers too large for a float.

    Raises:
        Refused: not JSON, too deep, or a non-finite number: one line.
    """
    hooks: dict[str, Any] = {"parse_float": _finite, "parse_constant": _no_constant}
    try:
        value = json.loads(text, **(hooks if finite else {}))
    except RecursionError:
        limit = "the parser allows" if max_depth is None else f"{max_depth} levels"
        raise Refused(f"{what}: JSON nested deeper than {limit}") from None
    except UnicodeDecodeError as error:
        raise Refused(f"{what}: not JSON (not UTF-8 text at byte {error.start})") from None
    except ValueError as error:
        first = str(error).splitlines()[0] if str(error) else type(error).__name__
        raise Refused(f"{what}: not JSON ({first})") from None
    if max_depth is not None and depth_exceeds(value, max_depth):
        raise Refused(f"{what}: JSON nested deeper than {max_depth} levels")
    return value


def depth_exceeds(value: Any, max_depth: int) -> bool:
    """Whether arrays and objects in ``value`` nest deeper than ``max_depth`` (no recursion)."""
    return _shape(value, max_depth, None) == "depth"


def check_shape(value: Any, what: str, max_depth: int, max_values: int) -> None:
    """Refuse ``value`` nested deeper than ``max_depth`` or holding more than ``max_values``.

    The count follows shared references as often as they occur, which is what any later
    reader of the value walks: a YAML file whose aliases expand a few lines into billions of
    values (``&a [*b, *b, ...]``) is refused here, before anything expands it.

    Raises:
        Refused: one line saying which bound was passed.
    """
    problem = _shape(value, max_depth, max_values)
    if problem == "depth":
        raise Refused(f"{what}: nested deeper than {max_depth} levels")
    if problem == "values":
        raise Refused(f"{what}: holds more than {max_values} values (aliases included)")


def _shape(value: Any, max_depth: int, max_values: int | None) -> str | None:
    """``"depth"`` or ``"values"`` for the first bound ``value`` passes, else ``None``."""
    stack: list[tuple[Any, int]] = [(value, 0)]
    seen = 0
    while stack:
        item, level = stack.pop()
        seen += 1
        if max_values is not None and seen > max_values:
            return "values"
        if isinstance(item, dict):
            children: Any = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        if level + 1 > max_depth:
            return "depth"
        stack.extend((child, level + 1) for child in children)
    return None
