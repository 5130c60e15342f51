"""The arena's subcommands of ``strategic-arena``: ``eval``, ``report`` and ``replay``.

``eval`` evaluates a model behind an OpenAI-compatible endpoint against solvers, stores every
game and move, and prints the report; without ``--base-url`` it serves the embedded solver suite
(:data:`~strategic_arena.arena.defaults.SOLVER_SUITE`) on a local port and evaluates that, over
real HTTP -- the README's main command. ``report`` recomputes the metrics from a store;
``replay`` replays a stored game exactly and prints it.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from strategic_arena._extras import MissingExtraError
from strategic_arena.arena.defaults import (
    DEFAULT_NUM_GAMES,
    DEFAULT_OPPONENTS,
    PROTOCOLS,
    SOLVER_SUITE,
    SOLVER_SUITE_NAME,
)
from strategic_arena.arena.replay import ReplayError
from strategic_arena.games import CURATED, get_spec
from strategic_arena.validation import STYLES, THINKING_IN_HISTORY

if TYPE_CHECKING:
    from strategic_arena.arena.runner import Entrant

#: Where results go when ``--db`` is not given (relative to the working directory).
DEFAULT_DB = "results/arena.sqlite"


class _HelpFormatter(argparse.ArgumentDefaultsHelpFormatter):
    """Shows an option's default only when it says something.

    Not ``None`` or a flag's ``False``, and not when the help text already states the default
    in words (argparse would print both).
    """

    def _get_help_string(self, action: argparse.Action) -> str | None:
        text = action.help or ""
        if action.default is None or action.default is False or "default" in text:
            return text
        return super()._get_help_string(action)


def _names(text: str) -> list[str]:
    """``a,b`` -> ``["a", "b"]``: list options take commas as well as spaces."""
    names = [name.strip() for name in text.split(",") if name.strip()]
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
    endpoint.add_argument(
        "--api-key-env",
        default="OPENAI_API_KEY",
        metavar="VAR",
        help="environment variable holding the API key (never stored or printed)",
    )
    endpoint.add_argument(
        "--timeout", type=float, default=120.0, metavar="S", help="per-request timeout, seconds"
    )
    endpoint.add_argument(
        "--max-attempts",
        type=int,
        default=6,
        help="requests per answer on 429/5xx/timeouts/dropped connections (backoff + jitter)",
    )
    sampling = command.add_argument_group("sampling (unset: the server's default)")
    sampling.add_argument("--temperature", type=float, default=None)
    sampling.add_argument("--top-p", type=float, default=None)
    sampling.add_argument("--max-tokens", type=int, default=None)
    sampling.add_argument("--top-k", type=int, default=None, help="extra body field (vLLM/SGLang)")
    sampling.add_argument("--min-p", type=float, default=None, help="extra body field (vLLM)")
    sampling.add_argument(
        "--sampling-seed", type=int, default=None, help="the request's seed field"
    )
    prompts = command.add_argument_group("prompts and answers")
    prompts.add_argument(
        "--style",
        choices=STYLES,
        default="marshal",
        help="response format (tools: the model calls play(move); needs tool calling)",
    )
    prompts.add_argument(
        "--history", action="store_true", help="include the move history in prompts"
    )
    prompts.add_argument(
        "--shuffle-actions",
        action="store_true",
        help="list the legal actions in a seeded random order at each decision (a model "
        "trained with shuffle_actions saw them so)",
    )
    prompts.add_argument(
        "--policy",
        default="forfeit",
        help="invalid answer: forfeit (MARSHAL), retry:K (re-ask with feedback) or random",
    )
    prompts.add_argument(
        "--lenient", action="store_true", help="accept answers that break the strict layout"
    )
    prompts.add_argument(
        "--thinking-in-history",
        choices=THINKING_IN_HISTORY,
        default="keep",
        help="what a re-asked model sees of its earlier answers: keep them, strip <think> "
        "blocks, or the answer only",
    )


def add_parsers(sub: Any) -> None:
    """Register ``eval``, ``report`` and ``replay`` on the CLI's subparsers."""
    formatter = _HelpFormatter
    ev = sub.add_parser(
        "eval",
        help="evaluate a model endpoint against solvers, store every move, print the report",
        formatter_class=formatter,
        description="Play a model behind an OpenAI-compatible endpoint against solvers on "
        "each game, both seats, store every game and move in SQLite, then print the report. "
        "Rerunning the same command resumes: only missing games are played. Without "
        "--base-url, the built-in solver suite is served on a local port and evaluated as the "
        "model (the README's main command).",
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
        f"{' '.join(CURATED)})",
    )
    games.add_argument(
        "--opponents",
        nargs="+",
        default=None,
        metavar="SPEC",
        help="opponent specs, each playing the games it can (see 'strategic-arena opponents'); "
        "default per game: "
        + "; ".join(f"{e}: {', '.join(o)}" for e, o in DEFAULT_OPPONENTS.items())
        + ". Cooperative games are also played in self-play",
    )
    games.add_argument(
        "--num-games",
        type=int,
        default=None,
        metavar="N",
        help=f"games per model/opponent/game, split over both seats (default {DEFAULT_NUM_GAMES}; "
        "a protocol sets its own)",
    )
    games.add_argument("--seed", type=int, default=0, help="run seed: deals and player seeds")
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
    run.add_argument("--db", default=DEFAULT_DB, metavar="PATH", help="SQLite results store")
    run.add_argument(
        "--run-name",
        default=None,
        help="the run's name (default: derived from the settings, so the same command resumes)",
    )
    run.add_argument("--json", action="store_true", help="print the report as JSON")
    run.add_argument("--no-report", action="store_true", help="do not print the report")
    run.add_argument("--quiet", action="store_true", help="no progress line")

    rep = sub.add_parser(
        "report",
        help="recompute and print the metrics of a results store",
        formatter_class=formatter,
        description="Metrics per player, game and opponent from the results store: mean return "
        "with 95%% CI (both seats and each seat), W/D/L, normalized score, invalid answers by "
        "kind, tokens and latency. Recomputed from the stored games every time.",
    )
    rep.add_argument("--db", default=DEFAULT_DB, metavar="PATH", help="SQLite results store")
    rep.add_argument(
        "--run", action="append", default=None, metavar="NAME", help="only this run (repeatable)"
    )
    rep.add_argument("--json", action="store_true", help="JSON with every per-seat summary")
    rep.add_argument(
        "--all-players",
        action="store_true",
        help="rows for every player, not only the evaluated models",
    )

    rp = sub.add_parser(
        "replay",
        help="replay a stored game exactly and print its moves",
        formatter_class=formatter,
        description="Rebuild a stored game from its seed and moves, check that it reaches the "
        "stored history and returns, and print every move (and with --prompts, the prompts).",
    )
    rp.add_argument("game", type=int, help="the game's id (see 'report --json' or the games table)")
    rp.add_argument("--db", default=DEFAULT_DB, metavar="PATH", help="SQLite results store")
    rp.add_argument("--prompts", action="store_true", help="print each prompt and full response")


