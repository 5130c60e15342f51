"""Prompt sets: the package's prompt templates, or a user's folder that overrides some of them.

A prompt set is a folder laid out like the package's ``prompts/``::

    system.txt  user.txt             the two messages' layout
    styles/<style>.txt               a style's response-format instructions
    <game>/rules.txt                 a game's rules (kuhn_poker, leduc_poker, tic_tac_toe...)
    <game>/system.txt, user.txt, <style>.txt   a game's own layout or format

Each file it has replaces the package's; every other file falls back to the package's
(:meth:`PromptSet.text`). ``system.txt`` and ``user.txt`` may use every placeholder of both
messages (``$title $role $rules $format $history $observation $actions $instruction``, and
``$view``: the seat's view alone, without the ``# Your view`` heading of ``$observation``); a
system template that renders empty sends no system message (SPIRAL puts everything in the
user turn). Loading checks every file (:meth:`PromptSet.load`): an unknown file name or
placeholder is an error that names it, not a failure in the middle of a run.

A set reads only what its folder holds, since its text goes to the endpoint and into the
store: regular files, no symbolic link anywhere in it (``rules.txt -> /proc/self/environ``
would send the environment, API keys included), each at most :data:`MAX_PROMPT_FILE_BYTES`
of UTF-8; a folder that cannot be read is an error, never a silently smaller set.

A set is recorded as ``{"name", "digest"}`` (:meth:`PromptSet.record`): its folder's name and a
SHA-256 of files (paths and bytes). The record stored with every game carries the game's
*prompt version*: the digest of the files that game reads (layouts, styles, its own folder),
so a changed prompt is a new version of the games that read it and of no other. A user set's
whole digest is also part of the model player's identity, so results of different sets never
pool; reports tell apart (or flag) games of one player and game played with different
versions. The package's own set is ``default``. Games stored before versions existed carry
the whole set's digest, which is their version as played.
"""

from __future__ import annotations

import functools
import os
from dataclasses import dataclass, field
from pathlib import Path
from string import Template

from strategic_arena.door import SIZE_CAPS, Refused, printable_line, read_text
from strategic_arena.prompt_files import (
    DEFAULT_NAME,
    NOT_PROMPTS,
    digest,
    game_version,
    package_files,
    package_root,
)

#: Placeholders of the message templates (``system.txt``, ``user.txt``).
MESSAGE_FIELDS = frozenset(
    {"title", "role", "rules", "format", "history", "observation", "view", "actions", "instruction"}
)
#: Placeholders of a style's response-format template.
FORMAT_FIELDS = frozenset({"written_as", "example", "example_id"})
#: The largest file a prompt set may hold (a game's rules are a few KiB).
MAX_PROMPT_FILE_BYTES = SIZE_CAPS["prompt"]


@dataclass(frozen=True)
class PromptSet:
    """The prompt templates in use: the package's, overridden by the files under ``root``.

    Attributes:
        name: ``default`` for the package's own set, else the folder's name.
        digest: SHA-256 (hex) of the set's files: relative paths and contents.
        root: the user's folder; ``None`` for the package's set.
        files: the folder's prompt files as read when loading (relative path, text): what
            the digest covers is what is rendered, even if the folder changes afterwards.
    """

    name: str
    digest: str
    root: Path | None = None
    files: tuple[tuple[str, str], ...] = field(default=(), repr=False)

    @classmethod
    def load(cls, folder: str | Path) -> PromptSet:
        """The set in ``folder``, checked; ``ValueError`` naming the first problem."""
        root = Path(folder).expanduser()
        if not root.is_dir():
            raise ValueError(f"prompt set {str(folder)!r}: no such folder")
        files = set_files(root)
        known_dirs = _package_dirs()
        texts = tuple((relative, _check_file(root, relative, known_dirs)) for relative in files)
        return cls(root.resolve().name or "prompts", digest(texts), root.resolve(), texts)

    @property
    def is_default(self) -> bool:
        """Whether this is the package's own set (no user folder)."""
        return self.root is None

    @property
    def label(self) -> str:
        """``name@digest12``: short enough for names and reports, long enough to tell apart."""
        return f"{self.name}@{self.digest[:12]}"

    @functools.cached_property
    def _texts(self) -> dict[str, str]:
        """:attr:`files` by relative path."""
        return dict(self.files)

    def record(self, game: str | None = None) -> dict[str, str]:
        """What is stored with every game: ``{"name": ..., "digest": ...}``.

        With ``game`` (a prompt folder such as ``kuhn_poker``), the digest is that game's prompt
        version (:meth:`version`): what every game is stored with, so an edit of one game's
        prompt separates that game's results only. Without it, the whole set's digest.
        """
        return {"name": self.name, "digest": self.digest if game is None else self.version(game)}

    def version(self, game: str) -> str:
        """SHA-256 over the files a game with prompt folder ``game`` reads in this set.

        Those are the message layouts (``system.txt``, ``user.txt``), the styles and the
        game's own folder, each the set's file where it has one and the package's otherwise:
        two sets that render the same prompts for the game have the same version.
        """
        return game_version(self.files, game)

    def text(self, *parts: str) -> str | None:
        """The file ``prompts/<parts...>``: the user's if the set has it, else the package's."""
        own = self._texts.get("/".join(part for part in parts if part))
        if own is not None:
            return own
        package = package_root().joinpath(*parts)
        return read_text(package, "package") if package.is_file() else None


