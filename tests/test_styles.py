"""The answer-style registry and the styles' own rules.

Every registered style: its template's example validates in it (parser, template and hints
agree), its answer block round-trips, and ``validate`` reaches it only through the registry.
Then the rules that differ between styles: ``require_reasoning``, text after the answer in
strict mode, SPIN-Bench's action ids, and a model player over real HTTP whose answers are a bare
box (SPIRAL's "thinking collapse").
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, ClassVar

import pytest

import strategic_arena as sa
from strategic_arena.actions import Action, ActionError
from strategic_arena.arena.match import play_match_sync
from strategic_arena.asking import Asking
from strategic_arena.players import LLMPlayer, RandomPlayer
from strategic_arena.serve import PlayerService
from strategic_arena.styles import _REGISTRY as REGISTRY
from strategic_arena.styles import STYLES, get_style, register, style_names
from strategic_arena.styles.boxed import BoxedStyle
from strategic_arena.validation import validate

KUHN = "kuhn_poker-v0"
KUHN_MENU = {0: "check", 1: "bet"}


def test_the_registry_holds_every_builtin_style() -> None:
    assert STYLES == ("marshal", "boxed", "json", "tools", "spiral", "spin_bench")
    assert style_names()[: len(STYLES)] == STYLES
    for name in STYLES:
        assert get_style(name).name == name
        assert get_style(get_style(name)) is get_style(name)
    with pytest.raises(ValueError, match="unknown style 'xml'; choose one of marshal, boxed"):
        get_style("xml")
    with pytest.raises(ValueError, match="already registered"):
        register(BoxedStyle())


def test_validate_has_no_branch_on_a_style_name() -> None:
    source = Path(sa.validation.__file__).read_text(encoding="utf-8")
    assert "style ==" not in source and "style !=" not in source


@pytest.mark.parametrize("style", STYLES)
def test_every_style_reads_back_what_it_writes(style: str) -> None:
    answer = get_style(style)
    for action, text in KUHN_MENU.items():
        written = answer.format_answer("The King wins showdowns.", text)
        assert validate(KUHN, written, KUHN_MENU, style) == Action(action, text), written
        block = answer.answer_block(text)
        outcome = validate(KUHN, block, KUHN_MENU, style, require_reasoning=False)
        assert outcome == Action(action, text), block


class _Shouted(BoxedStyle):
    """A user's style: boxed answers written in capitals, registered from outside."""

    name: ClassVar[str] = "shouted"

    def answer_block(self, action_text: str) -> str:
        return f"\\boxed{{{action_text.upper()}}}"

    @property
    def template(self) -> str:
        return "boxed.txt"


