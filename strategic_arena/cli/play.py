"""The game commands: ``envs``, ``play`` and ``demo``.

``envs`` lists the environments; ``play`` plays one seeded game and shows every prompt;
``demo`` is ``play`` on fixed defaults (the README's first command).
"""

from __future__ import annotations

import argparse
import asyncio
from typing import Any

import opponents
import strategic_arena.grading  # noqa: F401  (registers best_response, for build_player)
from strategic_arena._extras import MissingExtraError
from strategic_arena.arena.match import MatchRecord, MoveCallback, MoveRecord, play_match
from strategic_arena.cli.commands import HELP
from strategic_arena.cli.common import fail, turn_label
from strategic_arena.env import make
from strategic_arena.games import GameSpec, get_spec, list_envs, list_text_envs
from strategic_arena.games.seats import acting_seats
from strategic_arena.games.tables import facts
from strategic_arena.players import HumanPlayer
from strategic_arena.prompt_sets import PromptSet, load_prompts
from strategic_arena.prompting import render_messages
from strategic_arena.seeding import derive_seed
from strategic_arena.styles import style_names
from strategic_arena.turn import GameState, Player
from strategic_arena.validation import Style


def build_player(spec: str, seat: int, match_seed: int, env_id: str) -> Player:
    """A player from a spec string: ``human``, ``random[:seed=N]`` or any opponent spec.

    Opponent specs (``mcts:simulations=1000``, ``nash``, ``minimax``...) are built by
    :func:`opponents.make`. Players without an explicit seed are seeded from the match seed and
    the seat, so a seeded game replays exactly.
    """
    if spec == "human":
        return HumanPlayer(name=f"human[{seat}]")
    if spec.startswith("human:"):
        raise ValueError("the human player takes no parameters")
    return opponents.make(spec, env_id, seed=derive_seed(match_seed, "player", seat))


def add_parsers(sub: Any) -> None:
    """Register ``envs``, ``play`` and ``demo`` on the CLI's subparsers."""
    envs = sub.add_parser(
        "envs",
        help=HELP["envs"],
    )
    envs.add_argument(
        "env_id",
        nargs="?",
        default=None,
        help="show this game's spec: rules source, seats and teams, reward range, prompt "
        "version, opponents, solver-suite entrant, defaults and ladder counts",
    )
    envs.set_defaults(handler=envs_main)

    def add_play_options(command: argparse.ArgumentParser, default_env: str | None) -> None:
        if default_env is None:
            command.add_argument(
                "env_id", help="a curated id (see 'envs') or openspiel/<game_name>"
            )
        else:
            command.add_argument(
                "env_id", nargs="?", default=default_env, help=f"game (default {default_env})"
            )
        command.add_argument(
            "--players",
            nargs="+",
            default=None,
            metavar="PLAYER",
            help="one player per seat: human, random[:seed=N] or an opponent spec such as "
            "mcts:simulations=1000, minimax, solver, nash, cfr:iterations=1000, hanabi_bot "
            "(see 'strategic-arena opponents'; default: random in every seat)",
        )
        command.add_argument("--seed", type=int, default=0, help="game seed (default 0)")
        command.add_argument(
            "--param",
            action="append",
            default=[],
            metavar="KEY=VALUE",
            help="an OpenSpiel game parameter, for openspiel/<game_name> only (repeatable)",
        )
        command.add_argument(
            "--style",
            choices=style_names(),
            default="marshal",
            help="prompt style shown for each decision (default marshal)",
        )
        command.add_argument(
            "--prompts",
            default=None,
            metavar="DIR",
            help="a prompt set whose files override the package's templates (docs/styles.md)",
        )
        command.add_argument(
            "--history", action="store_true", help="include the move history in prompts"
        )
        command.add_argument(
            "--no-prompts",
            action="store_true",
            help="print only the moves and the result, not the prompts",
        )
        command.set_defaults(handler=play_main)

    play = sub.add_parser(
        "play",
        help=HELP["play"],
        description="Play one seeded game between players and print, for every decision, the "
        "prompt that seat receives and the move it plays.",
    )
    add_play_options(play, None)
    demo = sub.add_parser(
        "demo",
        help=HELP["demo"],
        description="A seeded demo game between built-in players, printed as the prompt each "
        "seat receives and the move it plays.",
    )
    add_play_options(demo, "kuhn_poker-v0")


