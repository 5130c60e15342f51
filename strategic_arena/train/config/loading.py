"""Reading a training config: YAML files, ``--set`` overrides, old flat keys, pydantic.

Loading rules (:func:`load_config`):

1. read the YAML file's sections (old flat keys move into their sections with a warning,
   :mod:`.legacy`), on top of those of the file it ``extends``, if it names one
   (:func:`read_config_file`);
2. apply ``--set section.key=value`` overrides in order (``--set section=VALUE`` replaces a
   whole section; a value is read as YAML -- ``true``/``false``, ``null``, ``[a, b]``,
   ``{k: v}`` -- except that a field that takes text gets the text as written);
3. build the :class:`TrainConfig` with pydantic (types checked and converted: an unknown key
   is an error naming the nearest known one, a value of the wrong type an error naming its
   key), then check it (:func:`~.checks.validate`).

Why pydantic: it validates plain dataclasses as they are -- the sections other modules own
(rewards, the estimators, the bank, the answer and sampling settings) stay free of it -- with
errors that carry each problem's location and kind; it is maintained, typed and already in
the environment of every extra that trains (transformers' and vLLM's dependencies).
"""

from __future__ import annotations

import dataclasses
import difflib
import functools
import typing
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Union

from pydantic import TypeAdapter, ValidationError

from strategic_arena._extras import require
from strategic_arena.door import decode_yaml, read_yaml
from strategic_arena.train.config.checks import validate
from strategic_arena.train.config.errors import describe_error, unknown_key
from strategic_arena.train.config.estimator import switch_type
from strategic_arena.train.config.legacy import FLAT_KEYS, is_flat, translate
from strategic_arena.train.config.schema import TrainConfig
from strategic_arena.train.config.sections import OpponentConfig


def load_config(
    path: str | Path | None = None, overrides: Sequence[str] = (), *, check: bool = True
) -> TrainConfig:
    """Read a YAML config, apply ``section.key=value`` overrides, check it.

    Args:
        path: YAML file (``None``: start from the defaults).
        overrides: ``section.key=value`` strings, applied in order after the file.
        check: run :func:`~.checks.validate`.

    Raises:
        ValueError: an unknown key, a value that does not fit its field, or a failed check.
    """
    data = read_config_file(path) if path is not None else {}
    for item in overrides:
        data = apply_override(data, item)
    config = from_dict(data)
    if check:
        validate(config)
    return config


def _read_yaml(path: Path, shown: str | Path) -> dict[str, Any]:
    """A YAML file's mapping (``{}`` when empty); a one-line error where it is not one."""
    require("yaml", "YAML training configs")
    loaded = read_yaml(path, "config")
    if loaded is None:
        return {}
    if not isinstance(loaded, dict):
        raise ValueError(f"{shown}: a config file must be a YAML mapping of section: settings")
    return loaded


def read_config_file(path: str | Path, *, _seen: tuple[Path, ...] = ()) -> dict[str, Any]:
    """A config file's sections, those of the file it ``extends`` (recursively) beneath them.

    ``extends: other.yaml`` (a path relative to the file) starts from that file's settings;
    the file's own keys replace them one by one within each section (a mapping-valued setting
    such as ``eval.opponents`` is replaced whole; a new ``advantage.type`` drops the settings
    the new estimator lacks). An ablation is then its base run plus the settings it changes.

    Raises:
        ValueError: not valid YAML, not a YAML mapping, or a cycle of ``extends``.
    """
    resolved = Path(path).resolve()
    if resolved in _seen:
        raise ValueError(f"{path}: extends itself through {' -> '.join(map(str, _seen))}")
    loaded = _read_yaml(resolved, path)
    parent = loaded.pop("extends", None)
    loaded = translate(loaded)
    if parent is None:
        return loaded
    if not isinstance(parent, str):
        raise ValueError(f"{path}: extends must be the path of another config file")
    if not (resolved.parent / parent).is_file():
        raise ValueError(f"{path}: extends {parent!r}, which is not a file next to it")
    data = read_config_file(resolved.parent / parent, _seen=(*_seen, resolved))
    for name, value in loaded.items():
        data[name] = _merged(data.get(name), value)
    return data


def _section_data(value: Any) -> dict[str, Any]:
    """A section as a mutable mapping: ``null`` or absent is ``{}``, a bare name its ``type``."""
    if value is None:
        return {}
    if isinstance(value, str):  # a tagged section named by its type alone
        return {"type": value}
    return dict(value)


def _set_key(section: Mapping[str, Any], key: str, value: Any) -> dict[str, Any]:
    """``section`` with ``key`` set; a new ``type`` keeps only the settings the type has."""
    if key == "type":
        return switch_type(section, value)
    return {**section, key: value}


def _merged(base: Any, value: Any) -> Any:
    """A section of a file over the same section of the file it extends (key by key)."""
    if not isinstance(value, Mapping) or not isinstance(base, Mapping | str):
        return value
    merged = _section_data(base)
    if "type" in value:
        merged = _set_key(merged, "type", value["type"])
    for key, item in value.items():
        merged = _set_key(merged, str(key), item)
    return merged


