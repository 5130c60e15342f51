"""Public names that a package imports from their modules on first use (PEP 562).

A package whose ``__init__`` imports everything makes every caller pay for every dependency:
the learner, which needs only torch and numpy, would load OpenSpiel through the package root
and pydantic through the config package (a bare GPU machine has neither). Such a package
keeps a table of its public names and their modules and answers ``__getattr__`` from it.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from typing import Any


def lazy_attribute(
    package: str, homes: Mapping[str, str], namespace: dict[str, Any], name: str
) -> Any:
    """``package``'s public ``name``, imported from the module ``homes`` names, then cached.

    Args:
        package: the package's ``__name__``.
        homes: each public name -> the module (relative to ``package``) that defines it.
        namespace: the package's ``globals()``, where the value is cached for the next use.
        name: the attribute asked for.

    Raises:
        AttributeError: ``name`` is not one of the package's public names.
    """
    home = homes.get(name)
    if home is None:
        raise AttributeError(f"module {package!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{package}.{home}"), name)
    namespace[name] = value
    return value
