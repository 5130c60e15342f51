"""The public conformance check of a game: :func:`check_game`.

Gymnasium runs ``check_env`` over its whole registry; this is the same for a text game. One call
checks, for a registered id or a spec:

1. **PettingZoo's API** (``pettingzoo.test.api_test``): spaces, observations, masks, rewards,
   dead steps, as every PettingZoo user expects them.
2. **Seeding** (``pettingzoo.test.seed_test``): two envs reset with the same seed play the same
   game, chance events included.
3. **Every move text round-trips**: in seeded random games, at every decision, each legal
   action's canonical text, written as a whole response in every registered answer style
   (``marshal``, ``boxed``, ``json``, ``tools``, ``spiral``...), validates back to the same
   action: no two moves read alike, and no style loses a move on the way.
4. **The default eval works on it**: ``strategic-arena eval`` with no ``--base-url`` (the
   embedded solver suite, over real HTTP) against the game's default opponents, both seats,
   into a throwaway results store; every game must be scored. Only for a registered id
   (:func:`strategic_arena.list_envs`: ``openspiel/<name>`` games and specs not yet registered
   have no solver-suite entrant) whose spec names an entrant (a spec may name none and say why
   in ``listing.no_solver``: Hanabi with 3-5 players), skipped with ``eval_games=0``.

Any failure raises :class:`GameCheckError` naming the check and the case. The tests run it over
every registered id; a new game's author runs it on the spec before registering it.
"""

from __future__ import annotations

import contextlib
import io
import tempfile
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from strategic_arena.actions import TEXT_MOVE, Action
from strategic_arena.env import TextGameEnv, env_for
from strategic_arena.free_text_env import FreeTextEnv
from strategic_arena.games import GameSpec, get_spec, list_envs
from strategic_arena.styles import get_style, style_names
from strategic_arena.validation import validate


class GameCheckError(AssertionError):
    """A game failed one of :func:`check_game`'s checks; the message says which and where."""


@dataclass(frozen=True)
class GameCheck:
    """What :func:`check_game` checked (all of it passed).

    Attributes:
        env_id: the game.
        decisions: decisions whose every legal move was round-tripped.
        move_texts: (move, style) pairs that validated back to their move.
        eval_games: games the default eval scored (0: not run).
    """

    env_id: str
    decisions: int
    move_texts: int
    eval_games: int


def check_game(
    spec_or_id: GameSpec | str,
    *,
    num_cycles: int = 100,
    round_trip_games: int = 2,
    max_decisions: int = 40,
    eval_games: int = 2,
    seed: int = 0,
    styles: Sequence[str] | None = None,
) -> GameCheck:
    """Check that a game conforms: PettingZoo API and seeding, move texts, the default eval.

    Args:
        spec_or_id: an env id (curated, ``openspiel/<name>`` or ``textarena/<EnvId>``) or a
            :class:`GameSpec`; the eval check runs for registered menu games only (a free-text
            game has no solver-suite entrant); a free-text game round-trips its sample moves.
        num_cycles: steps of PettingZoo's ``api_test`` and ``seed_test``.
        round_trip_games: seeded random games whose decisions are round-tripped.
        max_decisions: decisions round-tripped per game at most (long games stay cheap).
        eval_games: games per opponent of the default eval (0 skips it).
        seed: the root seed of the random games and of the eval.
        styles: the answer styles the move texts must round-trip through (default: every
            registered style). A paper's own parser may be unable to write some moves (SPIRAL's
            brackets every move, so a move text in brackets never reads back): leave it out
            for such games, knowing that style cannot play them.

    Returns:
        what was checked.

    Raises:
        GameCheckError: a check failed; the message names it.
        ValueError: an unknown env id.
    """
    spec = get_spec(spec_or_id) if isinstance(spec_or_id, str) else spec_or_id
    _check_pettingzoo(spec, num_cycles)
    names = list(styles) if styles is not None else style_names()
    decisions, texts = _check_round_trips(spec, names, round_trip_games, max_decisions, seed)
    played = _check_default_eval(spec, eval_games, seed) if eval_games and _registered(spec) else 0
    return GameCheck(spec.env_id, decisions, texts, played)


def _registered(spec: GameSpec) -> bool:
    """Whether ``spec`` is a registered game with a solver-suite entrant.

    ``openspiel/<name>`` games have no solver suite, and a registered game may name none when
    its listing says why (``no_solver``): the default eval then refuses it, so it is not run.
    """
    return spec.env_id in list_envs() and spec.listing.solver is not None