def test_a_style_registered_from_outside_works_everywhere(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(REGISTRY, "shouted", _Shouted())
    assert "shouted" in style_names()
    assert validate(KUHN, "I bet. \\boxed{BET}", KUHN_MENU, "shouted") == Action(1, "bet")
    env = sa.make(KUHN)
    env.reset(seed=0)
    system = sa.render_messages(KUHN, env.seat_view(env.agent_selection), "shouted")[0]
    assert "\\boxed{" in system["content"]


@pytest.mark.parametrize(
    ("style", "bare", "by_default"),
    [
        ("marshal", "<answer>bet</answer>", "missing_reasoning"),
        ("boxed", "\\boxed{bet}", "missing_reasoning"),
        ("json", '{"action": "bet"}', "missing_reasoning"),
        ("spin_bench", '{"action": 1}', "missing_reasoning"),
        ("spiral", "\\boxed{bet}", None),
        (
            "tools",
            '<tool_call>\n{"name": "play", "arguments": {"move": "bet"}}\n</tool_call>',
            None,
        ),
    ],
)
def test_require_reasoning_defaults_to_the_style_and_can_be_set(
    style: str, bare: str, by_default: str | None
) -> None:
    outcome = validate(KUHN, bare, KUHN_MENU, style)
    if by_default is None:
        assert outcome == Action(1, "bet")
    else:
        assert isinstance(outcome, ActionError) and outcome.kind == by_default
    assert validate(KUHN, bare, KUHN_MENU, style, require_reasoning=False) == Action(1, "bet")
    required = validate(KUHN, bare, KUHN_MENU, style, require_reasoning=True)
    assert isinstance(required, ActionError) and required.kind == "missing_reasoning"
    # reasoning returned apart (reasoning_content) satisfies the requirement
    assert validate(
        KUHN, bare, KUHN_MENU, style, reasoning="I hold the King.", require_reasoning=True
    ) == Action(1, "bet")


@pytest.mark.parametrize(
    ("style", "response"),
    [
        ("boxed", "I hold the King. \\boxed{bet} and I will win."),
        ("marshal", "<think>King.</think>\n<answer>bet</answer> surely"),
        ("json", '{"reasoning": "King.", "action": "bet"} done'),
        ("spin_bench", '{"reason": "King.", "action": 1}\nGood luck.'),
        (
            "tools",
            'King.\n<tool_call>\n{"name": "play", "arguments": {"move": "bet"}}\n'
            "</tool_call>\nthere",
        ),
    ],
)
def test_strict_mode_refuses_text_after_the_answer(style: str, response: str) -> None:
    strict = validate(KUHN, response, KUHN_MENU, style)
    assert isinstance(strict, ActionError) and strict.kind == "format", strict
    assert validate(KUHN, response, KUHN_MENU, style, strict=False) == Action(1, "bet")


def test_boxed_strict_allows_closing_punctuation_only() -> None:
    for ending in ("", ".", " ", "$.", "\n"):
        response = f"I hold the King. $\\boxed{{bet}}{ending}"
        assert validate(KUHN, response, KUHN_MENU, "boxed") == Action(1, "bet"), ending
    two = validate(KUHN, "Maybe \\boxed{check}, no: \\boxed{bet}", KUHN_MENU, "boxed")
    assert isinstance(two, ActionError) and two.kind == "multiple_actions"


def test_spiral_takes_the_last_box_in_both_modes() -> None:
    response = "<think>\\boxed{check}?</think> I bet. \\boxed{bet} -- final."
    for strict in (True, False):
        assert validate(KUHN, response, KUHN_MENU, "spiral", strict=strict) == Action(1, "bet")
    # boxed, strict, refuses the same answer
    assert isinstance(validate(KUHN, response, KUHN_MENU, "boxed"), ActionError)
    # SPIRAL's fallback: a response that is just the move counts, written exactly
    assert validate(KUHN, " bet\n", KUHN_MENU, "spiral") == Action(1, "bet")
    assert validate(KUHN, "[check]", KUHN_MENU, "spiral") == Action(0, "check")
    for refused in ("I bet", "\\boxed{BET}", "\\boxed{ bet }", "\\fbox{bet}", "\\boxed{bet"):
        outcome = validate(KUHN, refused, KUHN_MENU, "spiral")
        assert isinstance(outcome, ActionError), refused
    upper = validate(KUHN, "\\boxed{BET}", KUHN_MENU, "spiral")
    assert isinstance(upper, ActionError) and upper.kind == "format"
    assert "\\boxed{bet}" in upper.detail


def test_spin_bench_reads_ids_and_move_texts() -> None:
    env = sa.make("tic_tac_toe-v0")
    env.reset(seed=0)
    env.step(4)  # X takes the centre
    menu = env.legal_action_texts(env.agent_selection)
    assert 4 not in menu and 0 in menu

    def answer(action: object) -> Action | ActionError:
        text = json.dumps({"reason": "a corner", "action": action})
        return validate("tic_tac_toe-v0", text, menu, "spin_bench")

    assert answer(0) == Action(0, menu[0])  # SPIN-Bench's int id
    assert answer("8") == Action(8, menu[8])  # an id written as a string
    assert answer(menu[2]) == Action(2, menu[2])  # the move text
    taken = answer(4)
    assert isinstance(taken, ActionError) and taken.kind == "illegal_action"
    assert "legal action ids: 0, 1, 2, 3, 5, 6, 7, 8" in taken.detail
    beyond = answer(99)
    assert isinstance(beyond, ActionError) and beyond.kind == "unknown_action"
    assert isinstance(answer(True), ActionError)
    assert isinstance(answer("٣"), ActionError)  # a non-ASCII digit is no id
    # the prompt lists ids beside the moves, and its example is an id
    view = env.seat_view(env.agent_selection)
    system, user = sa.render_messages("tic_tac_toe-v0", view, "spin_bench")
    assert "- 0: O(0,0)\n" in user["content"] and "- 4: " not in user["content"]
    assert re.search(r'\{"reason": "\.\.\.your reasoning\.\.\.", "action": \d\}', system["content"])


class _Collapsed(PlayerService):
    r"""A model that has stopped reasoning: every answer is the bare ``\boxed{MOVE}``."""

    def complete(self, body: dict[str, Any], header: str | None = None) -> dict[str, Any]:
        reply = super().complete(body, header)
        message = reply["choices"][0]["message"]
        message["content"] = message["content"][message["content"].rindex("\\boxed") :]
        return reply


@pytest.mark.parametrize(
    ("style", "require_reasoning", "forfeits"),
    [
        ("boxed", None, True),
        ("boxed", False, False),
        ("spiral", None, False),
        ("spiral", True, True),
    ],
)
def test_llm_player_over_http_applies_require_reasoning(
    style: str, require_reasoning: bool | None, forfeits: bool
) -> None:
    pytest.importorskip("openai", reason="the [arena] extra (openai) is not installed")
    from strategic_arena.backends import OpenAIBackend
    from tests.servers import FaultServer

    server = FaultServer(service=_Collapsed("collapsed", lambda env_id: RandomPlayer(0)))
    try:
        backend = OpenAIBackend("collapsed", server.base_url, api_key="unused", seed=0)
        model = LLMPlayer(backend, Asking(style=style, require_reasoning=require_reasoning), seed=0)
        record = play_match_sync(KUHN, [model, RandomPlayer(1)], seed=3)
    finally:
        server.close()
    first = record.moves[0]
    assert first.response.startswith("\\boxed{")
    if forfeits:
        assert record.status == "forfeit" and record.forfeited_by == 0
        assert first.error is not None and first.error.kind == "missing_reasoning"
    else:
        assert record.status == "complete" and first.error is None
