"""``strategic-arena verifier train``: MAPoRL's learned verifier from a policy's own solutions.

A thin layer over :func:`strategic_arena.train.policy.verifier.verifier_from_policy`: load the
policy (a ``transformers`` model path or name, or ``tiny`` for the tiny local model), read the
problems (a file in a registered schema, or the generated arithmetic set), train, print the report
(the held-out accuracy) and save the verifier where ``--out`` says.
"""

from __future__ import annotations

import argparse
import json
from dataclasses import asdict
from typing import Any

from strategic_arena.cli.commands import HELP


def add_parsers(sub: Any) -> None:
    """Add the ``verifier`` subcommand (``verifier train``) to the top-level subparsers."""
    verifier = sub.add_parser(
        "verifier",
        help=HELP["verifier"],
        description="Train MAPoRL's learned verifier: the policy's base model with a linear "
        "head, on the policy's own balanced right and wrong solutions (token-level "
        "cross-entropy on the latter half of each solution); report its held-out accuracy.",
    )
    actions = verifier.add_subparsers(dest="verifier_command", required=True, metavar="ACTION")
    train = actions.add_parser("train", help="sample, label, balance, train, measure, save")
    train.add_argument(
        "--model", required=True, help="policy: a transformers path or name, or tiny"
    )
    train.add_argument("--problems", default=None, help="problems file (default: generated)")
    train.add_argument("--schema", default="gsm8k", help="the problems file's schema")
    train.add_argument("--count", type=int, default=100, help="generated problems (no file)")
    train.add_argument("--paths", type=int, default=20, help="solutions sampled per problem")
    train.add_argument("--per-class", type=int, default=5, help="right (and wrong) per question")
    train.add_argument("--held-out", type=float, default=0.1, help="share of questions held out")
    train.add_argument("--epochs", type=int, default=1)
    train.add_argument("--batch-size", type=int, default=8)
    train.add_argument("--learning-rate", type=float, default=1e-4)
    train.add_argument("--max-new-tokens", type=int, default=256)
    train.add_argument("--temperature", type=float, default=0.7)
    train.add_argument("--seed", type=int, default=0)
    train.add_argument("--device", default="cpu")
    train.add_argument("--out", required=True, help="folder to save the verifier in")
    train.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    """Train the verifier and print its report as JSON."""
    from strategic_arena.problems import generate_arithmetic, load_problems
    from strategic_arena.train.policy.verifier import VerifierTraining, verifier_from_policy

    problems = (
        load_problems(args.problems, args.schema)
        if args.problems
        else generate_arithmetic(args.count, args.seed)
    )
    model, tokenizer = _policy(args.model, args.device)
    training = VerifierTraining(
        epochs=args.epochs,
        batch_size=args.batch_size,
        learning_rate=args.learning_rate,
        seed=args.seed,
    )
    _, report = verifier_from_policy(
        model,
        tokenizer,
        problems,
        paths=args.paths,
        per_class=args.per_class,
        held_out=args.held_out,
        training=training,
        temperature=args.temperature,
        max_new_tokens=args.max_new_tokens,
        out=args.out,
    )
    print(json.dumps(asdict(report), indent=2))
    return 0


def _policy(name: str, device: str) -> tuple[Any, Any]:
    """The policy model and tokenizer: ``tiny`` (built for the debate), else from transformers."""
    from strategic_arena._extras import require

    model: Any
    if name == "tiny":
        from strategic_arena.train.policy.tiny import build_tiny

        model, tokenizer = build_tiny(["debate-v0"], vocab="answers", style="boxed")
    else:
        transformers = require("transformers", "the learned verifier")
        tokenizer = transformers.AutoTokenizer.from_pretrained(name)
        model = transformers.AutoModelForCausalLM.from_pretrained(name)
    return model.to(device), tokenizer
