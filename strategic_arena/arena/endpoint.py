"""The model under evaluation: an OpenAI-compatible endpoint and how to ask it.

:class:`ModelOptions` gathers what a user says about the model (endpoint, sampling, prompt and
answer settings); :func:`checked_entrant` checks the endpoint (:mod:`.preflight`) and turns it
into an arena :class:`Entrant`. ``evaluate`` and ``grade`` share both, so a model is asked the
same way whether it plays games or answers strategy queries. :func:`served_endpoint` serves
the embedded solver suite when no endpoint is given (the README's main command).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field, replace

from strategic_arena.arena.defaults import SOLVER_SUITE, SOLVER_SUITE_NAME
from strategic_arena.arena.preflight import check_request, choose_model, list_served_models
from strategic_arena.arena.runner import Entrant
from strategic_arena.asking import Asking, Sampling, game_sampling_params
from strategic_arena.backends import OpenAIBackend
from strategic_arena.http_body import DEFAULT_MAX_REPLY_BYTES
from strategic_arena.serve import PlayerServer
from strategic_arena.turn import Player


@dataclass(frozen=True)
class ModelOptions:
    """How to reach the evaluated model and how to ask it (the CLI's model options).

    Attributes:
        base_url: the OpenAI-compatible base URL (``http://host:port/v1``); ``None``: serve
            the embedded solver suite locally (``evaluate`` only).
        model: the model name sent with each request; ``None``: the only one ``/models`` lists.
        name: the model's name in the store (default: the model name).
        api_key_env: environment variable holding the API key (never stored or printed);
            ``None``: no key is sent (a model opponent with no key named for it).
        timeout_s: deadline of each request, from connecting to the reply's last byte.
        max_attempts: requests per answer on transient faults.
        max_reply_bytes: the cap on each reply's decoded size (a larger reply is the
            endpoint's failure: :mod:`strategic_arena.http_body`).
        asking: how the model is asked (:class:`~strategic_arena.asking.Asking`: style,
            prompts, policy, template kwargs...); a user's prompt set is part of the player's
            identity (see :meth:`Entrant.llm`).
        sampling: how it samples (:class:`~strategic_arena.asking.Sampling`; unset fields:
            the server's defaults).
        game_sampling: per env id, that game's own sampling: each field it sets wins over
            ``sampling`` in every request of that game's games (MindGames' winner tuned
            temperature, top-p, top-k and min-p per game); stored with the player's parameters
            as ``game_sampling`` (:func:`~strategic_arena.asking.game_sampling_params`), as
            the trainer's evaluation stores ``eval.game_sampling``.
    """

    base_url: str | None = None
    model: str | None = None
    name: str | None = None
    api_key_env: str | None = "OPENAI_API_KEY"
    timeout_s: float = 120.0
    max_attempts: int = 6
    max_reply_bytes: int = DEFAULT_MAX_REPLY_BYTES
    asking: Asking = field(default_factory=Asking)
    sampling: Sampling = field(default_factory=Sampling)
    game_sampling: Mapping[str, Sampling] = field(default_factory=dict)


def model_entrant(options: ModelOptions, base_url: str, model: str, seed: int | None) -> Entrant:
    """The model ``model`` at ``base_url`` as an arena entrant, asked as ``options`` say.

    ``seed`` seeds the backend's retry jitter (``None``: the OS's entropy). A game of
    ``options.game_sampling`` is played through a backend of its own, sampling as that game
    says; the entrant is one player all the same (one name, one set of parameters).
    """

    def entrant(sampling: Sampling) -> Entrant:
        backend = OpenAIBackend(
            model,
            base_url,
            api_key_env=options.api_key_env,
            sampling=sampling,
            asking=options.asking,
            timeout_s=options.timeout_s,
            max_attempts=options.max_attempts,
            seed=seed,
            max_reply_bytes=options.max_reply_bytes,
        )
        return Entrant.llm(backend, name=options.name)

    common = entrant(options.sampling)
    if not options.game_sampling:
        return common
    builders = {
        env_id: entrant(game.over(options.sampling)).build
        for env_id, game in options.game_sampling.items()
    }

    def build(env_id: str, seed: int) -> Player:
        return builders.get(env_id, common.build)(env_id, seed)

    params = {**common.params, "game_sampling": game_sampling_params(options.game_sampling)}
    return replace(common, params=params, build=build)


def checked_entrant(
    options: ModelOptions, base_url: str, model: str | None, seed: int | None, env_id: str
) -> Entrant:
    """:func:`model_entrant` after the preflight checks (:mod:`.preflight`) pass.

    ``model`` ``None``: the only model the endpoint lists. One real request, the first decision
    of an ``env_id`` game in the requested style, must go through, and one of each game of
    ``options.game_sampling`` (sampling as that game does).

    Raises:
        PreflightError: the endpoint cannot serve the run; the message names the likely cause.
    """
    models = list_served_models(
        base_url, options.api_key_env, options.timeout_s, options.max_reply_bytes
    )
    name = choose_model(models, model)
    # The probe gets its own backend, dropped here while no event loop runs: an HTTP client
    # bound to the probe's finished loop must not be closed later inside the run's loop. It
    # asks once: an invalid answer is the model's business, not a reason to re-ask.
    forfeit = replace(options, asking=replace(options.asking, policy="forfeit"))
    probe = model_entrant(forfeit, base_url, name, seed)
    # Each game's own sampling is asked once too: a setting the server refuses fails here.
    for checked in dict.fromkeys([env_id, *options.game_sampling]):
        check_request(probe, checked, base_url, options.api_key_env)
    return model_entrant(options, base_url, name, seed)


@contextmanager
def served_endpoint(
    options: ModelOptions, announce: Callable[[str], None] | None = None
) -> Iterator[tuple[str, str | None]]:
    """The base URL and model to evaluate: the user's, or the solver suite served locally.

    ``announce`` is told where the suite is served (the CLI prints it).
    """
    if options.base_url is not None:
        yield options.base_url, options.model
        return
    with PlayerServer(dict(SOLVER_SUITE), model=SOLVER_SUITE_NAME) as server:
        if announce is not None:
            announce(
                f"No --base-url: serving the solver suite as model {SOLVER_SUITE_NAME!r} at "
                f"{server.base_url}"
            )
        yield server.base_url, SOLVER_SUITE_NAME
