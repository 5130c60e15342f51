"""Prompt rendering: golden files for every game x style, and the rendering options."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from cases import CURATED

import strategic_arena as sa
from strategic_arena.actions import Action
from strategic_arena.asking import Asking
from strategic_arena.games import get_spec
from strategic_arena.prompting import render_messages
from strategic_arena.styles import STYLES, get_style, style_names

GOLDEN = Path(__file__).parent / "golden"


def golden_views(env_id: str) -> list[sa.SeatView]:
    """The first decision of seed 0, and the decision after three random moves of seed 1."""
    env = sa.make(env_id)
    env.reset(seed=0)
    first = env.seat_view(env.agent_selection)
    env.reset(seed=1)
    rng = np.random.default_rng(1)
    for _ in range(3):
        if env.terminations[env.agent_selection]:
            break
        env.step(int(rng.choice(list(env.legal_action_texts(env.agent_selection)))))
    return [first, env.seat_view(env.agent_selection)]


def rendered(env_id: str, style: str) -> str:
    parts = []
    for number, view in enumerate(golden_views(env_id)):
        messages = render_messages(env_id, view, style, include_history=number == 1)  # type: ignore[arg-type]
        for message in messages:
            parts.append(f"===== decision {number} / {message['role']} =====\n{message['content']}")
    return "\n".join(parts) + "\n"


@pytest.mark.parametrize("style", STYLES)
@pytest.mark.parametrize("env_id", CURATED)
def test_golden_prompt(env_id: str, style: str, update_golden: bool) -> None:
    path = GOLDEN / env_id / f"{style}.txt"
    text = rendered(env_id, style)
    if update_golden:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    assert path.exists(), f"missing {path}; run pytest --update-golden"
    assert text == path.read_text(encoding="utf-8"), (
        f"prompt changed: run pytest tests/test_prompting.py --update-golden and review "
        f"the diff of {path}"
    )


@pytest.mark.parametrize("env_id", CURATED)
def test_prompt_states_rules_role_view_actions_and_format(env_id: str) -> None:
    spec = sa.get_spec(env_id)
    view = next(view for view in golden_views(env_id)[::-1] if view.legal_actions)
    first = next(iter(view.legal_actions))
    for style in style_names():
        # the first listed action is the format's example: the example must validate as it
        system, user = render_messages(env_id, view, style, action_order=list(view.legal_actions))
        assert system["role"] == "system" and user["role"] == "user"
        assert spec.rules in system["content"]
        assert view.role in system["content"]
        example = system["content"].split("Example:\n", 1)[1]
        outcome = sa.validate(env_id, example, view.legal_actions, style)
        assert outcome == Action(first, view.legal_actions[first]), (style, example, outcome)
        assert view.text in user["content"]
        for action, text in view.legal_actions.items():
            assert f"{get_style(style).action_line(action, text)}\n" in user["content"]
            assert text in get_style(style).action_line(action, text)
        assert "# Moves so far" not in user["content"]


def test_options_history_and_no_legal_list() -> None:
    env = sa.make("connect_four-v0")
    env.reset(seed=0)
    env.step(3)
    env.step(2)
    view = env.seat_view(env.agent_selection)
    _, user = render_messages("connect_four-v0", view, include_history=True)
    assert "# Moves so far\nX in column 3\nO in column 2\n" in user["content"]
    system, user = render_messages("connect_four-v0", view, list_legal_actions=False)
    assert "# Legal actions" not in user["content"]
    assert "notation the rules describe" in system["content"]


def test_unknown_style_raises() -> None:
    env = sa.make("tic_tac_toe-v0")
    env.reset(seed=0)
    with pytest.raises(ValueError, match="unknown style"):
        render_messages("tic_tac_toe-v0", env.seat_view("player_0"), "xml")  # type: ignore[arg-type]


def test_action_order_lists_the_legal_actions_in_that_order() -> None:
    env = sa.make("tic_tac_toe-v0")
    env.reset(seed=0)
    view = env.seat_view("player_0")
    order = [int(a) for a in np.random.default_rng(0).permutation(list(view.legal_actions))]
    stock_example = get_spec("tic_tac_toe-v0").example_action(0)
    if view.legal_actions[order[0]] == stock_example:
        order = order[1:] + order[:1]
    _, user = render_messages("tic_tac_toe-v0", view, action_order=order)
    listed = [line[2:] for line in user["content"].splitlines() if line.startswith("- ")]
    assert listed == [view.legal_actions[a] for a in order] != list(view.legal_actions.values())
    system, canonical = render_messages("tic_tac_toe-v0", view, "boxed", action_order=order)
    assert sorted(canonical["content"].splitlines()) == sorted(user["content"].splitlines())
    # The format's example is the first listed action, not the game's stock one.
    first = view.legal_actions[order[0]]
    assert f"\\boxed{{{first}}}" in system["content"]
    stock, _ = render_messages("tic_tac_toe-v0", view, "boxed")
    assert f"\\boxed{{{first}}}" not in stock["content"]
    with pytest.raises(ValueError, match="not an order of"):
        render_messages("tic_tac_toe-v0", view, action_order=order[:-1])


def test_a_shuffling_player_sends_seeded_orders_over_http() -> None:
    """Through a real endpoint: each decision's list is a seeded permutation, reproducible."""
    pytest.importorskip("openai", reason="the [arena] extra (openai) is not installed")
    from servers import FaultServer

    from strategic_arena.arena import play_match_sync
    from strategic_arena.backends import OpenAIBackend
    from strategic_arena.players import LLMPlayer, RandomPlayer

    def listed(seed: int, shuffle: bool) -> tuple[list[tuple[str, ...]], tuple[int, ...]]:
        server = FaultServer()  # answers from the game header, whatever the prompt's order
        try:
            backend = OpenAIBackend("random", server.base_url, api_key="unused", seed=0)
            player = LLMPlayer(backend, Asking(style="boxed", shuffle_actions=shuffle), seed=seed)
            record = play_match_sync("tic_tac_toe-v0", [player, RandomPlayer(1)], seed=4)
        finally:
            server.close()
        lists = []
        for body in server.seen_bodies:
            lines = body["messages"][-1]["content"].splitlines()
            lists.append(tuple(line[2:] for line in lines if line.startswith("- ")))
        return lists, record.history

    canonical, history = listed(7, shuffle=False)
    shuffled, shuffled_history = listed(7, shuffle=True)
    assert history == shuffled_history and len(canonical) >= 3  # the same game
    assert [sorted(x) for x in shuffled] == [sorted(x) for x in canonical]
    assert shuffled != canonical and shuffled == listed(7, shuffle=True)[0]  # seeded
    assert listed(8, shuffle=True)[0] != shuffled
