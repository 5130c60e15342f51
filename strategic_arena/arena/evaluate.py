"""The ``eval`` use case: play a model against solvers on every game, store it, summarize it.

:func:`evaluate` resolves the games and opponents (a named protocol, explicit lists or the
defaults), builds the model's entrant from :class:`~strategic_arena.arena.endpoint.ModelOptions`,
names the run after its settings (so the same call resumes) and runs it into the results store.
The CLI's ``eval``, the tests and any script call it; printing is the caller's business.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from strategic_arena.arena import runner, sequential_run
from strategic_arena.arena.defaults import (
    DEFAULT_NUM_GAMES,
    DEFAULT_OPPONENTS,
    PROTOCOLS,
    SOLVER_SUITE,
)
from strategic_arena.arena.endpoint import ModelOptions, checked_entrant, served_endpoint
from strategic_arena.arena.leases import DEFAULT_LEASE_S
from strategic_arena.arena.model_opponents import ModelOpponent
from strategic_arena.arena.pools import WeightedPool
from strategic_arena.arena.preflight import key_source
from strategic_arena.arena.runner import Entrant, GameTask, RunSummary, versus
from strategic_arena.arena.sequential import DEFAULT_CAP, SETTING, MatchupTest, check_testable
from strategic_arena.arena.sprt import Sprt
from strategic_arena.arena.store import DEFAULT_MAX_RESPONSE_CHARS, ResultsStore
from strategic_arena.door import shown
from strategic_arena.games import CURATED, get_spec


@dataclass(frozen=True)
class EvalResult:
    """What :func:`evaluate` did.

    Attributes:
        run_name: the run's name in the store.
        db: the results store (a path, or a URL without its credentials).
        summary: the runner's account of this call.
        max_replays: the replay limit the run used (the report cites it).
        seed: the run's root seed (secret until the run is over; shown after it).
        tests: with ``until="decided"``, each matchup's sequential test after this call.
    """

    run_name: str
    db: str
    summary: RunSummary
    max_replays: int
    seed: int = 0
    tests: tuple[MatchupTest, ...] = ()

    @property
    def unscored(self) -> int:
        """Games of the run left incomplete (a server failed, a player raised): not scored."""
        s = self.summary
        return s.total - s.resumed - s.played


class EvalInterrupted(Exception):
    """Ctrl-C stopped :func:`evaluate`; what was stored stays and a rerun resumes.

    Attributes:
        run_name: the interrupted run.
        stored: games of the run stored so far.
        total: games in the run.
    """

    def __init__(self, run_name: str, stored: int, total: int) -> None:
        super().__init__(f"interrupted run {run_name!r} ({stored} of {total} games stored)")
        self.run_name = run_name
        self.stored = stored
        self.total = total


def opponents_per_env(
    env_ids: Sequence[str], opponents: Sequence[str] | None, protocol: str | None
) -> dict[str, list[str]]:
    """The opponent specs of each game: given, the protocol's, or the defaults."""
    chosen = PROTOCOLS[protocol] if protocol else None
    per_env: dict[str, list[str]] = {}
    for env_id in env_ids:
        if opponents is not None:
            per_env[env_id] = list(opponents)
        elif chosen is not None:
            per_env[env_id] = list(chosen.opponents.get(env_id, ()))
        else:
            # Games outside the curated table (free-text games, the debate) say theirs in
            # their listing (the debate: none, self-play only).
            listed = get_spec(env_id).listing.default_opponents
            per_env[env_id] = list(DEFAULT_OPPONENTS.get(env_id, listed))
    return per_env


def evaluation_tasks(
    candidate: Entrant, rivals: Mapping[str, Sequence[Entrant]], num_games: int, seed: int
) -> list[GameTask]:
    """The games of ``candidate`` against each game's opponents (``rivals`` by env id).

    ``eval`` and the trainer's evaluation schedule their games with it, so a policy in
    training meets its opponents exactly as a served model does: both seats, paired deals.
    """
    tasks: list[GameTask] = []
    for env_id, opponents in rivals.items():
        tasks += versus([candidate], list(opponents), [env_id], num_games, seed)
    return tasks


