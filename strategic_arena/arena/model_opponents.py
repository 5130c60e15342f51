"""Models as opponents: ``eval --opponents model:NAME@BASE_URL`` puts another endpoint in a seat.

An opponent spec is a built-in opponent (``nash``, ``mcts:simulations=100``...) or, with the
``model:`` prefix, a model behind another OpenAI-compatible endpoint: ``model:NAME@BASE_URL``
(``model:Qwen/Qwen3-4B@http://localhost:8001/v1``). Two or more endpoints then play each other
from one command, and every model of the run is one of its entrants (the report gives each its
rows and ratings).

A model opponent is asked exactly as the evaluated model is (the same answer style, prompts,
sampling and illegal-move policy: the run compares models, not settings), through its own
endpoint, whose API key comes from an environment variable only (``--opponent-api-key-env``).
None is named by default, and then no key is sent: the evaluated model's key goes to its own
endpoint only, never to a rival's origin (another provider, another owner). The key is never
stored, printed or part of the spec: a base URL that carries credentials (``user:key@host``,
``?key=...``) is refused.
Each model opponent passes the same preflight as the evaluated model before anything is stored.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from urllib.parse import urlsplit

from strategic_arena.arena.endpoint import ModelOptions, checked_entrant
from strategic_arena.arena.runner import Entrant
from strategic_arena.backends import url_secrets

#: The prefix of a model opponent's spec.
MODEL_PREFIX = "model:"


@dataclass(frozen=True)
class ModelOpponent:
    """A model behind an OpenAI-compatible endpoint, named in ``--opponents``.

    Attributes:
        model: the model name the endpoint serves (and the player's name).
        base_url: the endpoint's base URL (``http://host:port/v1``), without credentials.
    """

    model: str
    base_url: str

    @classmethod
    def parse(cls, spec: str) -> ModelOpponent | None:
        """The model opponent of ``spec``, or ``None`` when it names a built-in opponent.

        Raises:
            ValueError: a ``model:`` spec that is not ``model:NAME@http(s)://HOST[:PORT]/PATH``,
                or whose URL carries credentials.
        """
        if not spec.strip().startswith(MODEL_PREFIX):
            return None
        model, at, base_url = spec.strip()[len(MODEL_PREFIX) :].partition("@")
        parts = urlsplit(base_url)
        if not at or not model or parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(
                f"model opponent {spec!r}: expected model:NAME@BASE_URL, e.g. "
                "model:Qwen/Qwen3-4B@http://localhost:8001/v1"
            )
        if url_secrets(base_url) or parts.fragment:
            raise ValueError(
                f"model opponent {MODEL_PREFIX}{model}@...: its base URL carries credentials; "
                "put the key in an environment variable named by --opponent-api-key-env"
            )
        return cls(model, base_url)

    @property
    def spec(self) -> str:
        """``model:NAME@BASE_URL``: how the run's settings record it."""
        return f"{MODEL_PREFIX}{self.model}@{self.base_url}"

    def entrant(
        self, options: ModelOptions, api_key_env: str | None, seed: int | None, env_id: str
    ) -> Entrant:
        """The opponent as an entrant asked like ``options``' model, after its preflight.

        ``api_key_env``: the variable holding the key sent to this endpoint (``None``: none).

        Raises:
            PreflightError: the endpoint cannot serve the run; the message names the cause.
        """
        settings = replace(
            options, base_url=self.base_url, model=self.model, name=None, api_key_env=api_key_env
        )
        return checked_entrant(settings, self.base_url, self.model, seed, env_id)
