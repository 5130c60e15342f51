"""The arena's commands: ``eval``, ``report`` and ``replay`` (arguments, one call, printing).

``eval`` calls :func:`strategic_arena.arena.evaluate.evaluate` (without ``--base-url`` it
serves the embedded solver suite and evaluates that, over real HTTP -- the README's main
command); ``report`` prints :func:`strategic_arena.grading.report.report`; ``replay`` prints
what :func:`strategic_arena.arena.replay.replay` replays.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from strategic_arena.actions import INFRASTRUCTURE_ERROR_KINDS, Attempt
from strategic_arena.arena import metrics
from strategic_arena.arena.costs import Price, parse_price, read_prices
from strategic_arena.arena.defaults import (
    DEFAULT_DB,
    DEFAULT_MAX_TOKENS,
    DEFAULT_NUM_GAMES,
    DEFAULT_OPPONENTS,
    PROTOCOLS,
    SOLVER_SUITE_NAME,
)
from strategic_arena.arena.endpoint import ModelOptions
from strategic_arena.arena.evaluate import EvalInterrupted, EvalResult, evaluate
from strategic_arena.arena.leases import DEFAULT_LEASE_S
from strategic_arena.arena.records import StoredGame, StoredMove
from strategic_arena.arena.replay import final_state_text, replay
from strategic_arena.arena.sequential import DEFAULT_CAP, describe
from strategic_arena.arena.sprt import ELO_MODELS, Sprt
from strategic_arena.arena.store import DEFAULT_MAX_RESPONSE_CHARS
from strategic_arena.asking import SETTINGS_FILE, Asking, Sampling, read_settings
from strategic_arena.cli.common import (
    DB_HELP,
    HelpFormatter,
    add_api_key_option,
    store_option,
    turn_label,
)
from strategic_arena.door import shown
from strategic_arena.door.printable import printable, printable_line
from strategic_arena.env import TextGameEnv
from strategic_arena.games import CURATED
from strategic_arena.grading.report import report
from strategic_arena.grading.summary import render_text
from strategic_arena.http_body import DEFAULT_MAX_REPLY_BYTES
from strategic_arena.ranking import render as render_ranking
from strategic_arena.settings_options import (
    ASKING_FLAGS,
    SAMPLING_FLAGS,
    add_settings_options,
    game_sampling_option,
    settings_from_args,
)

#: A comma outside parentheses (no ``)`` ahead of it before an ``(``).
_TOP_LEVEL_COMMA = re.compile(r",(?![^()]*\))")


def _names(text: str) -> list[str]:
    """``a,b`` -> ``["a", "b"]``: list options take commas as well as spaces.

    Commas inside parentheses belong to a name: ``openspiel/goofspiel(num_cards=4,players=3)``.
    """
    names = [name.strip() for name in _TOP_LEVEL_COMMA.split(text) if name.strip()]
    if not names:
        raise argparse.ArgumentTypeError(f"expected a name, got {text!r}")
    return names


def add_model_options(command: argparse.ArgumentParser, base_url_help: str) -> None:
    """The model endpoint, sampling and prompt options (``eval`` and ``grade`` share them)."""
    endpoint = command.add_argument_group("model endpoint")
    endpoint.add_argument(
        "--base-url",
        default=None,
        metavar="URL",
        help=base_url_help,
    )
    endpoint.add_argument(
        "--model",
        default=None,
        help="model name sent with each request (default: the only model the endpoint lists)",
    )
    endpoint.add_argument(
        "--name", default=None, help="the model's name in the store and report (default: --model)"
    )
    add_api_key_option(endpoint)
    endpoint.add_argument(
        "--timeout",
        type=float,
        default=120.0,
        metavar="S",
        help="deadline of each request in seconds, from connecting to the reply's last byte "
        "(the model listing too)",
    )
    endpoint.add_argument(
        "--max-attempts",
        type=int,
        default=6,
        help="requests per answer on 429/5xx/timeouts/dropped connections (backoff + jitter)",
    )
    endpoint.add_argument(
        "--max-reply-bytes",
        type=int,
        default=DEFAULT_MAX_REPLY_BYTES,
        metavar="N",
        help="the most bytes read of one reply, after decompression (the model listing too); "
        "a longer reply is the endpoint's failure, so memory stays bounded by --concurrency "
        "times N whatever it sends",
    )
    endpoint.add_argument(
        "--settings",
        default=None,
        metavar="PATH",
        help="ask and sample as a training checkpoint's evaluation did: a checkpoint folder "
        f"(its {SETTINGS_FILE}) or a settings file; the options below override single fields",
    )
    sampling = command.add_argument_group("sampling (unset: the server's default)")
    add_settings_options(
        sampling,
        Sampling,
        SAMPLING_FLAGS,
        {
            "max_tokens": f"(default {DEFAULT_MAX_TOKENS} for a --base-url endpoint; unset "
            "for the built-in solver suite, so its stored runs keep resuming; 0: the server's "
            "limit). Reasoning models need more, or thinking off (--chat-template-kwargs).",
        },
    )
    asking = command.add_argument_group("prompts and answers (how the model is asked)")
    add_settings_options(asking, Asking, ASKING_FLAGS)


def add_parsers(sub: Any) -> None:
    """Register ``eval``, ``report`` and ``replay`` on the CLI's subparsers."""
    formatter = HelpFormatter
    ev = sub.add_parser(
        "eval",
        help="evaluate a model endpoint against solvers, store every move, print the report",
        formatter_class=formatter,
        description="Play a model behind an OpenAI-compatible endpoint against solvers on "
        "each game, both seats, store every game and move in SQLite, then print the report. "
        "Rerunning the same command resumes: only missing games are played. Before anything "
        "is stored, the endpoint is checked (its /models lists the model, one request in the "
        "chosen style goes through) and a failed check names the likely cause. Without "
        "--base-url, the built-in solver suite is served on a local port and evaluated as the "
        "model (the README's main command). In the report, tok p50 is the median of completion "
        "tokens per decision (a retried decision's answers summed).",
    )
    add_model_options(
        ev,
        "OpenAI-compatible base URL, e.g. http://localhost:8000/v1 (default: serve the "
        f"built-in solver suite locally as the model {SOLVER_SUITE_NAME!r})",
    )
    games = ev.add_argument_group("games")
    games.add_argument(
        "--protocol",
        choices=sorted(PROTOCOLS),
        default=None,
        help="a named protocol that sets games, opponents and games per setting: "
        + "; ".join(f"{p.name}: {p.description}" for p in PROTOCOLS.values()),
    )
    games.add_argument(
        "--envs",
        nargs="+",
        type=_names,
        default=None,
        metavar="ENV",
        help="games to play, separated by spaces or commas (default: all curated: "
        f"{' '.join(CURATED)}; with no --base-url, those the solver suite plays)",
    )
    games.add_argument(
        "--opponents",
        nargs="+",
        default=None,
        metavar="SPEC",
        help="opponent specs, each playing the games it can (see 'strategic-arena opponents'), "
        "or model:NAME@BASE_URL for a model behind another OpenAI-compatible endpoint (e.g. "
        "model:Qwen/Qwen3-4B@http://localhost:8001/v1), asked with the same style, prompts and "
        "sampling as the evaluated model and reported as an entrant too, named by the served "
        "model unless the spec ends with ' as NAME' (quote it); the evaluated model itself "
        "(same model, same base URL) keeps its --name: one entrant; default per game: "
        + "; ".join(f"{e}: {', '.join(o)}" for e, o in DEFAULT_OPPONENTS.items())
        + ". Cooperative games are also played in self-play",
    )
    games.add_argument(
        "--opponent-api-key-env",
        default=None,
        metavar="VAR",
        help="environment variable holding the API key of the model:NAME@BASE_URL opponents "
        "(default: none, and no key is sent to them: the --api-key-env key goes to the "
        "evaluated model's endpoint only); the key is never stored",
    )
    games.add_argument(
        "--game-sampling",
        action="append",
        type=game_sampling_option,
        default=None,
        metavar="ENV:KEY=VALUE,...",
        help="a game's own sampling: the keys given override the sampling options in that "
        "game's requests only (repeat the option per game), e.g. "
        "mindgames_codenames-v0:temperature=0.7,top_p=0.8,"
        "top_k=30,min_p=0.05 (MindGames' winner tuned them per game); keys: temperature, "
        "top_p, top_k, min_p, max_tokens, stop (a JSON list), seed. The game must be one of "
        "the run's; model opponents sample per game as the evaluated model does; stored with "
        "the player as game_sampling",
    )
    games.add_argument(
        "--num-games",
        type=int,
        default=None,
        metavar="N",
        help=f"games per model/opponent/game, split over both seats (default {DEFAULT_NUM_GAMES}; "
        "a protocol sets its own); with --until decided, the most games each matchup's test may "
        f"take (default {DEFAULT_CAP})",
    )
    games.add_argument(
        "--seed",
        type=int,
        default=None,
        help="the run's root seed (deals, player seeds, the order games start in); default: a "
        "secret seed drawn from the OS, stored with the run and shown after it, so the endpoint "
        "cannot predict the deals (a rerun of the same command resumes with the stored one)",
    )
    add_sequential_options(ev)
    run = ev.add_argument_group("run and store")
    run.add_argument("--concurrency", type=int, default=8, help="games in flight at once")
    run.add_argument(
        "--max-replays",
        type=int,
        default=3,
        metavar="K",
        help="a game stopped by a server failure (after --max-attempts) is stored as "
        "incomplete, scored nowhere, and replayed by the next run of the same command, at most "
        "K times",
    )
    run.add_argument(
        "--db", default=DEFAULT_DB, metavar="PATH|URL", type=store_option, help=DB_HELP
    )
    run.add_argument(
        "--lease-s",
        type=float,
        default=DEFAULT_LEASE_S,
        metavar="S",
        help="with a postgresql:// --db, every eval of the same run is a worker that shares its "
        "games; a worker that dies leaves its games to the others after S seconds",
    )
    run.add_argument(
        "--max-response-chars",
        type=int,
        default=DEFAULT_MAX_RESPONSE_CHARS,
        metavar="N",
        help="the longest response or reasoning stored per answer; longer ones are stored cut",
    )
    run.add_argument(
        "--run-name",
        default=None,
        help="the run's name (default: derived from the settings, so the same command resumes)",
    )
    run.add_argument("--json", action="store_true", help="print the report as JSON")
    add_price_options(run)
    run.add_argument("--no-report", action="store_true", help="do not print the report")
    run.add_argument("--quiet", action="store_true", help="no progress line")
    ev.set_defaults(handler=eval_main)

    rep = sub.add_parser(
        "report",
        help="recompute and print the metrics of a results store",
        formatter_class=formatter,
        description="Metrics per player, game and opponent from the results store: mean return "
        "with 95%% CI (both seats and each seat), W/D/L, normalized score, invalid answers by "
        "kind, tokens and latency. Recomputed from the stored games every time.",
    )
    rep.add_argument(
        "--db", default=DEFAULT_DB, metavar="PATH|URL", type=store_option, help=DB_HELP
    )
    rep.add_argument(
        "--run", action="append", default=None, metavar="NAME", help="only this run (repeatable)"
    )
    rep.add_argument("--json", action="store_true", help="JSON with every per-seat summary")
    add_price_options(rep)
    rep.add_argument(
        "--all-players",
        action="store_true",
        help="rows for every player, not only the evaluated models",
    )
    rep.add_argument(
        "--ratings",
        action="store_true",
        help="add TrueSkill ratings per game and overall (free-for-all and team games too; "
        "needs the [arena] extra; takes a while on a large store)",
    )
    rep.set_defaults(handler=report_main)

    rp = sub.add_parser(
        "replay",
        help="replay a stored game exactly and print its moves",
        formatter_class=formatter,
        description="Rebuild a stored game from its seed and moves, check that it reaches the "
        "stored history and returns, and print every move (and with --prompts, the prompts).",
    )
    rp.add_argument(
        "game", type=int, help="the game's id (listed by 'strategic-arena runs --games RUN')"
    )
    rp.add_argument("--db", default=DEFAULT_DB, metavar="PATH|URL", type=store_option, help=DB_HELP)
    rp.add_argument("--prompts", action="store_true", help="print each prompt and full response")
    rp.set_defaults(handler=replay_main)


