"""The command line that reproduces a stored run, rebuilt from the run's stored settings.

The published page shows, for every run, the ``strategic-arena`` command that plays the same
games again: same games, opponents, seeds, prompts and sampling, into a run of the same name (so
the rerun resumes, or checks game for game against the published digest). A run that stored its
own command (the baseline ladder) shows that one; an ``eval`` run's command is rebuilt from the
settings ``eval`` stores (the model's public parameters, opponents per game, games per
matchup, protocol) and the run's seed. A run stored by other code (the trainer's evaluation)
has no command: :func:`command` returns ``None``.

Nothing secret can appear: the stored parameters never hold an API key (only the base URL,
with credentials removed when stored), and the command drops any query string or fragment of
the URL as well, since some gateways take keys there.

Each stored model parameter maps to its ``eval`` option through :data:`MODEL_OPTIONS`, a
registry of small :class:`Option` objects. The stored parameters are the entrant's
(:meth:`strategic_arena.arena.runner.Entrant.llm`): prompt options, the request's sampling
fields and its extra body fields; an extra body field without an option of its own is passed
back through ``--extra-body JSON``.
"""

from __future__ import annotations

import json
import shlex
import urllib.parse
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from strategic_arena.arena.defaults import DEFAULT_OPPONENTS, PROTOCOLS, SOLVER_SUITE_NAME
from strategic_arena.door import shown


@dataclass(frozen=True)
class Option:
    """How one stored model parameter is passed to ``strategic-arena eval``.

    Attributes:
        flag: the option, e.g. ``--temperature``.
        default: the value ``eval`` uses without the option (the option is then left out).
        switch: a flag without a value, given when the parameter equals ``switch_when``.
        switch_when: the stored value that a switch stands for (``strict: False`` is
            ``--lenient``).
    """

    flag: str
    default: Any = None
    switch: bool = False
    switch_when: Any = True
    as_json: bool = False

    def arguments(self, value: Any) -> list[str]:
        """The command-line words for the stored ``value`` (none when it is the default)."""
        if self.switch:
            return [self.flag] if value == self.switch_when else []
        if value is None or value == self.default:
            return []
        text = json.dumps(value, sort_keys=True) if self.as_json else str(value)
        return [self.flag, text]


#: Stored model parameter -> its ``eval`` option (see :meth:`Entrant.llm`'s parameters).
MODEL_OPTIONS: Mapping[str, Option] = {
    "model": Option("--model"),
    "style": Option("--style", default="marshal"),
    "policy": Option("--policy", default="forfeit"),
    "include_history": Option("--history", switch=True),
    "strict": Option("--lenient", switch=True, switch_when=False),
    "thinking_in_history": Option("--thinking-in-history", default="keep"),
    "shuffle_actions": Option("--shuffle-actions", switch=True),
    "temperature": Option("--temperature"),
    "top_p": Option("--top-p"),
    "max_tokens": Option("--max-tokens"),
    "top_k": Option("--top-k"),
    "min_p": Option("--min-p"),
    "seed": Option("--sampling-seed"),
    "chat_template_kwargs": Option("--chat-template-kwargs", as_json=True),
    "system_prompt": Option("--system-prompt"),
}

#: Every other extra body field goes back through this option, as one JSON object.
EXTRA_BODY = Option("--extra-body", as_json=True)


def _embedded(params: Mapping[str, Any]) -> bool:
    """Whether the model was the solver suite ``eval`` serves itself when given no URL."""
    host = urllib.parse.urlsplit(str(params.get("base_url", ""))).hostname
    return params.get("model") == SOLVER_SUITE_NAME and host in ("127.0.0.1", "localhost")


def _games(settings: Mapping[str, Any]) -> list[str] | None:
    """The ``--protocol``/``--envs``/``--opponents`` words; ``None`` if no command plays them."""
    per_env: dict[str, list[str]] = {env: list(o) for env, o in settings["opponents"].items()}
    envs = list(per_env)
    protocol = PROTOCOLS.get(settings.get("protocol") or "")
    words: list[str] = []
    if protocol is not None:
        words += ["--protocol", protocol.name]
        default = {env: list(protocol.opponents.get(env, ())) for env in envs}
        if envs != list(protocol.env_ids):
            words += ["--envs", *envs]
    else:
        default = {env: list(DEFAULT_OPPONENTS.get(env, ("random",))) for env in envs}
        words += ["--envs", *envs]
    if per_env == default:
        return words
    lists = {tuple(opponents) for opponents in per_env.values()}
    if len(lists) != 1:  # --opponents gives every game the same list
        return None
    (opponents,) = lists
    return [*words, "--opponents", *opponents] if opponents else None


def command(
    name: str, seed: int, settings: Mapping[str, Any], database: str | None = None
) -> str | None:
    """The shell command that plays run ``name`` again, or ``None`` when none can.

    Args:
        name: the run's name (passed as ``--run-name``, so the command resumes that run).
        seed: the run's seed.
        settings: the run's stored settings.
        database: the results database's file name, passed as ``--db`` when given.
    """
    stored = settings.get("command")
    if isinstance(stored, str):
        return stored
    params = settings.get("model")
    candidates = settings.get("candidates")
    if not isinstance(params, Mapping) or not isinstance(candidates, Sequence):
        return None  # not an ``eval`` run
    if "opponents" not in settings or "num_games" not in settings:
        return None
    games = _games(settings)
    if games is None:
        return None
    words = ["strategic-arena", "eval"]
    embedded = _embedded(params)  # no --base-url: eval serves the solver suite again
    if not embedded and "base_url" in params:
        words += ["--base-url", shown(str(params["base_url"]), keep_query=False)]
    for key, option in MODEL_OPTIONS.items():
        if not (embedded and key == "model"):
            words += option.arguments(params.get(key))
    extra = {k: v for k, v in params.items() if k not in MODEL_OPTIONS and k != "base_url"}
    words += EXTRA_BODY.arguments(extra or None)
    # The evaluated model comes first; model opponents (--opponents model:...) follow it.
    if candidates and candidates[0] != params.get("model"):
        words += ["--name", str(candidates[0])]
    words += [*games, "--num-games", str(settings["num_games"]), "--seed", str(seed)]
    words += ["--run-name", name]
    if database is not None:
        words += ["--db", database]
    return shlex.join(words)
