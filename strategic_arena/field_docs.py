"""Field docstrings: the string literal under each field of a dataclass, read from its source.

A settings class documents each field once, in the docstring under it (as PEP 257's attribute
docstrings, which pydantic reads with ``use_attribute_docstrings``); the CLI's ``--help`` and
the config docs are made from :func:`field_docs`, so no text about a setting is written twice.
"""

from __future__ import annotations

import ast
import functools
import inspect
import itertools
import textwrap


@functools.cache
def field_docs(cls: type) -> dict[str, str]:
    """Each field's docstring (the string literal under it in the class body), one line each.

    A class without shipped source gives ``{}`` (help without descriptions, never an error).
    """
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