def add_sequential_options(command: argparse.ArgumentParser) -> None:
    """``--until`` and the sequential test's hypotheses and error rates (docs/arena.md)."""
    test = command.add_argument_group(
        "sequential test (--until decided; docs/arena.md, 'Evaluations that stop when the "
        "answer is known')"
    )
    test.add_argument(
        "--until",
        choices=("all", "decided"),
        default="all",
        help="all: play --num-games games per matchup; decided: play each matchup (the model "
        "against one opponent at one game) in pairs of games on the same deal, seats swapped, "
        "and stop it as soon as an SPRT decides between H0 (the model is --elo0 Elo stronger) "
        "and H1 (--elo1 stronger), at most --num-games games; two-sided games only",
    )
    defaults = Sprt()
    test.add_argument(
        "--elo0",
        type=float,
        default=None,
        metavar="ELO",
        help=f"H0's Elo difference of the model over the opponent (default {defaults.elo0:g})",
    )
    test.add_argument(
        "--elo1",
        type=float,
        default=None,
        metavar="ELO",
        help=f"H1's Elo difference, above --elo0 (default {defaults.elo1:g})",
    )
    test.add_argument(
        "--alpha",
        type=float,
        default=None,
        help=f"the largest chance of accepting H1 when H0 holds (default {defaults.alpha:g})",
    )
    test.add_argument(
        "--beta",
        type=float,
        default=None,
        help=f"the largest chance of accepting H0 when H1 holds (default {defaults.beta:g})",
    )
    test.add_argument(
        "--elo-model",
        choices=ELO_MODELS,
        default=None,
        help="the units of --elo0 and --elo1: logistic Elo (expected score "
        "1/(1+10^(-elo/400))) or normalized Elo (the score's distance from 1/2 in standard "
        f"deviations of one game, times 800/ln 10) (default {defaults.elo_model})",
    )


