"""The package's prompt files and their digests: what a prompt version is computed from.

A *prompt version* is the SHA-256 of the files one game reads -- the message layouts
(``system.txt``, ``user.txt``), the styles (``styles/*``) and the game's own folder -- each
file's relative path and UTF-8 bytes in path order. Editing one game's rules is a new version
of that game and no other; editing a style or a layout is a new version of every game. The
game's spec (:attr:`strategic_arena.games.GameSpec.prompt_version`) and the prompt sets
(:mod:`strategic_arena.prompt_sets`) both compute versions here, so they agree.

The package's prompt files live in the checkout's top-level ``prompts/``, beside
``strategic_arena/`` and ``opponents/``; a wheel installs them as ``strategic_arena/prompts/``
(``setup.py`` maps the one folder to the other). :func:`package_root` finds them either way, and
a version depends only on paths relative to that folder, so it is the same in both.
"""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Iterable
from pathlib import Path

from strategic_arena.door import read_text

#: The name of the package's own prompt set.
DEFAULT_NAME = "default"
#: Files of a user folder that are not prompts (notes for people).
NOT_PROMPTS = ("README", "LICENSE", ".")


@functools.cache
def package_root() -> Path:
    """The folder of the package's prompt files.

    ``strategic_arena/prompts/`` where a wheel installed them, else the top-level ``prompts/``
    beside the package (a checkout: an editable install or ``PYTHONPATH``).

    Raises:
        FileNotFoundError: neither holds the prompts (a broken installation).
    """
    package = Path(__file__).resolve().parent
    candidates = (package / "prompts", package.parent / "prompts")
    for root in candidates:
        if (root / "system.txt").is_file():
            return root
    raise FileNotFoundError(
        f"the package's prompt files are missing: looked in {', '.join(map(str, candidates))}"
    )


def prompt_files(root: Path) -> list[str]:
    """Relative paths (``/``-separated) of the prompt files under ``root``, sorted."""
    found = []
    for path in root.rglob("*"):
        relative = path.relative_to(root)
        if not path.is_file() or any(part.startswith(NOT_PROMPTS) for part in relative.parts):
            continue
        if path.suffix == ".py" or "__pycache__" in relative.parts:
            continue
        found.append(relative.as_posix())
    return sorted(found)


def digest(texts: Iterable[tuple[str, str]]) -> str:
    """SHA-256 over each file's relative path and UTF-8 bytes, in path order."""
    hasher = hashlib.sha256()
    for relative, text in sorted(texts):
        hasher.update(relative.encode("utf-8") + b"\0" + text.encode("utf-8") + b"\0")
    return hasher.hexdigest()


@functools.cache
def package_files() -> tuple[tuple[str, str], ...]:
    """The package's prompt files (relative path, text), read once."""
    root = package_root()
    return tuple((name, read_text(root / name, "package")) for name in prompt_files(root))


@functools.lru_cache(maxsize=256)
def game_version(own: tuple[tuple[str, str], ...], game: str) -> str:
    """The version of prompt folder ``game`` in a set whose own files are ``own``.

    ``own`` (relative path, text) override the package's files; ``()`` is the package's set.
    """
    merged = dict(package_files())
    merged.update(own)
    read = [
        (relative, text)
        for relative, text in merged.items()
        if "/" not in relative or relative.split("/")[0] in ("styles", game)
    ]
    return digest(read)


def default_version(game: str) -> dict[str, str]:
    """The record of the package's prompts for prompt folder ``game``, as stored with a game."""
    return {"name": DEFAULT_NAME, "digest": game_version((), game)}
