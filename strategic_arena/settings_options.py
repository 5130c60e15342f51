"""Command-line options made from the settings objects: one option per field, help from its doc.

:class:`~strategic_arena.asking.Asking` and :class:`~strategic_arena.asking.Sampling` document
each field once; :func:`add_settings_options` turns every field into an option whose help is
that docstring (:func:`strategic_arena.field_docs.field_docs`), whose type comes from the
annotation (a boolean gets ``--x/--no-x``, a ``Literal`` or the style its choices, a mapping a
JSON object, a tuple a repeatable option) and whose default is *unset*: :func:`settings_from_args`
applies only the options given, over a base (the defaults, or a checkpoint's settings file), so
``eval --settings CKPT --temperature 0`` changes that one field.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import re
import types
import typing
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal, TypeVar, Union, get_args, get_origin

from strategic_arena.asking import Asking, Sampling, settings_from_dict, settings_to_dict
from strategic_arena.door import decode
from strategic_arena.field_docs import field_docs
from strategic_arena.styles import style_names

Settings = TypeVar("Settings", Asking, Sampling)


@dataclass(frozen=True)
class Flag:
    """How one settings field is spelled on the command line.

    Attributes:
        name: the option (``--history``); default ``--`` and the field name with dashes.
        metavar: the value's placeholder in the help.
        note: help text for the command line only, after the field's doc.
        aliases: more options setting the field to a fixed value (``--lenient``: strict off).
    """

    name: str | None = None
    metavar: str | None = None
    note: str = ""
    aliases: tuple[tuple[str, Any, str], ...] = ()


#: The options whose spelling is not the field's name (kept from before the settings objects).
ASKING_FLAGS: Mapping[str, Flag] = {
    "include_history": Flag("--history"),
    "strict": Flag(aliases=(("--lenient", False, "the same as --no-strict"),)),
    "prompts": Flag(metavar="DIR", note="(e.g. examples/prompts/spiral)"),
    "chat_template_kwargs": Flag(metavar="JSON"),
    "extra_body": Flag(metavar="JSON"),
    "response_prefix": Flag(metavar="TEXT"),
}
SAMPLING_FLAGS: Mapping[str, Flag] = {
    "seed": Flag("--sampling-seed"),
    "stop": Flag(metavar="TEXT", note="(repeat the option for several)"),
}


def json_object(text: str) -> dict[str, Any]:
    """A command-line JSON object (``--chat-template-kwargs``, ``--extra-body``)."""
    try:
        value = decode(text, "the option's value")
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None
    if not isinstance(value, dict):
        raise argparse.ArgumentTypeError(f"expected a JSON object {{...}}, got {text!r}")
    return value


#: A comma between two ``KEY=VALUE`` pairs: not inside a JSON list (``stop=["a,b"]``).
_PAIR_COMMA = re.compile(r",(?![^\[]*\])")


def game_sampling_option(text: str) -> tuple[str, Sampling]:
    """``ENV_ID:KEY=VALUE,...``: a game and sampling of its own (``eval --game-sampling``).

    Each key is a :class:`~strategic_arena.asking.Sampling` field; a value is read as JSON
    where it is JSON (``0.7``, ``40``, ``["</answer>"]``), else as text. The fields are checked
    as a settings file's are (:func:`~strategic_arena.asking.settings_from_dict`: unknown keys
    refused with the nearest known one, types and ranges named), so the command line and the
    files share one reader.

    Raises:
        argparse.ArgumentTypeError: one line saying what is wrong.
    """
    env_id, colon, pairs = text.partition(":")
    items = [pair.strip() for pair in _PAIR_COMMA.split(pairs) if pair.strip()]
    if not colon or not env_id.strip() or not items or not all("=" in i for i in items):
        raise argparse.ArgumentTypeError(
            f"expected ENV_ID:KEY=VALUE[,KEY=VALUE...] (e.g. kuhn_poker-v0:temperature=0.7,"
            f"top_k=40), got {text!r}"
        )
    data: dict[str, Any] = {}
    for item in items:
        key, _, value = item.partition("=")
        try:
            data[key.strip()] = decode(value, key.strip())
        except ValueError:
            data[key.strip()] = value.strip()
    try:
        return env_id.strip(), settings_from_dict(Sampling, data, env_id.strip())
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def game_sampling_text(env_id: str, sampling: Sampling) -> str:
    """The ``--game-sampling`` value giving ``env_id`` the set fields of ``sampling``.

    :func:`game_sampling_option` reads it back to the same settings (the trainer prints it in
    the ``eval`` command of a checkpoint whose evaluation sampled per game).
    """
    pairs = [
        f"{name}={json.dumps(value)}"
        for name, value in settings_to_dict(sampling).items()
        if value not in (None, [])
    ]
    return f"{env_id}:{','.join(pairs)}"


def _field_default(item: dataclasses.Field[Any]) -> Any:
    """A settings field's default, read from the class: no instance is made.

    Making one would check every value, which imports the styles and the turn (OpenSpiel,
    numpy) -- more than a parser, ``eval --help`` included, needs; the defaults are valid.
    """
    if item.default_factory is not dataclasses.MISSING:
        return item.default_factory()
    return item.default


def add_settings_options(
    group: argparse._ArgumentGroup,
    cls: type[Asking] | type[Sampling],
    flags: Mapping[str, Flag],
    notes: Mapping[str, str] | None = None,
) -> None:
    """Add one option per field of ``cls`` to ``group`` (see the module docstring).

    ``notes`` adds command-specific text to a field's help (``max_tokens``' default for an
    endpoint, say). Every option's destination is ``<class>_<field>`` and its default unset.
    """
    owner: type = cls  # field_docs caches by class
    docs = field_docs(owner)
    hints = typing.get_type_hints(cls)
    for item in dataclasses.fields(cls):
        flag = flags.get(item.name, Flag())
        option = flag.name or "--" + item.name.replace("_", "-")
        dest = _dest(cls, item.name)
        default = _field_default(item)
        shown = "" if default in (None, "", (), {}) else f" (default: {_shown(default)})"
        extra = " ".join(t for t in (flag.note, (notes or {}).get(item.name, "")) if t)
        text = docs.get(item.name, "") + (f" {extra}" if extra else "") + shown
        kwargs: dict[str, Any] = {"dest": dest, "default": None, "help": text.replace("%", "%%")}
        kwargs["metavar"] = flag.metavar or item.name.upper()
        hint = _without_none(hints[item.name])
        if hint is bool:
            kwargs["action"] = argparse.BooleanOptionalAction
            kwargs.pop("metavar", None)
        elif item.name == "style" and cls is Asking:
            kwargs["choices"] = style_names()
            kwargs.pop("metavar")
        elif get_origin(hint) is Literal:
            kwargs["choices"] = list(get_args(hint))
            kwargs.pop("metavar")
        elif get_origin(hint) is tuple:
            kwargs["action"] = "append"
        elif get_origin(hint) is not None:  # a mapping
            kwargs["type"] = json_object
        else:
            kwargs["type"] = hint
        group.add_argument(option, **kwargs)
        for alias, value, alias_help in flag.aliases:
            group.add_argument(alias, dest=dest, action="store_const", const=value, help=alias_help)


def settings_from_args(args: argparse.Namespace, base: Settings) -> Settings:
    """``base`` with every option of :func:`add_settings_options` that was given applied.

    Raises:
        ValueError: a value the field refuses (one line, naming it).
    """
    cls = type(base)
    given = {
        item.name: value
        for item in dataclasses.fields(cls)
        if (value := getattr(args, _dest(cls, item.name), None)) is not None
    }
    if "stop" in given:
        given["stop"] = tuple(given["stop"])
    return dataclasses.replace(base, **given)


def _dest(cls: type, name: str) -> str:
    return f"{cls.__name__.lower()}_{name}"


def _without_none(hint: Any) -> Any:
    """``X`` of ``X | None``; any other annotation as it is."""
    if get_origin(hint) not in (Union, types.UnionType):
        return hint
    options = [option for option in get_args(hint) if option is not type(None)]
    return options[0] if len(options) == 1 else hint


def _shown(value: Any) -> str:
    if isinstance(value, bool):
        return "on" if value else "off"
    return str(value)