_UnionType = type(int | None)


def _options(hint: Any) -> tuple[Any, ...]:
    """The types a field of type ``hint`` takes (the members of a union, else ``hint``)."""
    return typing.get_args(hint) if typing.get_origin(hint) in (Union, _UnionType) else (hint,)


def _section_class(name: str) -> type | None:
    """The dataclass of section ``name`` (``None``: no such section)."""
    for option in _options(_hints(TrainConfig).get(name)):
        if dataclasses.is_dataclass(option) and isinstance(option, type):
            return option
    return None


@functools.cache
def _hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)


def _takes_text(section: str, key: str) -> bool:
    """Whether ``section.key`` accepts a plain string (then ``--set`` passes the text as is)."""
    section_class = _section_class(section)
    if section_class is None:
        return False
    return str in _options(_hints(section_class).get(key))


def _parse_value(raw: str, text: bool, key: str) -> Any:
    """A ``--set`` value: the text itself for a text field, YAML otherwise."""
    if text and raw.lower() not in ("null", "none", "~") and not raw.startswith(("[", "{")):
        return raw
    if raw.lower() == "none":
        return None
    require("yaml", "--set overrides")
    return decode_yaml(raw, f"{key}: the value") if raw else ""


def apply_override(data: Mapping[str, Any], item: str) -> dict[str, Any]:
    """``data`` (a config as plain data) with one ``section.key=value`` override applied.

    ``section=VALUE`` replaces a section (``advantage=grpo``, ``bank=null``); an old flat key
    (``lr=1e-6``) is moved to its section with a warning; ``section.key.sub=VALUE`` reaches
    into a mapping-valued setting.

    Raises:
        ValueError: not ``key=value``, or a key that names no section.
    """
    key, sep, raw = item.partition("=")
    key, raw = key.strip(), raw.strip()
    if not sep or not key:
        raise ValueError(f"--set expects section.key=value, got {item!r}")
    section, _, rest = key.partition(".")
    if not rest:
        return _replace_section(data, key, raw)
    if _section_class(section) is None:
        raise ValueError(unknown_top_key(section))
    first, *deeper = rest.split(".")
    value = _parse_value(raw, not deeper and _takes_text(section, first), key)
    for part in reversed(deeper):
        value = {part: value}
    current = _section_data(data.get(section))
    if deeper and isinstance(current.get(first), Mapping):
        value = {**current[first], **value}
    return {**data, section: _set_key(current, first, value)}


def _replace_section(data: Mapping[str, Any], key: str, raw: str) -> dict[str, Any]:
    """``data`` with ``key=raw`` applied: a whole section, or an old flat key (with a warning)."""
    value = _parse_value(raw, False, key)
    if is_flat(key, value):
        section, _, inner = FLAT_KEYS[key].partition(".")
        moved = translate({key: _parse_value(raw, _takes_text(section, inner), key)})
        return {**data, section: _merged(data.get(section), moved[section])}
    # A section, or a list-valued one (``policies``) replaced as a whole.
    if _section_class(key) is None and key not in _hints(TrainConfig):
        raise ValueError(unknown_top_key(key))
    return {**data, key: value}


def unknown_top_key(key: str) -> str:
    """The error of a top-level key that is neither a section nor an old flat key."""
    sections = [item.name for item in dataclasses.fields(TrainConfig)]
    near = [*sections, *FLAT_KEYS]
    close = difflib.get_close_matches(key, near, n=1)
    hint = ""
    if close:
        hint = f"did you mean {FLAT_KEYS.get(close[0], close[0])!r}?"
    return unknown_key(key, [], "training config", hint)


def _unknown(path: Sequence[int | str]) -> str:
    """The error of an unknown key at ``path`` (pydantic's location), with a suggestion."""
    key = str(path[-1])
    if len(path) == 1:
        return unknown_top_key(key)
    if "opponents" in path:
        known = [item.name for item in dataclasses.fields(OpponentConfig)]
        return unknown_key(key, known, "opponent")
    section = str(path[0])
    section_class = _section_class(section)
    known = [item.name for item in dataclasses.fields(section_class)] if section_class else []
    homes = [
        item.name
        for item in dataclasses.fields(TrainConfig)
        if item.name != section and key in _hints(_section_class(item.name) or object)
    ]
    elsewhere = f"did you mean {' or '.join(f'{home}.{key}' for home in homes)}?" if homes else ""
    return unknown_key(key, known, section, elsewhere)


@functools.cache
def _adapter() -> TypeAdapter[TrainConfig]:
    return TypeAdapter(TrainConfig)


def from_dict(data: Mapping[str, Any]) -> TrainConfig:
    """A :class:`TrainConfig` from plain data (sections; old flat keys with a warning).

    Raises:
        ValueError: one line naming every problem: unknown keys (with the nearest known one),
            values of the wrong type (with their key).
    """
    try:
        return _adapter().validate_python(translate(data))
    except ValidationError as error:
        raise ValueError(
            "invalid training config: " + describe_error(error, unknown=_unknown)
        ) from None