@functools.cache
def default_prompts() -> PromptSet:
    """The package's own prompt set (its digest computed once)."""
    return PromptSet(DEFAULT_NAME, digest(package_files()))


def load_prompts(folder: str | Path | None) -> PromptSet:
    """The set in ``folder``, or the package's own set when ``None``."""
    return default_prompts() if folder is None else PromptSet.load(folder)


@functools.lru_cache(maxsize=16)
def cached_prompts(folder: str | None) -> PromptSet:
    """:func:`load_prompts`, read once per folder (the trainer builds a player per game)."""
    return load_prompts(folder)


def set_files(root: Path) -> list[str]:
    """Relative paths (``/``-separated, sorted) of the prompt files of the user's set ``root``.

    Only what the folder itself holds: every folder under it must be readable (a game folder
    that cannot be read is an error, never an empty set) and no entry may be a symbolic link
    (``rules.txt -> /proc/self/environ`` would send the environment to the endpoint). Notes
    for people (``README``, ``LICENSE``, dot files) and Python files are skipped, as in the
    package's own folder (:func:`strategic_arena.prompt_files.prompt_files`).

    Raises:
        ValueError: a link or an unreadable folder; the message names it.
    """
    found = []

    def unreadable(error: OSError) -> None:
        where = Path(error.filename or root)
        shown = where.relative_to(root) if where.is_relative_to(root) else where
        raise ValueError(f"prompt set {root}: cannot read {shown}/ ({error.strerror})")

    for folder, dirs, names in os.walk(root, onerror=unreadable):  # links are not followed
        here = Path(folder)
        kept = [d for d in dirs if not _skipped(d)]
        dirs[:] = kept
        for name in sorted([*kept, *names]):
            path = here / name
            relative = path.relative_to(root).as_posix()
            if _skipped(name) or name.endswith(".py"):
                continue
            if path.is_symlink():
                raise ValueError(
                    f"prompt set {root}: {relative} is a symbolic link; a prompt set holds "
                    "regular files only (copy the file into the folder)"
                )
            if name in names:
                found.append(relative)
    return sorted(found)


def _skipped(name: str) -> bool:
    """Whether a file or folder of a set is not a prompt (notes for people, caches)."""
    return name.startswith(NOT_PROMPTS) or name == "__pycache__"


def _read_prompt_file(root: Path, relative: str) -> str:
    """The text of ``root/relative``: a regular file (no link) of UTF-8, under the size cap.

    Opened without following a link and checked on the open file, so a file swapped for a
    link, a FIFO or a device after :func:`set_files` looked at it is refused all the same.
    """
    try:
        return read_text(root / relative, "prompt", within=root)
    except Refused as error:
        raise Refused(f"prompt set {printable_line(root)}: {error}") from None


@functools.cache
def _package_dirs() -> frozenset[str]:
    """The game folders of the package's prompts (plus ``generic``, for OpenSpiel games)."""
    root = package_root()
    folders = {entry.name for entry in root.iterdir() if entry.is_dir()}
    return frozenset((folders - {"styles", "__pycache__"}) | {"generic"})


def _check_file(root: Path, relative: str, game_dirs: frozenset[str]) -> str:
    """The file's text; refuses a file the package never reads or unknown placeholders."""
    from strategic_arena.styles import style_names

    parts = relative.split("/")
    style_files = {f"{name}.txt" for name in style_names()}
    where = f"prompt set {root}: {relative}"
    if len(parts) == 1 and parts[0] in ("system.txt", "user.txt"):
        fields = MESSAGE_FIELDS
    elif len(parts) == 2 and parts[0] == "styles" and parts[1] in style_files:
        fields = FORMAT_FIELDS
    elif len(parts) == 2 and parts[0] in game_dirs and parts[1] == "rules.txt":
        fields = None  # plain text, not a template
    elif len(parts) == 2 and parts[0] in game_dirs and parts[1] in ("system.txt", "user.txt"):
        fields = MESSAGE_FIELDS
    elif len(parts) == 2 and parts[0] in game_dirs and parts[1] in style_files:
        fields = FORMAT_FIELDS
    else:
        raise ValueError(
            f"{where}: not a prompt file; a set holds system.txt, user.txt, "
            f"styles/<style>.txt and <game>/rules.txt|system.txt|user.txt|<style>.txt, with "
            f"games {', '.join(sorted(game_dirs))} and styles {', '.join(style_names())}"
        )
    text = _read_prompt_file(root, relative)
    if fields is None:
        return text
    names = set()
    for match in Template.pattern.finditer(text):  # Python 3.10 has no get_identifiers()
        if match.group("invalid") is not None:
            raise ValueError(
                f"{where}: a '$' that is no placeholder (write '$$' for a dollar sign)"
            )
        names.add(match.group("named") or match.group("braced"))
    unknown = sorted(names - {None} - fields)
    if unknown:
        raise ValueError(
            f"{where}: unknown placeholder(s) {', '.join('$' + name for name in unknown)}; "
            f"this file may use {', '.join('$' + name for name in sorted(fields))}"
        )
    return text