def evaluate(
    db: str | Path,
    model: ModelOptions,
    *,
    protocol: str | None = None,
    envs: Sequence[str] | None = None,
    opponents: Sequence[str] | None = None,
    num_games: int | None = None,
    seed: int | None = None,
    concurrency: int = 8,
    max_replays: int = 3,
    lease_s: float = DEFAULT_LEASE_S,
    run_name: str | None = None,
    progress: bool = False,
    announce: Callable[[str], None] | None = None,
    max_response_chars: int = DEFAULT_MAX_RESPONSE_CHARS,
    opponent_api_key_env: str | None = None,
    until: str = "all",
    sprt: Sprt | None = None,
) -> EvalResult:
    """Play ``model`` against solvers on each game, both seats, and store every game and move.

    Args:
        db: the results store (created if missing): a SQLite file, or a ``postgresql://`` URL
            that workers on many machines may share.
        model: the endpoint and how to ask it; ``base_url`` ``None`` serves the solver suite.
            Its ``game_sampling`` (a game's own sampling) must name games of the run; model
            opponents, asked like ``model``, sample per game the same way.
        protocol: a named protocol (:data:`~strategic_arena.arena.defaults.PROTOCOLS`) that
            sets games, opponents and games per setting.
        envs: games to play (default: the protocol's, else every curated game; with no
            ``base_url``, every game of the solver suite).
        opponents: opponent specs, each playing the games it can (default per game); a
            ``model:NAME@BASE_URL`` spec is a model behind another endpoint, asked like
            ``model`` (:mod:`~strategic_arena.arena.model_opponents`), and a
            ``pool:W*SPEC|W*SPEC`` spec a weighted pool of opponents, one drawn per game
            (:mod:`~strategic_arena.arena.pools`).
        num_games: games per model/opponent/game (default: the protocol's, else 20); with
            ``until="decided"``, the most games each matchup's test may take (default
            :data:`~strategic_arena.arena.sequential.DEFAULT_CAP`).
        seed: the run's root seed (deals, player seeds, the order games start in); ``None``: a
            secret seed drawn from the OS for a new run (the endpoint cannot predict the
            deals), the stored one for a run that resumes.
        concurrency: games in flight at once.
        max_replays: how often a later call replays a game a server failure stopped.
        lease_s: with a PostgreSQL store, how long a worker's lease on a game lasts unrenewed:
            every ``evaluate`` of the same run on that store is one worker sharing its games
            (:mod:`~strategic_arena.arena.leases`).
        run_name: the run's name (default: derived from the settings, so a rerun resumes).
        progress: print the progress line.
        announce: told about the locally served suite, when one is served, and which key
            (by its variable's name) each endpoint is sent.
        max_response_chars: the longest response or reasoning stored per answer.
        opponent_api_key_env: environment variable holding the model opponents' API key
            (default ``None``: no key is sent to them; the evaluated model's key goes to its
            own endpoint only); never stored.
        until: ``all`` plays every game; ``decided`` plays each matchup pair by pair until a
            sequential test decides whether the model is stronger than the opponent
            (:mod:`~strategic_arena.arena.sequential_run`), at most ``num_games`` games.
        sprt: the test of ``until="decided"`` (default :class:`Sprt`'s: logistic Elo 0
            against 100, alpha and beta 0.05); stored with the run and part of its name.

    Raises:
        ValueError: bad settings (unknown game, protocol, opponent; counts below 1; sampling
            for a game the run does not play), before any game is played.
        PreflightError: the endpoint cannot serve the run (a ``ValueError``; the message names
            the likely cause); nothing is stored.
        EvalInterrupted: Ctrl-C; the games stored so far stay.
    """
    if protocol is not None and protocol not in PROTOCOLS:
        raise ValueError(f"unknown protocol {protocol!r}; choose from {', '.join(PROTOCOLS)}")
    chosen = PROTOCOLS[protocol] if protocol else None
    env_ids = list(envs or (chosen.env_ids if chosen else default_envs(model.base_url)))
    for env_id in env_ids:
        get_spec(env_id)  # unknown ids fail before anything starts
    check_game_sampling(model.game_sampling, env_ids)
    if model.base_url is None:
        check_suite_covers(env_ids)
    test = sequential_test(until, sprt, env_ids)
    if num_games is None:  # a sequential test's cap, the protocol's count, or the default
        num_games = DEFAULT_CAP if test else chosen.num_games if chosen else DEFAULT_NUM_GAMES
    check_counts(num_games, concurrency, max_replays)
    per_env = opponents_per_env(env_ids, opponents, protocol)
    # Parsed and built before any endpoint is asked anything: a bad spec fails first.
    specs = list(dict.fromkeys(spec for specs in per_env.values() for spec in specs))
    pools = {spec: pool for spec in specs if (pool := WeightedPool.parse(spec)) is not None}
    # A pool's members are opponents like the others, built (and checked) with them.
    members = [spec for pool in pools.values() for _, spec in pool.members]
    wanted = list(dict.fromkeys([*(s for s in specs if s not in pools), *members]))
    models = {spec: ModelOpponent.parse(spec) for spec in wanted}
    built = {spec: Entrant.opponent(spec) for spec in wanted if models[spec] is None}
    if model.base_url is None:  # the embedded suite is no origin the user's key was for
        model = replace(model, api_key_env=None)
    # The preflight asks for a game with the run's own sampling where one has it (each game
    # with sampling of its own is asked too), so every sampling the run sends is tried once.
    probed = next((e for e in env_ids if e not in model.game_sampling), env_ids[0])
    with served_endpoint(model, announce) as (base_url, model_name):
        # Before anything is stored: a configuration mistake must not become stored games.
        candidate = checked_entrant(model, base_url, model_name, seed, probed)
        if model.base_url is not None:  # the embedded suite is sent none, nothing to say
            _announce_key(announce, base_url, model.api_key_env)
        for spec, opponent in models.items():
            if opponent is not None:  # another endpoint: checked like the evaluated one, and
                # sent only the key named for it (none by default)
                named = opponent.named_like(candidate)  # the evaluated model itself: one name
                built[spec] = named.entrant(model, opponent_api_key_env, seed, probed)
                _announce_key(announce, opponent.base_url, opponent_api_key_env)
        for spec, pool in pools.items():
            built[spec] = pool.entrant([built[member] for _, member in pool.members])
        rivals = {env_id: [built[spec] for spec in specs] for env_id, specs in per_env.items()}

        def make_tasks(root_seed: int) -> list[GameTask]:
            return evaluation_tasks(candidate, rivals, num_games, root_seed)

        make_tasks(0)  # a refused schedule fails before the store is even created
        opponent_models = [built[spec].name for spec, parsed in models.items() if parsed]
        settings: dict[str, Any] = {
            # Every model of the run is evaluated: opponents behind endpoints too.
            "candidates": list(dict.fromkeys([candidate.name, *opponent_models])),
            # The embedded suite's port is this process's own pick, different in each worker:
            # not part of what the run is (None, as in its default name).
            "model": {**candidate.params, **({"base_url": None} if model.base_url is None else {})},
            "opponents": per_env,
            "num_games": num_games,
            "protocol": protocol,
            # A sequential run's test is part of what it is (and of its name); a run of fixed
            # size has no such key, so its name is what it always was.
            **({SETTING: test.as_dict()} if test else {}),
        }
        name = run_name or default_run_name(candidate, settings, model.base_url, seed)
        # Stored, not part of the name: the report says which games eval will still replay.
        settings["max_replays"] = max_replays
        with ResultsStore(db, max_response_chars=max_response_chars) as store:
            root_seed, tasks = runner.prepare(store, name, seed, settings, make_tasks)
            options: dict[str, Any] = {
                "seed": root_seed,
                "concurrency": concurrency,
                "settings": settings,
                "progress": progress,
                "max_replays": max_replays,
                "lease_s": lease_s,
            }
            summary, tests = _play(store, name, tasks, test, candidate.name, options)
    return EvalResult(name, shown(db), summary, max_replays, root_seed, tests)