def envs_main(args: argparse.Namespace) -> int:
    """``envs``: one line per curated environment; with an id, that game's spec."""
    if args.env_id is not None:  # an unknown id is a ValueError: one error line (guarded)
        for label, value in facts(get_spec(args.env_id)).items():
            print(f"{label + ':':23s}{value}")
        return 0
    ids = [*list_envs(), *list_text_envs()]  # the menu games, then the free-text ones
    width = max(len(env_id) for env_id in ids) + 1
    for env_id in ids:
        spec = get_spec(env_id)
        kind = "cooperative" if spec.cooperative else "competitive"
        source = spec.rules_source.split("(")[0]  # the engine and its game, parameters apart
        print(f"{env_id:{width}s} {spec.title} ({kind}, {spec.num_players} seats, {source})")
    print(f"{'openspiel/<game_name>':{width}s} any OpenSpiel game (N seats, simultaneous moves)")
    print(f"{'textarena/<EnvId>':{width}s} any TextArena game (free-text moves)")
    print(
        f"{'debate-v0(...)':{width}s} MAPoRL's collaborative debate (agents=, turns=, "
        "problems=, schema=; docs/maporl.md)"
    )
    return 0


def play_main(args: argparse.Namespace) -> int:
    """``play`` and ``demo``: one seeded game, printed decision by decision."""
    try:
        params = dict(_game_param(item) for item in args.param)
        env = make(args.env_id, None, **params)
        spec = env.spec
        specs = args.players or ["random"] * spec.num_players
        if len(specs) != spec.num_players:
            raise ValueError(
                f"{args.env_id} has {spec.num_players} seats; give {spec.num_players} players"
            )
        players = [build_player(p, seat, args.seed, args.env_id) for seat, p in enumerate(specs)]
        prompts = load_prompts(args.prompts)
    except (ValueError, MissingExtraError) as error:
        return fail(error)
    record = asyncio.run(
        play_match(
            args.env_id,
            players,
            args.seed,
            env=env,
            on_move=_printer(spec, args.style, args.history, not args.no_prompts, prompts),
        )
    )
    _print_result(record)
    return 0


def _game_param(item: str) -> tuple[str, int | float | bool | str]:
    """``KEY=VALUE`` with VALUE read as an int, float or bool when it looks like one."""
    key, sep, raw = item.partition("=")
    if not sep or not key:
        raise ValueError(f"--param takes KEY=VALUE, got {item!r}")
    for convert in (int, float):
        try:
            return key, convert(raw)
        except ValueError:
            pass
    if raw.lower() in ("true", "false"):
        return key, raw.lower() == "true"
    return key, raw


def _printer(
    spec: GameSpec, style: Style, history: bool, show_prompts: bool, prompts: PromptSet
) -> MoveCallback:
    """A move callback that prints each decision's prompt (system part once per seat)."""
    shown_system: set[int] = set()

    def show(record: MoveRecord, state: GameState) -> None:
        seats = () if state.spiel_state is None else acting_seats(state.spiel_state)
        print(f"\n=== move {record.index + 1}: seat {record.seat}{turn_label(seats)}")
        if show_prompts:
            view = state.view(record.seat)
            messages = render_messages(spec, view, style, include_history=history, prompts=prompts)
            for message in messages:
                if message["role"] == "system":
                    if record.seat in shown_system:
                        continue
                    shown_system.add(record.seat)
                print(f"--- {message['role']} ---\n{message['content']}")
        if record.action is None:
            detail = f"{record.error.kind}: {record.error.detail}" if record.error else "no move"
            print(f">>> seat {record.seat} forfeits ({detail})")
        else:
            print(f">>> seat {record.seat} plays {record.action_text}")

    return show


def _print_result(record: MatchRecord) -> None:
    """The final line: returns by seat and how the game ended."""
    returns = ", ".join(
        f"seat {seat} ({name}): {value:+g}"
        for seat, (name, value) in enumerate(zip(record.players, record.returns, strict=True))
    )
    how = "" if record.status == "complete" else f" (seat {record.forfeited_by} forfeited)"
    print(f"\n=== game over after {len(record.moves)} moves{how}. Returns: {returns}")
