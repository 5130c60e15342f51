"""``transfer run``'s multi-agent options: ``--system mad|autogen`` and who plays which role.

MARSHAL's primary test puts the evaluated model in the MAD debate and the AutoGen chat
(:mod:`strategic_arena.transfer.systems`); these options choose the system, its rounds, and the
roles a peer endpoint plays instead of the evaluated model (none by default: the evaluated model
plays every role, as in MARSHAL).
"""

from __future__ import annotations

import argparse

from strategic_arena.transfer.systems import ROLES, SYSTEMS, SystemPlan

__all__ = ["add_system_options", "system_from_args"]


def add_system_options(command: argparse.ArgumentParser) -> None:
    """Add the system's options to ``command``."""
    group = command.add_argument_group(
        "multi-agent system (MARSHAL's MAD and AutoGen tests; docs/transfer.md)"
    )
    group.add_argument(
        "--system",
        choices=SYSTEMS,
        default="single",
        help="who answers each sample: the model alone, the MAD debate or the AutoGen chat",
    )
    group.add_argument(
        "--system-rounds",
        type=int,
        default=3,
        metavar="N",
        help="MAD's debate rounds / AutoGen's assistant replies at most (MASLab: 3)",
    )
    every = sorted({role for roles in ROLES.values() for role in roles})
    group.add_argument(
        "--peer-roles",
        nargs="+",
        choices=every,
        metavar="ROLE",
        help="roles the peer endpoint plays instead of the evaluated model (MAD: "
        f"{', '.join(ROLES['mad'])}; AutoGen: {', '.join(ROLES['autogen'])})",
    )
    group.add_argument("--peer-base-url", metavar="URL", help="the peer's OpenAI-compatible URL")
    group.add_argument(
        "--peer-model", metavar="NAME", help="the peer's model (default: the only one it lists)"
    )
    group.add_argument(
        "--peer-api-key-env",
        metavar="VAR",
        help="environment variable holding the peer's API key (default: none, and no key is "
        "sent to it: --api-key-env's key goes to the evaluated endpoint only); never stored",
    )


def system_from_args(args: argparse.Namespace) -> SystemPlan:
    """The system plan of the command line (checked: an unknown role is one line)."""
    plan = SystemPlan(
        name=args.system,
        rounds=args.system_rounds,
        peer_roles=tuple(args.peer_roles or ()),
        peer_base_url=args.peer_base_url,
        peer_model=args.peer_model,
        peer_api_key_env=args.peer_api_key_env,
    )
    plan.check()
    return plan