def _play(
    store: ResultsStore,
    name: str,
    tasks: Sequence[GameTask],
    test: Sprt | None,
    candidate: str,
    options: Mapping[str, Any],
) -> tuple[RunSummary, tuple[MatchupTest, ...]]:
    """Play the run: every game, or each matchup until its sequential ``test`` decides.

    Raises:
        EvalInterrupted: Ctrl-C; the games stored so far stay.
    """
    try:
        if test is None:
            return runner.run(store, name, tasks, **options), ()
        played = sequential_run.run(store, name, tasks, test, candidate, **options)
        return played.summary, played.tests
    except KeyboardInterrupt:
        stored = len(store.completed_keys(store.run_id(name)))
        raise EvalInterrupted(name, stored, len(tasks)) from None


def check_counts(num_games: int, concurrency: int, max_replays: int) -> None:
    """Refuse counts out of range (0 games is an error, not "the default").

    Raises:
        ValueError: one line naming the option.
    """
    if num_games < 1:
        raise ValueError("--num-games must be at least 1")
    if concurrency < 1:
        raise ValueError("--concurrency must be at least 1")
    if max_replays < 0:
        raise ValueError("--max-replays must be at least 0")


def sequential_test(until: str, sprt: Sprt | None, env_ids: Sequence[str]) -> Sprt | None:
    """The sequential test of ``until="decided"`` (``None`` for a run of fixed size).

    Raises:
        ValueError: an unknown ``until``, a test given without ``until="decided"``, or a game
            the test cannot compare two players on (:func:`~.sequential.check_testable`).
    """
    if until not in ("all", "decided"):
        raise ValueError(f"--until must be 'all' or 'decided', not {until!r}")
    if until == "all":
        if sprt is not None:
            raise ValueError("the sequential test's settings apply with --until decided only")
        return None
    check_testable(env_ids)
    return sprt or Sprt()


