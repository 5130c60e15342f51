"""The ``strategic-arena`` command.

Subcommands:

* ``envs`` -- list the curated environments;
* ``play ENV_ID`` -- play one seeded game between players and print, for every decision, the
  prompt the seat receives and the move it plays (``--players human random`` to play yourself);
* ``demo`` -- the README's demo: ``play`` on fixed defaults;
* ``opponents`` -- list the opponent specs;
* ``solve`` -- regenerate the shipped equilibrium policies and print their exploitability;
* ``serve`` -- serve an opponent as an OpenAI-compatible chat endpoint;
* ``eval`` -- evaluate a model endpoint against solvers (stored, resumable), then report;
* ``report`` -- recompute the metrics of a results store;
* ``replay`` -- replay a stored game exactly;
* ``grade`` -- grade stored moves against exact solvers and measure poker exploitability;
* ``publish`` -- write the leaderboards of a results store (markdown, JSON, HTML);
* ``ladder`` -- play the baseline ladder of solvers and publish it;
* ``train`` -- self-play RL training from a YAML config (:mod:`strategic_arena.train.cli`).
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections.abc import Sequence

from strategic_arena._extras import MissingExtraError
from strategic_arena.arena import commands as arena_commands
from strategic_arena.arena.match import MatchRecord, MoveCallback, MoveRecord, play_match
from strategic_arena.env import make
from strategic_arena.games import GameSpec, get_spec, list_envs
from strategic_arena.grading import cli as grading_commands
from strategic_arena.leaderboard import cli as leaderboard_commands
from strategic_arena.players import GameState, HumanPlayer, Player
from strategic_arena.prompting import render_messages
from strategic_arena.seeding import derive_seed
from strategic_arena.train import cli as train_commands
from strategic_arena.validation import STYLES, Style


def build_player(spec: str, seat: int, match_seed: int, env_id: str) -> Player:
    """A player from a spec string: ``human``, ``random[:seed=N]`` or any opponent spec.

    Opponent specs (``mcts:simulations=1000``, ``nash``, ``minimax``...) are built by
    :func:`opponents.make`, imported only when such a spec is given. Players without an explicit
    seed are seeded from the match seed and the seat, so a seeded game replays exactly.
    """
    if spec == "human":
        return HumanPlayer(name=f"human[{seat}]")
    if spec.startswith("human:"):
        raise ValueError("the human player takes no parameters")
    import opponents

    return opponents.make(spec, env_id, seed=derive_seed(match_seed, "player", seat))


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="strategic-arena",
        description="Text games over OpenSpiel for measuring and training language models.",
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    sub.add_parser("envs", help="list the curated environment ids")
    sub.add_parser("opponents", help="list the opponent specs, their games and parameters")
    serve = sub.add_parser(
        "serve",
        help="serve an opponent as an OpenAI-compatible chat endpoint",
        description="Serve a player as an OpenAI-compatible endpoint (/v1/models, "
        "/v1/chat/completions). Requests carry the seat's information (what that seat may "
        "know: information state, observation, public moves, legal actions, and the history "
        "only in perfect-information games) and the answer style in the X-Strategic-Arena-Game "
        "header that the arena's model player sends, or in the extra body field "
        "'strategic_arena'; the answer is the player's move in that prompt style (a call of "
        "the play tool for style tools, or when the request offers that tool).",
    )
    serve.add_argument(
        "--player",
        default="random",
        metavar="SPEC",
        help="opponent spec to serve, e.g. mcts:simulations=1000, or 'suite' for a strong "
        "solver per game (the eval command's embedded model) (default random)",
    )
    serve.add_argument("--model", default=None, help="model name to report (default: the spec)")
    serve.add_argument("--host", default="127.0.0.1", help="address to listen on (127.0.0.1)")
    serve.add_argument("--port", type=int, default=8000, help="port (default 8000; 0 = any)")
    solve = sub.add_parser(
        "solve",
        help="regenerate the shipped equilibrium policies and print their exploitability",
        description="Rebuild opponents/policies/: Kuhn Poker's closed-form equilibrium and a "
        "CFR+ solution of Leduc Hold'em, then print each policy's exploitability as measured "
        "by OpenSpiel (chips per hand).",
    )
    solve.add_argument(
        "--out",
        default=None,
        metavar="DIR",
        help="write the policy files here (default: the package's own opponents/policies/)",
    )
    solve.add_argument(
        "--iterations",
        type=int,
        default=1_000_000,
        help="most CFR iterations for Leduc Hold'em (default 1000000)",
    )
    solve.add_argument(
        "--target",
        type=float,
        default=2e-7,
        help="stop once Leduc's exploitability is at most this (default 2e-7)",
    )
    solve.add_argument(
        "--algorithm",
        choices=("cfr+", "dcfr", "cfr"),
        default="cfr+",
        help="CFR variant for Leduc Hold'em (default cfr+)",
    )

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
            choices=STYLES,
            default="marshal",
            help="prompt style shown for each decision (default marshal)",
        )
        command.add_argument(
            "--history", action="store_true", help="include the move history in prompts"
        )
        command.add_argument(
            "--no-prompts",
            action="store_true",
            help="print only the moves and the result, not the prompts",
        )

    play = sub.add_parser(
        "play",
        help="play one seeded game and print every prompt and move",
        description="Play one seeded game between players and print, for every decision, the "
        "prompt that seat receives and the move it plays.",
    )
    add_play_options(play, None)
    demo = sub.add_parser(
        "demo",
        help="one seeded game between random players, every prompt shown (make demo)",
        description="A seeded demo game between built-in players, printed as the prompt each "
        "seat receives and the move it plays.",
    )
    add_play_options(demo, "kuhn_poker-v0")
    arena_commands.add_parsers(sub)
    grading_commands.add_parser(sub)
    leaderboard_commands.add_parsers(sub)
    train_commands.add_parsers(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``strategic-arena`` command; returns the exit status."""
    args = _parser().parse_args(argv)
    if args.command == "envs":
        for env_id in list_envs():
            spec = get_spec(env_id)
            kind = "cooperative" if spec.cooperative else "zero-sum"
            print(f"{env_id:20s} {spec.title} ({kind}, OpenSpiel {spec.openspiel_name})")
        print("openspiel/<game_name>  any sequential OpenSpiel game, OpenSpiel's own text")
        return 0
    if args.command in ("eval", "report", "replay"):
        return arena_commands.dispatch(args)
    if args.command == "grade":
        return grading_commands.grade_main(args)
    if args.command in ("publish", "ladder"):
        return leaderboard_commands.dispatch(args)
    if args.command in train_commands.COMMANDS:
        return train_commands.dispatch(args)
    if args.command == "serve":
        return _serve(args.player, args.model, args.host, args.port)
    if args.command == "solve":
        return _solve(args.out, args.iterations, args.target, args.algorithm)
    if args.command == "opponents":
        import opponents

        print("human -- you, at the terminal; games: all")
        print(opponents.describe())
        return 0
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
    except (ValueError, MissingExtraError) as error:
        print(f"strategic-arena: error: {error}", file=sys.stderr)
        return 2
    record = asyncio.run(
        play_match(
            args.env_id,
            players,
            args.seed,
            env=env,
            on_move=_printer(spec, args.style, args.history, not args.no_prompts),
        )
    )
    _print_result(record)
    return 0


