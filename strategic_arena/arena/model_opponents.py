"""Models as opponents: ``eval --opponents model:NAME@BASE_URL`` puts another endpoint in a seat.

An opponent spec is a built-in opponent (``nash``, ``mcts:simulations=100``...) or, with the
``model:`` prefix, a model behind another OpenAI-compatible endpoint: ``model:NAME@BASE_URL``
(``model:Qwen/Qwen3-4B@http://localhost:8001/v1``). Two or more endpoints then play each other
from one command, and every model of the run is one of its entrants (the report gives each its
rows and ratings).

**Its name.** A model opponent is reported under the model name it is served as, unless the
spec names it: ``model:NAME@BASE_URL as DISPLAY`` (quoted in a shell: ``--opponents
"model:/ckpt/policy@http://localhost:8000/v1 as step-40"``). A name is an entrant: a model
opponent that is the evaluated model itself (the same served model at the same base URL) takes
the evaluated model's name (``--name``), so one model on one server is one entrant, never two
(the runner seats no entrant against itself in a competitive game); and a display name already
stored for another player is refused by the store, as ``--name`` is.

A model opponent is asked exactly as the evaluated model is (the same answer style, prompts,
sampling and illegal-move policy: the run compares models, not settings), through its own
endpoint, whose API key comes from an environment variable only (``--opponent-api-key-env``).
None is named by default, and then no key is sent: the evaluated model's key goes to its own
endpoint only, never to a rival's origin (another provider, another owner). The key is never
stored, printed or part of the spec: a base URL that carries credentials (``user:key@host``,
``?key=...``) is refused.
Each model opponent passes the same preflight as the evaluated model before anything is stored.

**A persona.** ``model:NAME@BASE_URL persona:FILE`` asks the model with the text of ``FILE`` put
before each game's system prompt (:attr:`~strategic_arena.asking.Asking.system_prompt`; In2AI's
opponents were one model prompted aggressive, cooperative, unpredictable or analytical). The
persona is part of the opponent: stored with its parameters, and its name is
``NAME+persona-STEM`` (the file's stem) unless the spec names it (``... persona:FILE as
DISPLAY``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from pathlib import Path
from urllib.parse import urlsplit

from strategic_arena.arena.endpoint import ModelOptions, checked_entrant
from strategic_arena.arena.runner import Entrant
from strategic_arena.door import Refused, printable_line, read_text, secrets, shown

#: The prefix of a model opponent's spec.
MODEL_PREFIX = "model:"

#: The display name at the end of a spec: ``model:NAME@BASE_URL as DISPLAY``.
_DISPLAY = re.compile(r"\s+as\s+(?P<name>\S.*)$")


def read_persona(path: str) -> str:
    """A persona file's text, stripped: through the door (a regular file, no link, capped).

    Raises:
        Refused: the file is a link (``env.txt -> /proc/self/environ`` would send the
            environment to the rival endpoint), a FIFO or device, too large, or not UTF-8.
    """
    return read_text(path, "persona").strip()


@dataclass(frozen=True)
class ModelOpponent:
    """A model behind an OpenAI-compatible endpoint, named in ``--opponents``.

    Attributes:
        model: the model name the endpoint serves (the player's name unless ``name`` is set).
        base_url: the endpoint's base URL (``http://host:port/v1``), without credentials.
        name: the player's name in the store and the reports (``None``: ``model``, with the
            persona's ``+persona-STEM``).
        persona: the file whose text is the model's persona (its system prompt); ``None``:
            none.
    """

    model: str
    base_url: str
    name: str | None = None
    persona: str | None = None

    @classmethod
    def parse(cls, spec: str) -> ModelOpponent | None:
        """The model opponent of ``spec``, or ``None`` when it names a built-in opponent.

        Raises:
            ValueError: a ``model:`` spec that is not ``model:NAME@http(s)://HOST[:PORT]/PATH``
                (optionally followed by `` as DISPLAY``), or whose URL carries credentials.
        """
        if not spec.strip().startswith(MODEL_PREFIX):
            return None
        body = spec.strip()[len(MODEL_PREFIX) :]
        display = _DISPLAY.search(body)
        name = display.group("name").strip() if display else None
        if display:
            body = body[: display.start()]
        body, _, persona_part = body.partition(" persona:")
        persona = persona_part.strip() or None
        if persona is not None:
            try:  # refused here, before any request: a link, a FIFO, a device, too large
                read_persona(persona)
            except Refused as error:
                raise Refused(f"model opponent {printable_line(spec)}: {error}") from None
        model, at, base_url = body.strip().partition("@")
        parts = urlsplit(base_url)
        if not at or not model or parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(
                f"model opponent {spec!r}: expected model:NAME@BASE_URL, e.g. "
                "model:Qwen/Qwen3-4B@http://localhost:8001/v1 (or ... as NAME to name it)"
            )
        if secrets(base_url) or parts.fragment:
            raise ValueError(
                f"model opponent {MODEL_PREFIX}{model}@...: its base URL carries credentials; "
                "put the key in an environment variable named by --opponent-api-key-env"
            )
        if persona is not None and name is None:
            name = f"{model}+persona-{Path(persona).stem}"
        return cls(model, base_url, name, persona)

    @property
    def spec(self) -> str:
        """``model:NAME@BASE_URL`` (`` as DISPLAY`` when named): how the settings record it."""
        persona = f" persona:{self.persona}" if self.persona is not None else ""
        named = f" as {self.name}" if self.name is not None else ""
        return f"{MODEL_PREFIX}{self.model}@{self.base_url}{persona}{named}"

    def named_like(self, candidate: Entrant) -> ModelOpponent:
        """This opponent, named as ``candidate`` when it is the same model at the same server.

        One served model is one entrant: the evaluated model's name (``--name``) wins over
        the served model's. A display name given in the spec is kept.
        """
        same = candidate.params.get("model") == self.model and candidate.params.get(
            "base_url"
        ) == shown(self.base_url)
        return replace(self, name=candidate.name) if same and self.name is None else self

    def entrant(
        self, options: ModelOptions, api_key_env: str | None, seed: int | None, env_id: str
    ) -> Entrant:
        """The opponent as an entrant asked like ``options``' model, after its preflight.

        ``api_key_env``: the variable holding the key sent to this endpoint (``None``: none).

        Raises:
            PreflightError: the endpoint cannot serve the run; the message names the cause.
        """
        asking = options.asking
        if self.persona is not None:
            text = read_persona(self.persona)
            asking = replace(asking, system_prompt=text or None)
        settings = replace(
            options,
            base_url=self.base_url,
            model=self.model,
            name=self.name,
            api_key_env=api_key_env,
            asking=asking,
        )
        return checked_entrant(settings, self.base_url, self.model, seed, env_id)