def _announce_key(
    announce: Callable[[str], None] | None, base_url: str, api_key_env: str | None
) -> None:
    """Tell ``announce`` which key (by variable name) the endpoint at ``base_url`` is sent."""
    if announce is not None:
        announce(f"Endpoint {shown(base_url)}: sent {key_source(api_key_env)}")


def check_game_sampling(game_sampling: Mapping[str, Any], env_ids: Sequence[str]) -> None:
    """Refuse sampling of its own for a game that is unknown or that the run does not play.

    Raises:
        ValueError: one line naming the game (and the run's games).
    """
    for env_id in game_sampling:
        try:
            get_spec(env_id)
        except ValueError as error:
            raise ValueError(f"--game-sampling {env_id}: {error}") from None
        if env_id not in env_ids:
            raise ValueError(
                f"--game-sampling names {env_id}, which the run does not play (its games: "
                f"{', '.join(env_ids)}); add it to --envs or drop the option"
            )


def check_suite_covers(env_ids: Sequence[str]) -> None:
    """Refuse games the embedded solver suite cannot play (no ``--base-url`` given).

    Each game names its suite entrant in its spec (``listing.solver``); a game without one
    would only fail once its games were asked for, as stored incomplete games.

    Raises:
        ValueError: a game has no solver-suite entrant; the message names the fix.
    """
    missing = [env_id for env_id in env_ids if env_id not in SOLVER_SUITE]
    reasons = sorted({_no_solver(env_id) for env_id in missing} - {""})
    if reasons:  # the spec says why no solver plays it: that is the one line to show
        raise ValueError(
            f"the embedded solver suite plays no {', '.join(missing)}: {'; '.join(reasons)}"
        )
    if missing:
        raise ValueError(
            f"the embedded solver suite plays no {', '.join(missing)} (its spec names no "
            "solver-suite entrant): give --base-url to evaluate a model there, or choose "
            f"--envs among {', '.join(SOLVER_SUITE)}"
        )


def default_envs(base_url: str | None) -> list[str]:
    """``eval``'s games when neither ``--envs`` nor ``--protocol`` names them.

    A model (a ``base_url``) plays every curated game; the embedded solver suite (no
    ``base_url``) plays the games it has an entrant for, since a curated game may have none
    (Hanabi with 3-5 players: its spec says why).
    """
    return list(CURATED) if base_url is not None else list(SOLVER_SUITE)


def _no_solver(env_id: str) -> str:
    """Why the spec of ``env_id`` names no solver-suite entrant (empty when it does not say)."""
    try:
        return get_spec(env_id).listing.no_solver
    except ValueError:  # an unknown id is refused with its own error elsewhere
        return ""


def default_run_name(
    candidate: Entrant, settings: Mapping[str, Any], base_url: str | None, seed: int | None
) -> str:
    """``eval-MODEL-DIGEST``: the same settings give the same name, so a rerun resumes.

    The embedded endpoint's port changes from run to run; it must not change the name, so the
    digest hashes the user's base URL (``None`` for the embedded suite) instead of the served one.
    Without a seed (a secret one) the name is the same too: the rerun resumes with the stored
    seed.
    """
    # The URL without its secrets: not even a hash of a key goes into the name.
    public = None if base_url is None else shown(base_url)
    identity = {**settings, "model": {**candidate.params, "base_url": public}}
    label = "secret" if seed is None else seed
    digest = hashlib.sha256(json.dumps([identity, label], sort_keys=True).encode()).hexdigest()[:8]
    return f"eval-{candidate.name}-{digest}"