def _serve(player: str, model: str | None, host: str, port: int) -> int:
    """``serve``: run the endpoint until Ctrl-C."""
    from strategic_arena.arena.defaults import SOLVER_SUITE, SOLVER_SUITE_NAME
    from strategic_arena.serve import PlayerServer

    try:
        import opponents

        if player == "suite":
            server = PlayerServer(
                dict(SOLVER_SUITE), model=model or SOLVER_SUITE_NAME, host=host, port=port
            )
        else:
            opponents.parse_spec(player)
            server = PlayerServer(player, model=model, host=host, port=port)
    except (ValueError, OSError) as error:
        print(f"strategic-arena: error: {error}", file=sys.stderr)
        return 2
    print(f"Serving {player!r} as model {server.service.model!r} at {server.base_url}", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.httpd.server_close()
    return 0


def _solve(out: str | None, iterations: int, target: float, algorithm: str) -> int:
    """``solve``: regenerate the policies, printing progress and the exploitabilities."""
    if iterations < 1 or target <= 0:
        print("strategic-arena: error: --iterations and --target must be positive", file=sys.stderr)
        return 2
    try:
        from opponents.equilibrium import regenerate_policies  # needs numba: [solvers]
    except MissingExtraError as error:
        print(f"strategic-arena: error: {error}", file=sys.stderr)
        return 2
    print(f"Solving (Leduc Hold'em: {algorithm}, up to {iterations} iterations, target {target:g})")
    results = regenerate_policies(
        out,
        iterations=iterations,
        target_exploitability=target,
        algorithm=algorithm,
        progress=print,
    )
    for env_id, exploitability in results.items():
        print(f"{env_id:18s} exploitability {exploitability:.3e} (OpenSpiel's measure)")
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


def _printer(spec: GameSpec, style: Style, history: bool, show_prompts: bool) -> MoveCallback:
    """A move callback that prints each decision's prompt (system part once per seat)."""
    shown_system: set[int] = set()

    def show(record: MoveRecord, state: GameState) -> None:
        print(f"\n=== move {record.index + 1}: seat {record.seat}")
        if show_prompts:
            view = state.view(record.seat)
            messages = render_messages(spec, view, style, include_history=history)
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


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
