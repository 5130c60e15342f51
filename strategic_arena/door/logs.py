"""Log lines other libraries write, made printable before any handler sees them.

The package prints endpoint text only through :func:`~strategic_arena.door.printable.printable`,
but libraries it calls log that text on their own: math-verify logs ``Timeout during parsing:
<the answer>`` with the endpoint's escape sequences, and httpx, datasets, lm-eval and
transformers log URLs, replies and file names. :func:`guard_logs` installs, once, a log-record
factory that escapes every record's message and arguments from any logger -- the project's and
every library's -- and masks the known secrets, so no handler (Python's last-resort stderr one
included) writes a raw ESC, BEL or carriage return to a terminal, nor a key.

It wraps the factory installed before it, so another library's factory still runs.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any

from strategic_arena.door.printable import printable

_lock = threading.Lock()
_secrets: set[str] = set()
_installed = False

#: The shortest secret masked (shorter ones would mask ordinary words).
_MIN_SECRET = 8


def add_secret(secret: str | None) -> None:
    """Mask ``secret`` (an API key, a password) in every log line from now on."""
    if secret and len(secret) >= _MIN_SECRET:
        with _lock:
            _secrets.add(secret)


def clean(text: str) -> str:
    """``text`` with the known secrets masked and every control character escaped."""
    for secret in sorted(_secrets, key=len, reverse=True):
        text = text.replace(secret, "***")
    return printable(text, keep_newlines=True)


def _cleaning(previous: Callable[..., logging.LogRecord]) -> Callable[..., logging.LogRecord]:
    def factory(*args: Any, **kwargs: Any) -> logging.LogRecord:
        record = previous(*args, **kwargs)
        try:
            message = record.getMessage()
        except Exception:  # a record whose arguments do not fit its format: shown raw-escaped
            message = f"{record.msg!r} % {record.args!r}"
        record.msg = clean(message)
        record.args = None
        return record

    return factory


def guard_logs() -> None:
    """Escape every log record's text from now on (idempotent; see the module docstring)."""
    global _installed
    with _lock:
        if _installed:
            return
        logging.setLogRecordFactory(_cleaning(logging.getLogRecordFactory()))
        _installed = True