def add_price_options(group: Any) -> None:
    """``--prices`` and ``--price``: money per million tokens, for the report's costs."""
    group.add_argument(
        "--prices",
        default=None,
        metavar="FILE",
        help='a price table for the report\'s costs: JSON {"PLAYER": {"prompt": P, '
        '"completion": C}, ...}, money per million prompt and completion tokens',
    )
    group.add_argument(
        "--price",
        action="append",
        default=None,
        metavar="NAME=PROMPT,COMPLETION",
        help="one player's price per million prompt and completion tokens (repeatable; over "
        "--prices), e.g. gpt-4o-mini=0.15,0.6",
    )


def prices_of(args: argparse.Namespace) -> dict[str, Price]:
    """The price table of ``--prices`` with each ``--price`` over it.

    Raises:
        ValueError: a file that is not a price table, or a malformed ``--price``.
    """
    prices = read_prices(args.prices) if args.prices else {}
    prices.update(parse_price(text) for text in args.price or [])
    return prices


def sequential_options(args: argparse.Namespace) -> Sprt | None:
    """The :class:`Sprt` of the test options given (``None``: none given, the defaults apply).

    Raises:
        ValueError: a bad value (the test's own one-line message).
    """
    given = {
        name: getattr(args, name)
        for name in ("elo0", "elo1", "alpha", "beta", "elo_model")
        if getattr(args, name) is not None
    }
    return Sprt(**given) if given else None