def _check_pettingzoo(spec: GameSpec, num_cycles: int) -> None:
    """PettingZoo's own ``api_test`` and ``seed_test`` on fresh envs of ``spec``."""
    from pettingzoo.test import api_test, seed_test

    try:
        # api_test prints its progress; a check says nothing unless it fails.
        with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()):
            warnings.simplefilter("ignore")  # PettingZoo's style advice about Dict spaces
            api_test(env_for(spec), num_cycles=num_cycles)
            seed_test(lambda: env_for(spec), num_cycles=num_cycles)
    except AssertionError as error:
        raise GameCheckError(f"{spec.env_id}: PettingZoo's api/seed test failed: {error}") from None


def _check_round_trips(
    spec: GameSpec, names: Sequence[str], games: int, max_decisions: int, seed: int
) -> tuple[int, int]:
    """Every legal move's text, in every style of ``names``, validates back to the move."""
    if spec.move_kind == "text":
        return _check_text_round_trips(spec, names, games, max_decisions, seed)
    rng = np.random.default_rng(seed)
    styles = [get_style(name) for name in names]
    decisions = texts = 0
    for game in range(games):
        env = TextGameEnv(spec)
        env.reset(seed=seed + game)
        for step, agent in enumerate(env.agent_iter()):
            if env.terminations[agent] or env.truncations[agent]:
                env.step(None)
                continue
            menu = env.seat_view(agent, history=False).legal_actions
            if step < max_decisions:
                decisions += 1
                for action, text in menu.items():
                    for style in styles:
                        response = style.format_answer("Thinking it over.", text)
                        outcome = validate(spec, response, menu, style)
                        if outcome != Action(action, text):
                            raise GameCheckError(
                                f"{spec.env_id}: move {action} ({text!r}) written in the "
                                f"{style.name} style reads back as {outcome!r} (seed "
                                f"{seed + game}, decision {step})"
                            )
                        texts += 1
            env.step(int(rng.choice(list(menu))))
    return decisions, texts


def _check_text_round_trips(
    spec: GameSpec, names: Sequence[str], games: int, max_decisions: int, seed: int
) -> tuple[int, int]:
    """A free-text game: each sample move, in every style that writes text moves, reads back.

    The move read back is the style's move text (SPIRAL's ``spiral`` style brackets a short
    bare move, as SPIRAL did); the games are played with the sample moves, the game judging them.
    """
    rng = np.random.default_rng(seed)
    styles = [get_style(name) for name in names if not get_style(name).menu_only]
    decisions = texts = 0
    for game in range(games):
        env = FreeTextEnv(spec)
        env.reset(seed=seed + game)
        for step, agent in enumerate(env.agent_iter()):
            if env.terminations[agent] or env.truncations[agent]:
                env.step(None)
                continue
            if step < max_decisions:
                decisions += 1
                for move in spec.sample_moves:
                    for style in styles:
                        response = style.format_answer("Thinking it over.", move)
                        outcome = validate(spec, response, {}, style)
                        if outcome != Action(TEXT_MOVE, style.move_text(move)):
                            raise GameCheckError(
                                f"{spec.env_id}: move {move!r} written in the {style.name} "
                                f"style reads back as {outcome!r} (seed {seed + game}, "
                                f"decision {step})"
                            )
                        texts += 1
            env.step(spec.sample_moves[int(rng.integers(len(spec.sample_moves)))])
    return decisions, texts


def _check_default_eval(spec: GameSpec, games: int, seed: int) -> int:
    """``evaluate`` with the embedded solver suite against the default opponents: all scored."""
    from strategic_arena.arena.endpoint import ModelOptions
    from strategic_arena.arena.evaluate import evaluate

    with tempfile.TemporaryDirectory(prefix="check-game-") as folder:
        try:
            result = evaluate(
                Path(folder) / "arena.sqlite",
                ModelOptions(),
                envs=[spec.env_id],
                num_games=games,
                seed=seed,
                concurrency=2,
            )
        except ValueError as error:
            raise GameCheckError(f"{spec.env_id}: the default eval refused it: {error}") from None
    summary = result.summary
    if summary.played != summary.total or result.unscored:
        raise GameCheckError(
            f"{spec.env_id}: the default eval scored {summary.played} of {summary.total} games "
            f"({result.unscored} incomplete)"
        )
    return summary.played
