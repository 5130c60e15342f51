"""The opponent commands: ``opponents``, ``serve`` and ``solve``.

``opponents`` lists the specs; ``serve`` serves one as an OpenAI-compatible endpoint; ``solve``
regenerates the shipped equilibrium policies.
"""

from __future__ import annotations

import argparse
from typing import Any

import opponents
from strategic_arena.arena.defaults import SOLVER_SUITE, SOLVER_SUITE_NAME
from strategic_arena.cli.commands import HELP
from strategic_arena.cli.common import fail
from strategic_arena.game_header import GAME_HEADER_CAP
from strategic_arena.serve import PlayerServer


def add_parsers(sub: Any) -> None:
    """Register ``opponents``, ``serve`` and ``solve`` on the CLI's subparsers."""
    listing = sub.add_parser(
        "opponents", help="list the opponent specs, their games and parameters"
    )
    listing.set_defaults(handler=opponents_main)
    serve = sub.add_parser(
        "serve",
        help=HELP["serve"],
        description="Serve a player as an OpenAI-compatible endpoint (/v1/models, "
        "/v1/chat/completions). Requests carry the seat's information (what that seat may "
        "know: information state, observation, public moves, legal actions, and the history "
        "only in perfect-information games) and the answer style in the X-Strategic-Arena-Game "
        "header that the arena's model player sends, or in the extra body field "
        "'strategic_arena'; the answer is the player's move in that prompt style (a call of "
        "the play tool for style tools, or when the request offers that tool). The header is "
        f"at most {GAME_HEADER_CAP} bytes: past that it leaves out the observation and "
        "information state, or names the game only (a 400 asking for the body field).",
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
    serve.set_defaults(handler=serve_main)
    solve = sub.add_parser(
        "solve",
        help=HELP["solve"],
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
        choices=("cfr+", "dcfr", "cfr", "pcfr+"),
        default="cfr+",
        help="CFR variant for Leduc Hold'em (default cfr+; pcfr+ reaches tight targets soonest)",
    )
    solve.set_defaults(handler=solve_main)


def opponents_main(args: argparse.Namespace) -> int:
    """``opponents``: every spec name with its games and parameters."""
    print("human -- you, at the terminal; games: all")
    print(opponents.describe())
    return 0


def serve_main(args: argparse.Namespace) -> int:
    """``serve``: run the endpoint until Ctrl-C."""
    player: str = args.player
    try:
        if player == "suite":
            server = PlayerServer(
                dict(SOLVER_SUITE),
                model=args.model or SOLVER_SUITE_NAME,
                host=args.host,
                port=args.port,
            )
        else:
            opponents.parse_spec(player)
            server = PlayerServer(player, model=args.model, host=args.host, port=args.port)
    except (ValueError, OSError) as error:
        return fail(error)
    print(f"Serving {player!r} as model {server.service.model!r} at {server.base_url}", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.httpd.server_close()
    return 0


def solve_main(args: argparse.Namespace) -> int:
    """``solve``: regenerate the policies, printing progress and the exploitabilities."""
    if args.iterations < 1 or args.target <= 0:
        return fail("--iterations and --target must be positive")
    from opponents.equilibrium import regenerate_policies  # numba: the [solvers] extra

    print(
        f"Solving (Leduc Hold'em: {args.algorithm}, up to {args.iterations} iterations, "
        f"target {args.target:g})"
    )
    results = regenerate_policies(
        args.out,
        iterations=args.iterations,
        target_exploitability=args.target,
        algorithm=args.algorithm,
        progress=print,
    )
    for env_id, exploitability in results.items():
        print(f"{env_id:18s} exploitability {exploitability:.3e} (OpenSpiel's measure)")
    return 0
