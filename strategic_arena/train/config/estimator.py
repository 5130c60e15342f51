"""The ``advantage`` section: a union tagged by ``type``, one config class per estimator.

The union is open (an estimator registered later is a valid ``type`` too), so the tag is read
here rather than by a union fixed at import: :func:`estimator_config` picks the registered
class (:meth:`EstimatorConfig.variant`) and lets pydantic check the rest against it.
:func:`switch_type` is the one rule of the union: choosing another ``type`` keeps the settings
the new estimator also has and drops the others (``rae``'s ``alpha`` means nothing to
``marshal``).
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Mapping
from typing import Any

from pydantic import TypeAdapter, ValidationError

from strategic_arena.train.algo.estimators import EstimatorConfig
from strategic_arena.train.config.errors import describe_error, unknown_key

#: The estimator a section without ``type`` configures (the trainer's default).
DEFAULT_TYPE = "marshal"


@functools.cache
def _adapter(config_class: type) -> TypeAdapter[Any]:
    return TypeAdapter(config_class)


def estimator_config(value: Any) -> EstimatorConfig:
    """An estimator's config from a mapping tagged by ``type`` (a bare name: its defaults).

    Raises:
        ValueError: no such estimator, an unknown key (with the nearest known one), or a value
            of the wrong type (one line, naming the key).
    """
    if isinstance(value, EstimatorConfig):
        return value
    if isinstance(value, str):
        value = {"type": value}
    if not isinstance(value, Mapping):
        raise ValueError(f"must be an estimator name or a mapping with a type, got {value!r}")
    name = value.get("type", DEFAULT_TYPE)
    config_class = EstimatorConfig.variant(name)
    known = [item.name for item in dataclasses.fields(config_class)]
    for key in value:
        if key not in known:
            raise ValueError(unknown_key(str(key), known, f"advantage (type {name})"))
    try:
        as_type: type = config_class  # cached by class
        config: EstimatorConfig = _adapter(as_type).validate_python({**value, "type": name})
    except ValidationError as error:
        raise ValueError(describe_error(error, "advantage")) from None
    return config


def switch_type(section: Mapping[str, Any], name: Any) -> dict[str, Any]:
    """``section`` (plain data) with its estimator set to ``name``.

    The settings the new estimator does not have are dropped.
    """
    if name == section.get("type", DEFAULT_TYPE):
        return {**section, "type": name}
    known = {item.name for item in dataclasses.fields(EstimatorConfig.variant(name))}
    return {**{k: v for k, v in section.items() if k in known}, "type": name}