def dispatch(args: argparse.Namespace) -> int:
    """Run the arena subcommand in ``args``; returns the exit status."""
    try:
        if args.command == "eval":
            return _eval(args)
        if args.command == "report":
            return _report(args)
        return _replay(args)
    except ReplayError as error:
        print(f"strategic-arena: replay diverged: {error}", file=sys.stderr)
        return 1
    except (ValueError, KeyError, MissingExtraError, OSError) as error:
        message = error.args[0] if isinstance(error, KeyError) and error.args else error
        print(f"strategic-arena: error: {message}", file=sys.stderr)
        return 2


@contextmanager
def _endpoint(args: argparse.Namespace) -> Iterator[tuple[str, str | None]]:
    """The base URL and model to evaluate: the user's, or the solver suite served locally."""
    if args.base_url is not None:
        yield args.base_url, args.model
        return
    from strategic_arena.serve import PlayerServer

    with PlayerServer(dict(SOLVER_SUITE), model=SOLVER_SUITE_NAME) as server:
        print(
            f"No --base-url: serving the solver suite as model {SOLVER_SUITE_NAME!r} at "
            f"{server.base_url}",
            file=sys.stderr,
        )
        yield server.base_url, SOLVER_SUITE_NAME


def _list_models(base_url: str, api_key_env: str) -> list[dict[str, Any]]:
    """The endpoint's ``/v1/models`` listing (empty when it cannot be read)."""
    import os
    import urllib.request

    request = urllib.request.Request(base_url.rstrip("/") + "/models")
    key = os.environ.get(api_key_env)
    if key:
        request.add_header("Authorization", f"Bearer {key}")
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            data = json.load(response).get("data", [])
    except (OSError, ValueError, AttributeError):
        return []
    return [model for model in data if isinstance(model, dict)]


def _only_model(models: Sequence[dict[str, Any]]) -> str:
    """The model an endpoint serves, when it lists exactly one."""
    if len(models) != 1:
        raise ValueError(f"the endpoint lists {len(models)} models; choose one with --model")
    return str(models[0]["id"])


