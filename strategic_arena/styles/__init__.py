r"""The answer styles: how a model writes its move, and how the arena reads it back.

Each style is a small object (:class:`~strategic_arena.styles.base.AnswerStyle`) in one module:

* ``marshal`` -- ``<think>...</think><answer>MOVE</answer>`` (:mod:`.marshal`, MARSHAL);
* ``boxed`` -- reasoning, then ``\boxed{MOVE}`` (:mod:`.boxed`);
* ``json`` -- ``{"reasoning": ..., "action": "MOVE"}`` (:mod:`.json`);
* ``tools`` -- a call of the ``play(move)`` tool (:mod:`.tools`);
* ``spiral`` -- SPIRAL's parser: the last ``\boxed{}`` wins, no reasoning needed
  (:mod:`.spiral`);
* ``spin_bench`` -- SPIN-Bench's ``{"reason": ..., "action": ID}`` (:mod:`.spin_bench`).

:func:`strategic_arena.validate`, the prompts, the model player, the solver endpoint, the
integrations and the trainer all go through :func:`get_style`; nothing else knows a style by
its name.

**Adding a style.** Write a module here with a subclass of ``AnswerStyle`` (set ``name``,
``answer_hint``, ``reasoning_hint``; implement ``extract`` and ``answer_block``; override the
other methods where the defaults do not fit), add its response-format template as
``prompts/styles/<name>.txt`` (placeholders ``$written_as``, ``$example`` and
``$example_id``), and call :func:`register` with an instance -- below for a built-in style,
or from your own code. ``tests/test_prompting.py`` then checks that the template's example
validates in the new style (``--update-golden`` writes its golden prompts) and
``tests/test_styles.py`` that it reads back the answers it writes.
"""

from __future__ import annotations

from strategic_arena.styles.base import AnswerStyle, Extracted
from strategic_arena.styles.boxed import BoxedStyle
from strategic_arena.styles.json import JsonStyle
from strategic_arena.styles.marshal import MarshalStyle
from strategic_arena.styles.spin_bench import SpinBenchStyle
from strategic_arena.styles.spiral import SpiralStyle
from strategic_arena.styles.tools import ToolsStyle

__all__ = [
    "STYLES",
    "AnswerStyle",
    "Extracted",
    "get_style",
    "register",
    "style_names",
]

_REGISTRY: dict[str, AnswerStyle] = {}


def register(style: AnswerStyle) -> AnswerStyle:
    """Add ``style`` to the registry under its name (a name already taken is an error)."""
    if style.name in _REGISTRY:
        raise ValueError(f"an answer style named {style.name!r} is already registered")
    _REGISTRY[style.name] = style
    return style


def get_style(style: str | AnswerStyle) -> AnswerStyle:
    """The registered style named ``style`` (a style object is returned as it is)."""
    if isinstance(style, AnswerStyle):
        return style
    found = _REGISTRY.get(style) if isinstance(style, str) else None
    if found is None:
        raise ValueError(f"unknown style {style!r}; choose one of {', '.join(style_names())}")
    return found


def style_names() -> tuple[str, ...]:
    """The registered styles' names, in registration order."""
    return tuple(_REGISTRY)


for _style in (
    MarshalStyle(),
    BoxedStyle(),
    JsonStyle(),
    ToolsStyle(),
    SpiralStyle(),
    SpinBenchStyle(),
):
    register(_style)

#: The built-in styles' names (:func:`style_names` also lists styles registered later).
STYLES: tuple[str, ...] = style_names()
