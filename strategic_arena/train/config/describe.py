"""The config's help: every section and field with its type, default and docstring.

Each field is documented once, by the docstring under it in its section's class or its
``Attributes:`` entry (read by :func:`strategic_arena.field_docs.field_docs`);
``strategic-arena train --help`` and the reference in docs/training.md are made from
:func:`describe_fields`, so the two cannot drift from the code.
"""

from __future__ import annotations

import dataclasses
import re
import textwrap
import typing
from types import SimpleNamespace
from typing import Any

from strategic_arena.door import read_text
from strategic_arena.field_docs import field_docs
from strategic_arena.train.algo.estimators import EstimatorConfig
from strategic_arena.train.config.schema import TrainConfig


def _type_name(kind: Any) -> str:
    text = str(kind) if not isinstance(kind, type) else kind.__name__
    text = re.sub(r"\b[a-z_]+(\.[a-z_]+)*\.(?=[A-Za-z])", "", text.replace("typing.", ""))
    return text


def _shown(value: Any) -> str:
    if isinstance(value, list | tuple | dict) and not value:
        return "[]" if isinstance(value, list | tuple) else "{}"
    return repr(list(value) if isinstance(value, tuple) else value)


def _field_lines(
    config_class: type, defaults: Any, prefix: str, width: int, skip: frozenset[str] = frozenset()
) -> list[str]:
    """One entry per field: ``prefix.name (type, default D)`` and its wrapped docstring."""
    docs, hints, lines = field_docs(config_class), typing.get_type_hints(config_class), []
    for item in dataclasses.fields(config_class):
        if item.name in skip:
            continue
        default = _shown(getattr(defaults, item.name))
        lines.append(f"    {prefix}{item.name} ({_type_name(hints[item.name])}, default {default})")
        lines += textwrap.wrap(
            docs.get(item.name, ""), width=width, initial_indent=" " * 8, subsequent_indent=" " * 8
        )
    return lines


def _estimator_lines(width: int) -> list[str]:
    """The settings of every registered estimator, each estimator's own under its name."""
    from strategic_arena.train.algo.estimators import names, registered

    base = EstimatorConfig()
    shared = [item.name for item in dataclasses.fields(EstimatorConfig)]
    lines = ["    every estimator:"]
    lines += _field_lines(EstimatorConfig, base, "advantage.", width)
    for name in names():
        config_class: type = registered(name).config_class  # field_docs caches by class
        lines.append(
            f"    advantage: {{type: {name}}} -- {field_docs(config_class).get('type', '')}"
        )
        defaults = config_class()
        # A shared setting is shown again only where this estimator changes its default.
        same = {key for key in shared if getattr(defaults, key) == getattr(base, key)}
        lines += _field_lines(
            config_class, defaults, "advantage.", width, frozenset(same | {"type"})
        )
    return lines


class _Required:
    """The default shown for a field an entry must give."""

    def __repr__(self) -> str:
        return "required"


def _entry_defaults(entry: type) -> Any:
    """Each field's default of a list entry's dataclass (``required`` where it has none)."""
    values: dict[str, Any] = {}
    for item in dataclasses.fields(entry):
        if item.default is not dataclasses.MISSING:
            values[item.name] = item.default
        elif item.default_factory is not dataclasses.MISSING:
            values[item.name] = item.default_factory()
        else:
            values[item.name] = _Required()
    return SimpleNamespace(**values)


def describe_fields(width: int = 100) -> str:
    """Every section of :class:`TrainConfig` and its fields, for ``--help`` and the docs."""
    defaults, docs, lines = TrainConfig(), field_docs(TrainConfig), []
    for item in dataclasses.fields(TrainConfig):
        optional = getattr(defaults, item.name) is None
        lines.append(
            f"  {item.name}:" + (" (default null: off; when set, these fields)" if optional else "")
        )
        lines += textwrap.wrap(
            docs.get(item.name, ""), width=width, initial_indent="    ", subsequent_indent="    "
        )
        if item.name == "advantage":
            lines += _estimator_lines(width)
            continue
        section = getattr(defaults, item.name)
        if isinstance(section, list):  # a list of mappings (policies): one entry's fields
            entry = typing.get_args(typing.get_type_hints(TrainConfig)[item.name])[0]
            lines += _field_lines(entry, _entry_defaults(entry), f"{item.name}[].", width)
            continue
        if section is None:  # an optional section (bank, maporl): its fields' defaults when on
            hint = typing.get_type_hints(TrainConfig)[item.name]
            kind: Any = next(a for a in typing.get_args(hint) if dataclasses.is_dataclass(a))
            section = kind()
        lines += _field_lines(type(section), section, f"{item.name}.", width)
    return "\n".join(lines)


#: The lines around the generated reference in docs/training.md.
REFERENCE_START = (
    "<!-- config reference: python -m strategic_arena.train.config reference docs/training.md -->"
)
REFERENCE_END = "<!-- end of config reference -->"


def reference_block() -> str:
    """The generated reference of docs/training.md: :func:`describe_fields` in a text block."""
    return f"{REFERENCE_START}\n\n```text\n{describe_fields()}\n```\n\n{REFERENCE_END}"


def write_reference(path: str) -> None:
    """Replace the generated reference between its markers in the markdown file ``path``."""
    text = read_text(path, "config")
    before, _, rest = text.partition(REFERENCE_START)
    _, _, after = rest.partition(REFERENCE_END)
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(before + reference_block() + after)
