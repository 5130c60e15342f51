"""Chat messages for one decision, from the templates in ``prompts/`` and a :class:`SeatView`.

Templates are plain :class:`string.Template` files shipped in the package:

* ``prompts/system.txt`` and ``prompts/user.txt``: the layout of the two messages;
* ``prompts/styles/<style>.txt``: the response-format instructions of each answer style
  (:mod:`strategic_arena.styles`);
* ``prompts/<game>/rules.txt``: the rules of each curated game.

A game folder may override any of them (``prompts/<game>/system.txt``,
``prompts/<game>/marshal.txt``...), and a user's prompt set
(:class:`~strategic_arena.prompt_sets.PromptSet`, ``--prompts DIR``) overrides any file of the
package's. Every prompt states the rules, the seat's role, what it sees, the legal actions
(unless omitted) and the exact response format with an example.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from string import Template

from strategic_arena.games import GameSpec, get_spec
from strategic_arena.prompt_sets import PromptSet, default_prompts
from strategic_arena.styles import AnswerStyle, get_style
from strategic_arena.views import SeatView

Message = dict[str, str]
"""An OpenAI chat message: ``{"role": ..., "content": ...}``."""


@functools.cache
def _template(prompts: PromptSet, folder: str, name: str, fallback_folder: str = "") -> Template:
    """``<folder>/<name>``, else ``<fallback_folder>/<name>``, else ``<name>`` of ``prompts``."""
    for where in (folder, fallback_folder, ""):
        text = prompts.text(where, name) if where else prompts.text(name)
        if text is not None:
            return Template(text.strip("\n"))
    raise FileNotFoundError(f"no prompt template {name!r} for prompts/{folder}")


def render_messages(
    env_id: str | GameSpec,
    view: SeatView,
    style: str | AnswerStyle = "marshal",
    *,
    include_history: bool = False,
    list_legal_actions: bool = True,
    action_order: Sequence[int] | None = None,
    prompts: PromptSet | None = None,
) -> list[Message]:
    r"""The system and user messages asking ``view.seat`` for its move.

    Args:
        env_id: the game, or its spec (for ``openspiel/<name>`` games with parameters).
        view: what the seat sees (``env.seat_view(agent)``).
        style: a registered answer style's name (``marshal``, ``boxed``, ``json``, ``tools``,
            ``spiral``, ``spin_bench``; see :mod:`strategic_arena.styles`) or a style object.
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
        prompts: the prompt set (default: the package's own templates).

    Returns:
        The system message (left out when the set's system template renders empty) and the
        user message.
    """
    answer_style = get_style(style)
    prompts = prompts or default_prompts()
    spec = env_id if isinstance(env_id, GameSpec) else get_spec(env_id)
    # A free-text game has no menu: its moves are written as its own instructions say.
    if spec.move_kind != "menu" and answer_style.menu_only:
        raise ValueError(
            f"the {answer_style.name} style answers with action ids, which only menu games "
            f"have; {spec.env_id} takes free-text moves: use another style"
        )
    list_legal_actions = list_legal_actions and spec.move_kind == "menu"
    written_as = (
        ", written exactly as in the list of legal actions"
        if list_legal_actions
        else ", written in the notation the rules describe"
    )
    if action_order is not None and sorted(action_order) != sorted(view.legal_actions):
        legal = sorted(view.legal_actions)
        raise ValueError(f"action_order {list(action_order)} is not an order of {legal}")
    example = view.legal_actions[action_order[0]] if action_order else _example(spec, view)
    format_text = _template(prompts, spec.prompt_dir, answer_style.template, "styles").substitute(
        written_as=written_as, example=example, example_id=_example_id(view, example)
    )
    rules = prompts.text(spec.prompt_dir, "rules.txt") if not prompts.is_default else None
    fields = {
        "title": spec.title,
        "role": view.role,
        "rules": rules.strip() if rules is not None else spec.rules,
        "format": format_text,
        # A free-text game's moves may be private (a sealed allocation): what a seat saw of
        # them is in its view, as the game's own observation keeps it.
        "history": _history_section(view) if include_history and spec.move_kind == "menu" else "",
        "observation": f"# Your view\n{view.text}",
        "view": view.text,
        "actions": (
            _actions_section(view, answer_style, action_order) if list_legal_actions else ""
        ),
        "instruction": _instruction(view),
    }
    system = _template(prompts, spec.prompt_dir, "system.txt").substitute(fields)
    user = _template(prompts, spec.prompt_dir, "user.txt").substitute(fields)
    messages = [{"role": "system", "content": system}] if system.strip() else []
    return [*messages, {"role": "user", "content": user}]


def _example(spec: GameSpec, view: SeatView) -> str:
    """The example answer of the format section: the game's stock example action."""
    return spec.example_action(view.seat)


def _example_id(view: SeatView, example: str) -> int:
    """The action id of the example text, or the first legal id when the example is not legal."""
    for action, text in view.legal_actions.items():
        if text == example:
            return action
    return next(iter(view.legal_actions), 0)


def _history_section(view: SeatView) -> str:
    """``# Moves so far`` with one line per public move (ends with a blank line)."""
    lines = "\n".join(view.history) if view.history else "(no moves yet)"
    return f"# Moves so far\n{lines}\n\n"


def _actions_section(view: SeatView, style: AnswerStyle, order: Sequence[int] | None = None) -> str:
    """``# Legal actions`` with one line per action, as the style lists it (ends blank)."""
    legal = view.legal_actions
    lines = "\n".join(
        style.action_line(action, legal[action]) for action in (legal if order is None else order)
    )
    return f"# Legal actions\n{lines}\n\n"


def _instruction(view: SeatView) -> str:
    """The closing request."""
    if view.terminal:
        return "The game is over."
    return "It is your turn. Choose exactly one move."