def model_entrant(args: argparse.Namespace, base_url: str, model: str | None) -> Entrant:
    """The model at ``base_url`` as an arena entrant, from :func:`add_model_options`' options.

    ``model`` ``None``: the only model the endpoint lists.
    """
    from strategic_arena.arena.runner import Entrant
    from strategic_arena.backends import OpenAIBackend, SamplingParams

    extra: dict[str, Any] = {}
    if args.top_k is not None:
        extra["top_k"] = args.top_k
    if args.min_p is not None:
        extra["min_p"] = args.min_p
    sampling = SamplingParams(
        temperature=args.temperature,
        top_p=args.top_p,
        max_tokens=args.max_tokens,
        seed=args.sampling_seed,
        extra_body=extra,
    )
    models = _list_models(base_url, args.api_key_env)
    model = model or _only_model(models)
    backend = OpenAIBackend(
        model,
        base_url,
        api_key_env=args.api_key_env,
        sampling=sampling,
        timeout_s=args.timeout,
        max_attempts=args.max_attempts,
        seed=args.seed,
    )
    return Entrant.llm(
        backend,
        name=args.name,
        style=args.style,
        policy=args.policy,
        include_history=args.history,
        strict=not args.lenient,
        thinking_in_history=args.thinking_in_history,
        shuffle_actions=args.shuffle_actions,
    )


def _eval(args: argparse.Namespace) -> int:
    from strategic_arena.arena.runner import Entrant, GameTask, run, versus
    from strategic_arena.arena.store import ResultsStore

    protocol = PROTOCOLS[args.protocol] if args.protocol else None
    # --envs a,b c: each argument is a list already (see _names).
    chosen = [env_id for names in args.envs for env_id in names] if args.envs else None
    env_ids = list(chosen or (protocol.env_ids if protocol else CURATED))
    for env_id in env_ids:
        get_spec(env_id)  # unknown ids fail before anything starts
    num_games = args.num_games
    if num_games is None:
        num_games = protocol.num_games if protocol else DEFAULT_NUM_GAMES
    if num_games < 1:  # 0 is an error, not "the default"
        raise ValueError("--num-games must be at least 1")
    if args.concurrency < 1:
        raise ValueError("--concurrency must be at least 1")
    if args.max_replays < 0:
        raise ValueError("--max-replays must be at least 0")
    per_env: dict[str, list[str]] = {}
    for env_id in env_ids:
        if args.opponents is not None:
            per_env[env_id] = list(args.opponents)
        elif protocol is not None:
            per_env[env_id] = list(protocol.opponents.get(env_id, ()))
        else:
            per_env[env_id] = list(DEFAULT_OPPONENTS.get(env_id, ("random",)))
    opponent_entrants = {
        spec: Entrant.opponent(spec) for specs in per_env.values() for spec in specs
    }
    with _endpoint(args) as (base_url, model):
        candidate = model_entrant(args, base_url, model)
        tasks: list[GameTask] = []
        for env_id in env_ids:
            rivals = [opponent_entrants[spec] for spec in per_env[env_id]]
            tasks += versus([candidate], rivals, [env_id], num_games, args.seed)
        settings = {
            "candidates": [candidate.name],
            "model": dict(candidate.params),
            "opponents": per_env,
            "num_games": num_games,
            "protocol": args.protocol,
        }
        # The embedded endpoint's port changes from run to run; it must not change the name.
        identity = {**settings, "model": {**candidate.params, "base_url": args.base_url}}
        digest = hashlib.sha256(
            json.dumps([identity, args.seed], sort_keys=True).encode()
        ).hexdigest()[:8]
        run_name = args.run_name or f"eval-{candidate.name}-{digest}"
        with ResultsStore(args.db) as store:
            try:
                summary = run(
                    store,
                    run_name,
                    tasks,
                    seed=args.seed,
                    concurrency=args.concurrency,
                    settings=settings,
                    progress=not args.quiet,
                    max_replays=args.max_replays,
                )
            except KeyboardInterrupt:
                stored = len(store.completed_keys(store.run_id(run_name)))
                print(
                    f"\nstrategic-arena: interrupted; {stored} of {len(tasks)} games of run "
                    f"{run_name!r} are stored in {args.db}; rerun the same command to resume",
                    file=sys.stderr,
                )
                return 130
            print(
                f"Run {run_name!r}: {summary.played} games played, {summary.resumed} resumed, "
                f"{summary.games_with_errors} with invalid answers, {summary.incomplete} "
                f"stopped by server failures, in {summary.elapsed_s:.1f} s "
                f"-> {args.db}",
                file=sys.stderr,
            )
            for key, error in summary.failed[:10]:
                print(f"  failed: {key}: {error}", file=sys.stderr)
            if not args.no_report:
                _print_report(store, [run_name], as_json=args.json, all_players=False)
    status = 0
    if summary.failed:
        print(
            f"strategic-arena: {len(summary.failed)} games failed and were not stored; rerun the "
            "same command to play them",
            file=sys.stderr,
        )
        status = 1
    unscored = summary.total - summary.resumed - summary.played - len(summary.failed)
    if unscored:
        replayable = unscored - summary.given_up
        print(
            f"strategic-arena: {unscored} games are incomplete: the model's server failed after "
            f"--max-attempts requests. They are not scored; {replayable} will be replayed by "
            f"the same command (--max-replays {args.max_replays}), {summary.given_up} are given "
            "up",
            file=sys.stderr,
        )
        status = 1
    return status


