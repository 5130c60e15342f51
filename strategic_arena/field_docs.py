"""Field docs: the text under each field of a dataclass, read from its source and docstring.

A settings class documents each field once, in the docstring under it (as PEP 257's attribute
docstrings, which pydantic reads with ``use_attribute_docstrings``) or in its docstring's
Google-style ``Attributes:`` section; the CLI's ``--help`` and the config docs are made from
:func:`field_docs`, so no text about a setting is written twice.
"""

from __future__ import annotations

import ast
import dataclasses
import functools
import inspect
import itertools
import re
import textwrap

#: An ``Attributes:`` entry of a Google-style class docstring: ``name: text``.
_ATTRIBUTE = re.compile(r"^\s{4,8}(\w+): (.*)$")


@functools.cache
def field_docs(cls: type) -> dict[str, str]:
    """Each field's documentation, one line each (a subclass's text wins over its bases').

    The docstring under the field (the string literal under it in the class body), or its entry
    in the class's ``Attributes:`` section; the class itself and each dataclass among its bases
    are read. A class without shipped source gives only its ``Attributes:`` entries (help
    without descriptions, never an error).
    """
    docs: dict[str, str] = {}
    for base in reversed(cls.__mro__):
        if base is cls or dataclasses.is_dataclass(base):
            docs.update(_attributes_section(base))
            docs.update(_attribute_docstrings(base))
    return docs


def _attribute_docstrings(cls: type) -> dict[str, str]:
    """The docstring under each field in the body of ``cls`` itself (``{}`` without source)."""
    try:
        source = inspect.getsource(cls)
    except (OSError, TypeError):
        return {}
    tree = ast.parse(textwrap.dedent(source))
    body = tree.body[0].body if tree.body and isinstance(tree.body[0], ast.ClassDef) else []
    docs: dict[str, str] = {}
    for node, after in itertools.pairwise(body):
        if (
            isinstance(node, ast.AnnAssign)
            and isinstance(node.target, ast.Name)
            and isinstance(after, ast.Expr)
            and isinstance(after.value, ast.Constant)
            and isinstance(after.value.value, str)
        ):
            docs[node.target.id] = " ".join(after.value.value.split())
    return docs


def _attributes_section(cls: type) -> dict[str, str]:
    """Field docs from the ``Attributes:`` section of the class docstring (Google style)."""
    doc = inspect.getdoc(cls) or ""
    _, found, tail = doc.partition("Attributes:\n")
    docs: dict[str, str] = {}
    current = ""
    for line in tail.splitlines() if found else []:
        match = _ATTRIBUTE.match(line)
        if match and len(line) - len(line.lstrip()) <= 4:
            current = match.group(1)
            docs[current] = match.group(2)
        elif current and line.strip():
            docs[current] += " " + line.strip()
        elif not line.strip() and current:
            break
    return docs