def model_options(args: argparse.Namespace) -> ModelOptions:
    """The :class:`ModelOptions` of :func:`add_model_options`' parsed arguments.

    The asking and sampling settings start from ``--settings`` (else the defaults) and take
    every option given. ``--max-tokens`` 0 means the server's limit; unset (and not in the
    settings), :data:`DEFAULT_MAX_TOKENS` for a real endpoint only: the built-in solver suite
    ignores the limit, and its stored players (``make arena``) were made without one.

    Raises:
        ValueError: a bad settings file, a refused value, or a prompt set that does not load
            (before any request).
    """
    asking, sampling = read_settings(args.settings) if args.settings else (Asking(), Sampling())
    if args.sampling_max_tokens == 0:
        args.sampling_max_tokens = None
        sampling = replace(sampling, max_tokens=None)
    elif args.sampling_max_tokens is None and sampling.max_tokens is None and args.base_url:
        sampling = replace(sampling, max_tokens=DEFAULT_MAX_TOKENS)
    asking = settings_from_args(args, asking)
    asking.prompt_set()  # a bad folder fails before any request
    return ModelOptions(
        base_url=args.base_url,
        model=args.model,
        name=args.name,
        api_key_env=args.api_key_env,
        timeout_s=args.timeout,
        max_attempts=args.max_attempts,
        max_reply_bytes=args.max_reply_bytes,
        asking=asking,
        sampling=settings_from_args(args, sampling),
    )