def _print_report(
    store: Any, run_names: Sequence[str] | None, *, as_json: bool, all_players: bool
) -> None:
    from strategic_arena.arena import metrics
    from strategic_arena.grading.cli import stored_grades
    from strategic_arena.grading.summary import render_text

    data = metrics.report(store, run_names)
    grades = stored_grades(store, run_names)
    if as_json:
        print(json.dumps({**data, "grades": grades}, indent=2, sort_keys=True))
    else:
        print(metrics.render_text(data, all_players=all_players))
        if grades["moves"] or grades["strategies"]:
            print("\n" + render_text(grades["moves"], grades["strategies"]))


def _report(args: argparse.Namespace) -> int:
    from pathlib import Path

    from strategic_arena.arena.store import ResultsStore

    if not Path(args.db).exists():
        raise ValueError(f"no results store at {args.db}")
    with ResultsStore(args.db) as store:
        _print_report(store, args.run, as_json=args.json, all_players=args.all_players)
    return 0


def _replay(args: argparse.Namespace) -> int:
    from pathlib import Path

    from strategic_arena.actions import INFRASTRUCTURE_ERROR_KINDS, Attempt
    from strategic_arena.arena.records import StoredMove
    from strategic_arena.arena.replay import final_state_text, replay_game
    from strategic_arena.arena.store import ResultsStore
    from strategic_arena.env import TextGameEnv

    if not Path(args.db).exists():
        raise ValueError(f"no results store at {args.db}")

    def show(move: StoredMove, env: TextGameEnv) -> None:
        seat = move.seat
        print(f"\n=== move {move.ply + 1}: seat {seat} ({game.players[seat]})")
        if args.prompts:
            for message in move.prompt:
                print(f"--- {message['role']} ---\n{message['content']}")
            # Every answer of a retried decision, with the feedback the model got after it.
            tries = move.tries or (Attempt(move.response, move.error),)
            for number, attempt in enumerate(tries, 1):
                label = f" (answer {number} of {len(tries)})" if len(tries) > 1 else ""
                for failure in attempt.failures:
                    print(f"... failed request: {failure}")
                if attempt.reasoning:
                    print(f"--- reasoning{label} ---\n{attempt.reasoning}")
                print(f"--- response{label} ---\n{attempt.response}")
                if attempt.feedback is not None:
                    print(f"--- feedback (user) ---\n{attempt.feedback}")
        for error in move.errors:
            infrastructure = error.kind in INFRASTRUCTURE_ERROR_KINDS
            what = "server failure, not scored" if infrastructure else "invalid answer"
            print(f"!!! {what} ({error.kind}): {error.detail}")
        if move.action is None and game.status == "incomplete":
            print(f">>> seat {seat}'s server failed: the game stopped here (incomplete)")
        elif move.action is None:
            print(f">>> seat {seat} forfeits")
        else:
            print(f">>> seat {seat} plays {move.action_text}")

    with ResultsStore(args.db) as store:
        game = store.game(args.game)
        print(
            f"Game {args.game}: {game.env_id}, seed {game.seed}, key {game.game_key}, "
            f"status {game.status}"
        )
        replay = replay_game(store, args.game, on_move=show)
    if not game.scored:
        print(
            f"\n{final_state_text(replay)}\n\nReplayed exactly ({len(replay.moves)} moves) up to "
            f"the failure: {game.infrastructure_error}. Not scored; the next run replays it."
        )
        return 0
    returns = ", ".join(
        f"seat {seat} ({name}): {value:+g}"
        for seat, (name, value) in enumerate(zip(game.players, game.returns, strict=True))
    )
    final = final_state_text(replay)
    print(f"\n{final}\n\nReplayed exactly ({len(replay.moves)} moves). {returns}")
    return 0
