"""Rewrite a flat training config (every key at the top level) into sections, keeping comments.

``python -m strategic_arena.train.config migrate FILE...`` rewrites each file in place. The
text is moved, not re-dumped: each top-level ``key: value`` line, with the lines that continue
its value (a block list or mapping) and the comment lines right above it, goes under its
section (:data:`~strategic_arena.train.config.legacy.FLAT_KEYS`), renamed and indented by two
spaces; sections come in the order of :class:`TrainConfig`. The file's opening comment and an
``extends`` line stay on top. A file that loads the same before and after is the check
(``tests/train/test_train_config.py``).
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass, field
from pathlib import Path

from strategic_arena.door import read_text
from strategic_arena.train.config.legacy import FLAT_KEYS
from strategic_arena.train.config.schema import TrainConfig

#: A top-level ``key:`` line.
_KEY = re.compile(r"^([A-Za-z_]\w*):(.*)$")


@dataclass
class _Entry:
    """One top-level key: its comment lines above, its line, the lines that continue it."""

    key: str
    rest: str
    comments: list[str] = field(default_factory=list)
    continued: list[str] = field(default_factory=list)


def _entries(text: str) -> tuple[list[str], list[_Entry]]:
    """The file's opening lines (before the first key) and its top-level entries."""
    header: list[str] = []
    entries: list[_Entry] = []
    pending: list[str] = []
    for line in text.splitlines():
        match = _KEY.match(line)
        if match:
            entries.append(_Entry(match.group(1), match.group(2), pending))
            pending = []
        elif not entries:
            header.append(line)
        elif not line.strip() or line.startswith("#"):
            pending = [] if not line.strip() else [*pending, line]
        else:  # a line of the value above (comment lines inside it stay with it)
            entries[-1].continued += [*pending, line]
            pending = []
    return header, entries


def _home(entry: _Entry) -> tuple[str, str | None]:
    """``(section, key)`` of an entry; key ``None``: the entry is a whole section already."""
    target = FLAT_KEYS.get(entry.key)
    block = not entry.rest.strip() and entry.continued
    nested = block and not entry.continued[0].lstrip().startswith("-")
    if target is None or (target.startswith(f"{entry.key}.") and nested):
        return entry.key, None
    section, _, key = target.partition(".")
    return section, key


def migrate_text(text: str) -> str:
    """``text`` (a YAML config with flat keys) with every flat key moved into its section."""
    header, entries = _entries(text)
    while header and not header[-1].strip():
        header.pop()
    out = list(header)
    sections: dict[str, list[tuple[str | None, _Entry]]] = {}
    for entry in entries:
        if entry.key == "extends":
            out += [*entry.comments, f"extends:{entry.rest}", *entry.continued]
            continue
        section, key = _home(entry)
        sections.setdefault(section, []).append((key, entry))
    order = [item.name for item in dataclasses.fields(TrainConfig)]
    for section in sorted(sections, key=lambda name: order.index(name) if name in order else 99):
        out.append("")
        out += _section_lines(section, sections[section])
    return "\n".join(out).strip("\n") + "\n"


def _section_lines(section: str, entries: list[tuple[str | None, _Entry]]) -> list[str]:
    """One section's lines: a whole section as written, else ``section:`` and its keys."""
    if len(entries) == 1 and entries[0][0] is None:
        entry = entries[0][1]
        return [*entry.comments, f"{entry.key}:{entry.rest}", *entry.continued]
    if any(key is None for key, _ in entries):
        raise ValueError(
            f"{section} is given both as a section and as flat keys: merge them by hand"
        )
    lines = [f"{section}:"]
    for key, entry in entries:
        lines += [f"  {line}" for line in entry.comments]
        lines.append(f"  {key}:{entry.rest}")
        lines += [f"  {line}" for line in entry.continued]
    return lines


def migrate_file(path: str | Path) -> bool:
    """Rewrite ``path`` in sections; whether anything changed."""
    path = Path(path)
    text = read_text(path, "config")
    migrated = migrate_text(text)
    if migrated != text:
        path.write_text(migrated, encoding="utf-8")
    return migrated != text