def game_sampling(given: Sequence[tuple[str, Sampling]]) -> dict[str, Sampling]:
    """The parsed ``--game-sampling`` options by game.

    Raises:
        ValueError: a game given twice (its settings go in one option).
    """
    chosen: dict[str, Sampling] = {}
    for env_id, sampling in given:
        if env_id in chosen:
            raise ValueError(
                f"--game-sampling names {env_id} twice; give its settings in one option"
            )
        chosen[env_id] = sampling
    return chosen


def _announce(message: str) -> None:
    print(message, file=sys.stderr)


def eval_main(args: argparse.Namespace) -> int:
    """``eval``: evaluate, print the run's summary and report; 1 when games are left unscored."""
    model = replace(model_options(args), game_sampling=game_sampling(args.game_sampling or []))
    prices = prices_of(args)  # a bad table fails before any game
    try:
        result = evaluate(
            args.db,
            model,
            protocol=args.protocol,
            # --envs a,b c: each argument is a list already (see _names).
            envs=[env_id for names in args.envs for env_id in names] if args.envs else None,
            opponents=args.opponents,
            num_games=args.num_games,
            seed=args.seed,
            concurrency=args.concurrency,
            max_replays=args.max_replays,
            lease_s=args.lease_s,
            run_name=args.run_name,
            progress=not args.quiet,
            announce=_announce,
            max_response_chars=args.max_response_chars,
            opponent_api_key_env=args.opponent_api_key_env,
            until=args.until,
            sprt=sequential_options(args),
        )
    except EvalInterrupted as stop:
        print(
            f"\nstrategic-arena: interrupted; {stop.stored} of {stop.total} games of run "
            f"{printable_line(stop.run_name)!r} are stored in {shown(args.db)}; rerun the "
            "same command to resume",
            file=sys.stderr,
        )
        return 130
    _print_summary(result)
    if not args.no_report:
        _print_report(
            [result.run_name], args.db, as_json=args.json, all_players=False, prices=prices
        )
    return _eval_status(result)


def _print_summary(result: EvalResult) -> None:
    summary = result.summary
    print(
        f"Run {printable_line(result.run_name)!r} (seed {result.seed}): {summary.played} games "
        f"played, {summary.resumed} resumed, {summary.games_with_errors} with invalid answers, "
        f"{summary.incomplete} incomplete (server failures), in {summary.elapsed_s:.1f} s "
        f"-> {result.db}",
        file=sys.stderr,
    )
    for key, error in summary.failed[:10]:
        print(f"  raised: {printable_line(key)}: {printable_line(error)}", file=sys.stderr)
    for test in result.tests:
        print(f"  {describe(test.as_dict())}", file=sys.stderr)


def _eval_status(result: EvalResult) -> int:
    """Say what a rerun would do about games not scored; 1 when there are any, 2 if refused."""
    summary = result.summary
    if summary.refused:
        _key, message = summary.refused[0]
        count = len(summary.refused)
        games = "game" if count == 1 else "games"
        print(
            f"strategic-arena: error: the endpoint refused the requests of {count} {games} (first: "
            f"{printable_line(message)}); {'it is' if count == 1 else 'they are'} kept as "
            "incomplete and left out of every score. If the request is wrong, fix it "
            "(--base-url, --model, the sampling options, --chat-template-kwargs, --extra-body, "
            "--style) and rerun; a rerun of the same command replays a refused game at most "
            f"--max-replays {result.max_replays} times, then gives it up for good "
            f"({summary.given_up} given up so far)",
            file=sys.stderr,
        )
        return 2
    unscored = result.unscored
    if not unscored:
        return 0
    replayable = unscored - summary.given_up
    print(
        f"strategic-arena: {unscored} games are incomplete: the model's server failed after "
        f"--max-attempts requests, or a player raised. They are not scored; {replayable} will "
        f"be replayed by the same command (--max-replays {result.max_replays}), "
        f"{summary.given_up} are given up",
        file=sys.stderr,
    )
    return 1


