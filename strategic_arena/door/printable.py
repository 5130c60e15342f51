r"""Text from an endpoint or the store, made safe for a terminal, a log line or a table cell.

An endpoint is hostile: a model id, a reply or an error body may hold ESC sequences (clear the
screen, set the window title through OSC), NUL, carriage returns that overwrite a line, bidi
overrides that reorder it, or lone surrogates that a UTF-8 terminal cannot encode. Every string
that came from outside goes through :func:`printable` before it is printed, so what a terminal
shows is exactly the characters received, never an instruction to the terminal.

- Control characters (C0, DEL, C1), bidi controls and other format characters become visible
  escapes (``\\x1b``, ``\\u202e``); a backslash stays as it is.
- Line breaks become ``\\n`` (or stay real line breaks with ``keep_newlines=True`` for multi-line
  blocks such as a replayed response; carriage returns are still escaped).
- Lone surrogates become ``\\udxxx`` escapes, so the result always encodes as UTF-8.
"""

from __future__ import annotations

import unicodedata

__all__ = ["printable", "printable_line"]

# Categories shown as escapes: controls, format characters (bidi overrides, zero-width joiners),
# surrogates, unassigned and private-use code points.
# Line and paragraph separators break lines in some terminals, so they are escaped too.
_UNSAFE_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"})


def _escape(char: str) -> str:
    code = ord(char)
    if code < 0x100:
        return f"\\x{code:02x}"
    if code < 0x10000:
        return f"\\u{code:04x}"
    return f"\\U{code:08x}"


def printable(text: object, *, keep_newlines: bool = False, limit: int | None = None) -> str:
    r"""``text`` with every character a terminal could act on shown as a visible escape.

    Args:
        text: anything; non-strings go through ``str`` first.
        keep_newlines: keep ``\\n`` as a real line break (multi-line blocks); otherwise it is
            shown as ``\\n`` so the result is one line.
        limit: cut the result to at most this many characters, ending in ``…`` when cut.

    Returns:
        A string whose every character is printable (or a kept newline), safe to write to a
        terminal and always encodable as UTF-8.
    """
    value = text if isinstance(text, str) else str(text)
    out: list[str] = []
    for char in value:
        if char == "\n":
            out.append("\n" if keep_newlines else "\\n")
        elif char == "\t":
            out.append(" ")
        elif (category := unicodedata.category(char)) in _UNSAFE_CATEGORIES:
            out.append(_escape(char))
        elif category == "Zs":
            out.append(" ")  # no-break and other odd-width spaces: one plain space
        else:
            out.append(char)
    result = "".join(out)
    if limit is not None and len(result) > limit:
        result = result[: max(limit - 1, 0)] + "…"
    return result


def printable_line(text: object, limit: int | None = None) -> str:
    """:func:`printable` on one line (for table rows and progress lines)."""
    return printable(text, keep_newlines=False, limit=limit)
