"""The door's one error: input refused, in one printable line that holds no secret."""

from __future__ import annotations


class Refused(ValueError):
    """Input from outside refused: a file, a connection string, a setting or a number.

    A ``ValueError``, so every command that already turns bad input into a one-line message
    and exit 2 does the same for these. The message is one line, made printable, and never
    repeats a part of the input that could be a secret (a password, a key).
    """
