"""The arena commands' parsers: ``eval``, ``report`` and ``replay`` (arguments only).

Light: the defaults the options show come from :mod:`strategic_arena.arena.defaults` and
:mod:`strategic_arena.arena.option_defaults`, and each command's handler
(:mod:`strategic_arena.cli.arena`) is imported only when the command runs, so ``eval --help``
imports neither the store nor numpy. ``grade`` and ``publish`` share the model and price
options.
"""

from __future__ import annotations

import argparse
import re
from typing import Any

from strategic_arena.arena.defaults import (
    DEFAULT_DB,
    DEFAULT_MAX_TOKENS,
    DEFAULT_NUM_GAMES,
    DEFAULT_OPPONENTS,
    PROTOCOLS,
    SOLVER_SUITE_NAME,
)
from strategic_arena.arena.option_defaults import (
    DEFAULT_CAP,
    DEFAULT_LEASE_S,
    DEFAULT_MAX_RESPONSE_CHARS,
    ELO_MODELS,
    SPRT_ALPHA,
    SPRT_BETA,
    SPRT_ELO0,
    SPRT_ELO1,
    SPRT_ELO_MODEL,
)
from strategic_arena.asking import SETTINGS_FILE, Asking, Sampling
from strategic_arena.cli.commands import HELP
from strategic_arena.cli.common import (
    DB_HELP,
    HelpFormatter,
    add_api_key_option,
    later,
    store_option,
)
from strategic_arena.games import CURATED
from strategic_arena.http_body import DEFAULT_MAX_REPLY_BYTES
from strategic_arena.settings_options import (
    ASKING_FLAGS,
    SAMPLING_FLAGS,
    add_settings_options,
    game_sampling_option,
)

#: Where the commands' handlers are, imported when one runs.
_HANDLERS = "strategic_arena.cli.arena"


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
        help=HELP["eval"],
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
    ev.set_defaults(handler=later(_HANDLERS, "eval_main"))

    rep = sub.add_parser(
        "report",
        help=HELP["report"],
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
    rep.set_defaults(handler=later(_HANDLERS, "report_main"))

    rp = sub.add_parser(
        "replay",
        help=HELP["replay"],
        formatter_class=formatter,
        description="Rebuild a stored game from its seed and moves, check that it reaches the "
        "stored history and returns, and print every move (and with --prompts, the prompts).",
    )
    rp.add_argument(
        "game", type=int, help="the game's id (listed by 'strategic-arena runs --games RUN')"
    )
    rp.add_argument("--db", default=DEFAULT_DB, metavar="PATH|URL", type=store_option, help=DB_HELP)
    rp.add_argument("--prompts", action="store_true", help="print each prompt and full response")
    rp.set_defaults(handler=later(_HANDLERS, "replay_main"))


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
    test.add_argument(
        "--elo0",
        type=float,
        default=None,
        metavar="ELO",
        help=f"H0's Elo difference of the model over the opponent (default {SPRT_ELO0:g})",
    )
    test.add_argument(
        "--elo1",
        type=float,
        default=None,
        metavar="ELO",
        help=f"H1's Elo difference, above --elo0 (default {SPRT_ELO1:g})",
    )
    test.add_argument(
        "--alpha",
        type=float,
        default=None,
        help=f"the largest chance of accepting H1 when H0 holds (default {SPRT_ALPHA:g})",
    )
    test.add_argument(
        "--beta",
        type=float,
        default=None,
        help=f"the largest chance of accepting H0 when H1 holds (default {SPRT_BETA:g})",
    )
    test.add_argument(
        "--elo-model",
        choices=ELO_MODELS,
        default=None,
        help="the units of --elo0 and --elo1: logistic Elo (expected score "
        "1/(1+10^(-elo/400))) or normalized Elo (the score's distance from 1/2 in standard "
        f"deviations of one game, times 800/ln 10) (default {SPRT_ELO_MODEL})",
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
