"""The arena's commands run: ``eval``, ``report`` and ``replay`` (one call, printing).

Their parsers are :mod:`strategic_arena.cli.arena_parsers`, which imports this module only
when one of them runs. ``eval`` calls :func:`strategic_arena.arena.evaluate.evaluate` (without
``--base-url`` it serves the embedded solver suite and evaluates that, over real HTTP -- the
README's main command); ``report`` prints :func:`strategic_arena.grading.report.report`;
``replay`` prints what :func:`strategic_arena.arena.replay.replay` replays.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Mapping, Sequence
from dataclasses import replace

from strategic_arena.actions import INFRASTRUCTURE_ERROR_KINDS, Attempt
from strategic_arena.arena import metrics
from strategic_arena.arena.costs import Price, parse_price, read_prices
from strategic_arena.arena.defaults import DEFAULT_MAX_TOKENS
from strategic_arena.arena.endpoint import ModelOptions
from strategic_arena.arena.evaluate import EvalInterrupted, EvalResult, evaluate
from strategic_arena.arena.records import StoredGame, StoredMove
from strategic_arena.arena.replay import final_state_text, replay
from strategic_arena.arena.sequential import describe
from strategic_arena.arena.sprt import Sprt
from strategic_arena.asking import Asking, Sampling, read_settings
from strategic_arena.cli.common import turn_label
from strategic_arena.door import shown
from strategic_arena.door.printable import printable, printable_line
from strategic_arena.env import TextGameEnv
from strategic_arena.grading.report import report
from strategic_arena.grading.summary import render_text
from strategic_arena.ranking import render as render_ranking
from strategic_arena.settings_options import settings_from_args


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
