"""Chat messages for one decision, from the templates in ``prompts/`` and a :class:`SeatView`.

Templates are plain :class:`string.Template` files shipped in the package:

* ``prompts/system.txt`` and ``prompts/user.txt``: the layout of the two messages;
* ``prompts/styles/<style>.txt``: the response-format instructions of each style;
* ``prompts/<game>/rules.txt``: the rules of each curated game.

A game folder may override any of them (``prompts/<game>/system.txt``,
``prompts/<game>/marshal.txt``...). Every prompt states the rules, the seat's role, what it
sees, the legal actions (unless omitted) and the exact response format with an example.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from string import Template

from strategic_arena.games import GameSpec, get_spec
from strategic_arena.games.base import prompt_text
from strategic_arena.validation import STYLES, Style
from strategic_arena.views import SeatView

Message = dict[str, str]
"""An OpenAI chat message: ``{"role": ..., "content": ...}``."""


@functools.cache
def _template(folder: str, name: str, fallback_folder: str = "") -> Template:
    """``prompts/<folder>/<name>``, else ``prompts/<fallback_folder>/<name>``."""
    text = prompt_text(folder, name)
    if text is None:
        text = prompt_text(fallback_folder, name) if fallback_folder else None
    if text is None:
        import importlib.resources as resources

        path = resources.files("strategic_arena") / "prompts" / name
        if not path.is_file():
            raise FileNotFoundError(f"no prompt template {name!r} for prompts/{folder}")
        text = path.read_text(encoding="utf-8")
    return Template(text.strip("\n"))


def render_messages(
    env_id: str | GameSpec,
    view: SeatView,
    style: Style = "marshal",
    *,
    include_history: bool = False,
    list_legal_actions: bool = True,
    action_order: Sequence[int] | None = None,
) -> list[Message]:
    r"""The system and user messages asking ``view.seat`` for its move.

    Args:
        env_id: the game, or its spec (for ``openspiel/<name>`` games with parameters).
        view: what the seat sees (``env.seat_view(agent)``).
        style: ``"marshal"`` (``<think>``/``<answer>``), ``"boxed"`` (``\boxed{}``) or
            ``"json"``.
        include_history: add the public move history before the observation (SPIRAL's way
            of making a partially observed state Markov).
        list_legal_actions: list the legal actions; without the list the model must know the
            notation from the rules.
        action_order: the legal action ids in the order to list them (a permutation of
            ``view.legal_actions``; default: the game's canonical order); the format's example
            answer is then the first of them instead of the game's stock example. A small
            model copies the example and the first listed action; a seeded shuffle
            (``LLMPlayer(shuffle_actions=True)``) keeps those biases from always favouring
            the same move.
    """
    if style not in STYLES:
        raise ValueError(f"unknown style {style!r}; choose one of {', '.join(STYLES)}")
    spec = env_id if isinstance(env_id, GameSpec) else get_spec(env_id)
    written_as = (
        ", written exactly as in the list of legal actions"
        if list_legal_actions
        else ", written in the notation the rules describe"
    )
    if action_order is not None and sorted(action_order) != sorted(view.legal_actions):
        legal = sorted(view.legal_actions)
        raise ValueError(f"action_order {list(action_order)} is not an order of {legal}")
    example = view.legal_actions[action_order[0]] if action_order else _example(spec, view)
    style_text = _template(spec.prompt_dir, f"{style}.txt", "styles").substitute(
        written_as=written_as, example=example
    )
    system = _template(spec.prompt_dir, "system.txt").substitute(
        title=spec.title, role=view.role, rules=spec.rules, format=style_text
    )
    user = _template(spec.prompt_dir, "user.txt").substitute(
        history=_history_section(view) if include_history else "",
        observation=f"# Your view\n{view.text}",
        actions=_actions_section(view, action_order) if list_legal_actions else "",
        instruction=_instruction(view),
    )
    return [{"role": "system", "content": system}, {"role": "user", "content": user}]


def _example(spec: GameSpec, view: SeatView) -> str:
    """The example answer of the format section: the game's stock example action."""
    return spec.example_action(view.seat)


def _history_section(view: SeatView) -> str:
    """``# Moves so far`` with one line per public move (ends with a blank line)."""
    lines = "\n".join(view.history) if view.history else "(no moves yet)"
    return f"# Moves so far\n{lines}\n\n"


def _actions_section(view: SeatView, order: Sequence[int] | None = None) -> str:
    """``# Legal actions`` with one canonical text per line (ends with a blank line)."""
    legal = view.legal_actions
    lines = "\n".join(f"- {legal[action]}" for action in (legal if order is None else order))
    return f"# Legal actions\n{lines}\n\n"


def _instruction(view: SeatView) -> str:
    """The closing request."""
    if view.terminal:
        return "The game is over."
    return "It is your turn. Choose exactly one move."
