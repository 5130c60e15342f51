"""Multi-agent systems for the transfer evaluation: MARSHAL's MAD and AutoGen tests.

MARSHAL's primary test places the trained model in the competitive MAD debate
(:mod:`.mad`: affirmative, negative, moderator, judge) and the cooperative AutoGen chat
(:mod:`.autogen`: assistant, user proxy) and scores the systems' final answers on its
benchmarks. Each system is an :class:`~strategic_arena.transfer.runner.Answerer`: the runner
asks, checks, stores and resumes its samples as it does the single agent's, under the run
``transfer/<label>/<benchmark>@<system>`` (:func:`~strategic_arena.transfer.store.run_name`).

:class:`SystemPlan` is what ``transfer run --system`` reads: the system, its rounds, and the
roles a peer endpoint plays (by default the evaluated model plays every role, as in MARSHAL).
"""

from __future__ import annotations

from dataclasses import dataclass

from strategic_arena.transfer.runner import SINGLE_AGENT, Answerer, BackendFor
from strategic_arena.transfer.systems.autogen import AUTOGEN_ROLES, AutoGen
from strategic_arena.transfer.systems.conversation import Cast
from strategic_arena.transfer.systems.mad import MAD_ROLES, Mad

__all__ = ["ROLES", "SYSTEMS", "SystemPlan", "answerer"]

#: Each multi-agent system's roles.
ROLES: dict[str, tuple[str, ...]] = {"mad": MAD_ROLES, "autogen": AUTOGEN_ROLES}

#: Every system ``--system`` takes.
SYSTEMS = ("single", *ROLES)


@dataclass(frozen=True)
class SystemPlan:
    """Which system answers, and who plays its roles.

    Attributes:
        name: ``single`` (one request per sample), ``mad`` or ``autogen``.
        rounds: the most rounds (MAD's debate rounds, AutoGen's assistant replies; MASLab: 3).
        peer_roles: roles played by the peer endpoint instead of the evaluated model.
        peer_base_url: the peer's OpenAI-compatible base URL (needed with ``peer_roles``).
        peer_model: the peer's model (default: the only one its endpoint lists).
        peer_api_key_env: the variable holding the peer's API key (``None``: no key is sent
            to it; the evaluated endpoint's key never goes to another origin). Not stored.
    """

    name: str = "single"
    rounds: int = 3
    peer_roles: tuple[str, ...] = ()
    peer_base_url: str | None = None
    peer_model: str | None = None
    peer_api_key_env: str | None = None

    def check(self) -> None:
        """Refuse an unknown system or role, a role without a peer, or rounds below 1."""
        if self.name not in SYSTEMS:
            raise ValueError(f"unknown system {self.name!r}; known: {', '.join(SYSTEMS)}")
        if self.rounds < 1:
            raise ValueError(f"rounds must be >= 1, not {self.rounds}")
        roles = ROLES.get(self.name, ())
        unknown = [role for role in self.peer_roles if role not in roles]
        if unknown:
            known = ", ".join(roles) or "none (the single agent has no roles)"
            raise ValueError(f"{self.name} has no role {unknown[0]!r}; its roles: {known}")
        if self.peer_roles and not self.peer_base_url:
            raise ValueError("roles played by a peer need the peer's endpoint (--peer-base-url)")


def answerer(plan: SystemPlan, evaluated: BackendFor, peer: BackendFor | None) -> Answerer:
    """The answerer of ``plan``: the evaluated model's backend, the peer's for its roles."""
    plan.check()
    if plan.name == "single":
        return SINGLE_AGENT
    cast = Cast(evaluated, peer, frozenset(plan.peer_roles))
    peer_model = plan.peer_model if plan.peer_roles else None
    if plan.name == "mad":
        return Mad(cast, plan.rounds, peer_model)
    return AutoGen(cast, plan.rounds, peer_model)