def _print_report(
    run_names: Sequence[str] | None,
    db: str,
    *,
    as_json: bool,
    all_players: bool,
    ratings: bool = False,
    prices: Mapping[str, Price] | None = None,
) -> None:
    data = report(db, run_names, ratings=ratings, prices=prices)
    grades = data["grades"]
    if as_json:
        print(json.dumps(data, indent=2, sort_keys=True))
    else:
        print(metrics.render_text(data, all_players=all_players))
        if data["ranking"]:
            print("\n".join(render_ranking(data["ranking"])).lstrip("\n"))
        if grades["moves"] or grades["strategies"]:
            print("\n" + render_text(grades["moves"], grades["strategies"]))


def report_main(args: argparse.Namespace) -> int:
    """``report``: the metrics (and grades) of a results store."""
    _print_report(
        args.run,
        args.db,
        as_json=args.json,
        all_players=args.all_players,
        ratings=args.ratings,
        prices=prices_of(args),
    )
    return 0


def _block(title: str, text: object) -> None:
    """One stored text under its title (it came from an endpoint: escaped first)."""
    print(f"--- {title} ---\n{printable(text, keep_newlines=True)}")


def _print_prompts(move: StoredMove) -> None:
    """A move's prompt, then every answer of a retried decision with the feedback after it."""
    for message in move.prompt:
        _block(printable_line(message.get("role")), message.get("content"))
    tries = move.tries or (Attempt(move.response, move.error),)
    for number, attempt in enumerate(tries, 1):
        label = f" (answer {number} of {len(tries)})" if len(tries) > 1 else ""
        for failure in attempt.failures:
            print(f"... failed request: {printable_line(failure)}")
        if attempt.reasoning:
            _block(f"reasoning{label}", attempt.reasoning)
        _block(f"response{label}", attempt.response)
        if attempt.feedback is not None:
            _block("feedback (user)", attempt.feedback)


def replay_main(args: argparse.Namespace) -> int:
    """``replay``: replay a stored game, printing every move (and with --prompts, prompts)."""
    players: list[str] = []
    status: list[str] = []

    def start(game: StoredGame) -> None:
        players[:] = game.players
        status.append(game.status)
        print(
            f"Game {args.game}: {game.env_id}, seed {game.seed}, key "
            f"{printable_line(game.game_key)}, status {printable_line(game.status)}"
        )

    def show(move: StoredMove, env: TextGameEnv) -> None:
        seat = move.seat
        turn = turn_label(env.acting_seats())
        print(f"\n=== move {move.ply + 1}: seat {seat} ({printable_line(players[seat])}){turn}")
        if args.prompts:
            _print_prompts(move)
        for error in move.errors:
            infrastructure = error.kind in INFRASTRUCTURE_ERROR_KINDS
            what = "server failure, not scored" if infrastructure else "invalid answer"
            print(f"!!! {what} ({printable_line(error.kind)}): {printable_line(error.detail)}")
        if move.action is None and status[0] == "incomplete":
            print(f">>> seat {seat}'s server failed: the game stopped here (incomplete)")
        elif move.action is None:
            print(f">>> seat {seat} forfeits")
        else:
            print(f">>> seat {seat} plays {printable_line(move.action_text)}")

    replayed = replay(args.db, args.game, on_move=show, on_start=start)
    game = replayed.game
    if not game.scored:
        print(
            f"\n{final_state_text(replayed)}\n\nReplayed exactly ({len(replayed.moves)} moves) "
            f"up to the failure: {printable_line(game.infrastructure_error)}. Not scored."
        )
        return 0
    returns = ", ".join(
        f"seat {seat} ({printable_line(name)}): {value:+g}"
        for seat, (name, value) in enumerate(zip(game.players, game.returns, strict=True))
    )
    final = final_state_text(replayed)
    print(f"\n{final}\n\nReplayed exactly ({len(replayed.moves)} moves). {returns}")
    return 0
