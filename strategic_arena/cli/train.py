"""``strategic-arena train``: self-play training from a YAML config with ``--set`` overrides.

Registered by :mod:`strategic_arena.cli` through :func:`add_parsers` (handler :func:`dispatch`).
Building the parser imports only the config module (no torch): ``--help`` lists every field
of :class:`~strategic_arena.train.config.TrainConfig` with its type, default and docstring.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
from typing import Any

from strategic_arena._extras import MissingExtraError, missing_extra_message
from strategic_arena.cli.commands import HELP


def add_parsers(sub: Any) -> None:
    """Add the ``train`` subcommand to the top-level subparsers."""
    train = sub.add_parser(
        "train",
        help=HELP["train"],
        description="Train a policy by self-play and against an opponent pool: rollouts "
        "through the arena's match loop (transformers or vLLM engine), MARSHAL/SPIRAL "
        "rewards and advantages, PPO updates, evaluation against solvers, exact resume. "
        "Configs for MARSHAL's and SPIRAL's runs ship in configs/.",
        epilog_factory=_fields_epilog,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    train.add_argument("--config", metavar="YAML", help="config file (default: all defaults)")
    train.add_argument(
        "--set",
        dest="overrides",
        action="append",
        default=[],
        metavar="SECTION.KEY=VALUE",
        help="override a field after the file, e.g. --set ppo.lr=1e-6 "
        "--set games.ids=[kuhn_poker-v0], or a whole section: --set advantage=grpo (repeatable)",
    )
    train.add_argument(
        "--print-config",
        action="store_true",
        help="print the resolved config as JSON and exit",
    )
    train.set_defaults(handler=dispatch)


def _fields_epilog() -> str:
    """The help's list of config fields (the schema needs the ``train`` extra's pydantic)."""
    head = "config sections and fields (YAML: section: {field: value}; --set section.field=value):"
    try:
        from strategic_arena.train.config import describe_fields

        return f"{head}\n{describe_fields()}"
    except (ImportError, MissingExtraError):
        return f"{head} install the train extra (pip install 'strategic-arena[train]') to list them"


def dispatch(args: argparse.Namespace) -> int:
    """Run ``train``; returns the exit status (2: bad config, 130: stopped by Ctrl-C)."""
    try:
        from strategic_arena.train.config import load_config

        cfg = load_config(args.config, args.overrides)
    except ModuleNotFoundError as error:  # the train extra is not installed
        message = missing_extra_message(error.name or "pydantic", "'train'")
        print(f"strategic-arena train: error: {message}", file=sys.stderr)
        return 2
    except (ValueError, OSError, MissingExtraError) as error:
        print(f"strategic-arena train: error: {error}", file=sys.stderr)
        return 2
    if args.print_config:
        print(json.dumps(cfg.to_dict(), indent=2, sort_keys=True))
        return 0
    logging.basicConfig(
        level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    logging.getLogger("httpx").setLevel(logging.WARNING)  # one line per rollout request
    from strategic_arena.train.loop.run import train_and_report

    status = train_and_report(cfg)
    if int(os.environ.get("WORLD_SIZE", "1")) > 1:  # a torchrun rank: see exit_rank
        from strategic_arena.train.dist import exit_rank

        exit_rank(status)
    return status
