"""What a training run tells its user: evaluation tables, the closing summary, the next commands.

A run logs its steps to stderr (``logging``) and its metrics to ``metrics.jsonl``; what a person
reads at the terminal comes from here, on stdout:

* :func:`eval_table` -- after every evaluation, one row per game and opponent (both seats):
  games, mean return, win rate, invalid-answer rate;
* :func:`run_summary` -- at the end (finished, stopped, or found already finished): where the
  checkpoint (a co-trained run: each policy's, :func:`policy_checkpoints`), the metrics and
  the evaluation store are, the before/after table of the transfer evaluation (reasoning
  benchmarks at checkpoints: :func:`transfer_summary`), a warning when steps collapsed (no
  learning signal: :mod:`strategic_arena.train.algo.collapse`), and the commands to run next
  (``strategic-arena report``, ``publish``, the vLLM command that serves the checkpoint and
  the ``eval`` that asks it as the trainer's evaluation did, its require_reasoning and every
  other asking setting included: :mod:`strategic_arena.train.engines.serving`);
* :func:`finished_checkpoint` -- whether ``resume`` would continue from a checkpoint that
  already holds every step, so a rerun says so instead of pretending to resume;

The run itself, with these around it, is :func:`strategic_arena.train.loop.run.train_and_report`
(a module of its own: the trainer imports this one for its tables).

Names that come from endpoints or the store go through :func:`~strategic_arena.door.printable.
printable_line` (terminal-safe). torch is imported only when a run starts.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from strategic_arena.door.printable import printable_line
from strategic_arena.train.algo.collapse import COLLAPSE_STEPS, collapsed_steps, longest_streak
from strategic_arena.train.loop.curves import CURVES_FILE

if TYPE_CHECKING:
    from strategic_arena.train.config import TrainConfig
    from strategic_arena.train.engines.serving import ServeRecipe
    from strategic_arena.train.loop.evaluation import Evaluation

_STEP = re.compile(r"^step-(\d+)$")


def eval_table(evaluation: Evaluation) -> str:
    """The evaluation as a table: one row per game and opponent, both seats together."""
    rows = [row for row in evaluation.rows if row.seat is None]
    head = (
        f"evaluation at step {evaluation.step} (store {evaluation.db}, "
        f"run {printable_line(evaluation.run)})"
    )
    if not rows:
        return head + "\n  no games scored"
    table: list[Sequence[str]] = [("game", "opponent", "games", "return", "win rate", "invalid")]
    for row in rows:
        win = "-" if row.wins is None or not row.games else f"{row.wins / row.games:.1%}"
        table.append(
            (
                row.env_id,
                printable_line(row.opponent, limit=60),
                str(row.games),
                f"{row.mean_return:+.3f}",
                win,
                f"{row.invalid_rate:.1%}",
            )
        )
    widths = [max(len(line[i]) for line in table) for i in range(len(table[0]))]
    lines = [head]
    for line in table:
        cells = [
            cell.ljust(width) if i < 2 else cell.rjust(width)
            for i, (cell, width) in enumerate(zip(line, widths, strict=True))
        ]
        lines.append("  " + "  ".join(cells).rstrip())
    return "\n".join(lines)


def missing_model(cfg: TrainConfig) -> str | None:
    """Why the model or tokenizer cannot load, when a local path names no directory.

    A value starting with ``/``, ``.`` or ``~`` is a path (a hub id never does); anything else
    is left to transformers. Not part of :func:`~strategic_arena.train.config.validate`: a
    shipped config may name a model a machine has not downloaded yet.
    """
    for name, value in (("model", cfg.model.name), ("tokenizer", cfg.model.tokenizer)):
        local = value is not None and value.startswith(("/", ".", "~"))
        if local and value is not None and not Path(value).expanduser().is_dir():
            return f"{name}: no model directory at {value} (download it, or fix the path)"
    return None


def checkpoint_step(path: Path) -> int | None:
    """The step of a checkpoint directory named ``step-NNNNNN`` (``None``: another name)."""
    match = _STEP.match(path.name)
    return int(match.group(1)) if match else None


def finished_checkpoint(cfg: TrainConfig) -> Path | None:
    """The checkpoint ``resume`` would continue from, when it already holds ``steps`` steps."""
    from strategic_arena.train.policy.checkpoint import latest_checkpoint

    if cfg.run.resume == "never":
        return None
    path = (
        latest_checkpoint(cfg.run.output_dir) if cfg.run.resume == "auto" else Path(cfg.run.resume)
    )
    if path is None:
        return None
    step = checkpoint_step(path)
    return path if step is not None and step >= cfg.run.steps else None


def policy_checkpoints(cfg: TrainConfig) -> dict[str, Path | None]:
    """Each co-trained policy's newest checkpoint directory (``None``: none saved).

    Empty for a single-policy run; a co-trained policy's checkpoints are under its own folder
    (:func:`~strategic_arena.train.config.policies.policy_output_dir`).
    """
    from strategic_arena.train.config.policies import policy_output_dir
    from strategic_arena.train.policy.checkpoint import latest_checkpoint

    return {
        policy.name: latest_checkpoint(policy_output_dir(cfg.run.output_dir, policy.name))
        for policy in cfg.policies
    }


def _metrics_lines(output: Path) -> list[str]:
    """The summary's lines of ``metrics.jsonl``: its path, the curves, steps without signal."""
    metrics = output / "metrics.jsonl"
    if not metrics.exists():
        return []
    lines = [f"  metrics      {metrics}"]
    curves = output / CURVES_FILE
    if curves.exists():
        lines.append(f"  curves       {curves}  (reward, invalid rate, returns, KL, entropy)")
    flat = collapsed_steps(metrics)
    first, length = longest_streak(flat)
    if length >= COLLAPSE_STEPS:  # named again at the end: what follows is a dead policy
        lines.append(
            f"  WARNING      collapse: {length} steps in a row without learning signal "
            f"(every advantage 0) from step {first}; see the COLLAPSE lines above"
        )
    elif flat:
        lines.append(
            f"  note         {len(flat)} step(s) without learning signal (every advantage "
            f"0): {', '.join(map(str, flat[:10]))}"
        )
    return lines


def run_summary(
    cfg: TrainConfig,
    steps: int,
    checkpoint: Path | None,
    *,
    already: bool = False,
) -> str:
    """Where the run's outputs are and what to run next (see the module docstring).

    Args:
        cfg: the run's config.
        steps: the completed steps.
        checkpoint: the newest checkpoint (``None``: none written).
        already: the run had finished before this invocation (nothing was trained now).
    """
    from strategic_arena.train.loop.evaluation import eval_db

    output = Path(cfg.run.output_dir)
    if already:
        head = (
            f"run {cfg.run.name!r} had already finished: step {steps} of {cfg.run.steps}; nothing "
            f"to do (raise steps, or set resume=never or another output_dir to start again)"
        )
    elif steps >= cfg.run.steps:
        head = f"run {cfg.run.name!r} finished: step {steps} of {cfg.run.steps}"
    else:
        head = (
            f"run {cfg.run.name!r} stopped at step {steps} of {cfg.run.steps}; "
            "rerun the same command to resume"
        )
    lines = [head]
    if checkpoint is not None:
        lines.append(f"  checkpoint   {checkpoint}  (model: {checkpoint / 'policy'})")
    for name, saved in policy_checkpoints(cfg).items():  # co-training: one per policy
        where = f"{saved}  (model: {saved / 'policy'})" if saved is not None else "none saved"
        lines.append(f"  checkpoint   {name}: {where}")
    lines += _metrics_lines(output)
    db = eval_db(cfg)
    evaluated = bool(cfg.eval.opponents) and db.exists()
    if evaluated:
        lines.append(f"  evaluations  {db}  (runs {cfg.run.name}/eval/step-NNNNNN)")
        if cfg.eval.at_start and steps > 0:  # the arena's before/after, starting model first
            table = arena_before_after(cfg.run.name, db, steps)
            lines += ["  " + line for line in table.splitlines()]
    transfer = transfer_summary(cfg, db)
    if transfer:
        lines.append(f"  transfer     {db}  (labels {cfg.run.name}/step-NNNNNN)")
        lines += ["  " + line for line in transfer.splitlines()]
    commands = _next_commands(cfg, checkpoint, db if evaluated else None, steps)
    if transfer:
        commands.insert(0, f"strategic-arena transfer report --db {shlex.quote(str(db))}")
    if commands:
        lines.append("next:")
        lines += [f"  {command}" for command in commands]
    return "\n".join(lines)


def arena_before_after(run_name: str, db: Path, steps: int) -> str:
    """Run ``run_name``'s starting model beside its step ``steps`` (:mod:`.before_after`)."""
    from strategic_arena.arena.store import ResultsStore
    from strategic_arena.train.loop.before_after import before_after, comparison_markdown

    with ResultsStore.for_reading(db) as store:
        comparison = before_after(store, run_name, 0, steps)
    comparison = replace(comparison, benchmarks={})  # the transfer table follows on its own
    return "arena before/after\n" + comparison_markdown(comparison)


def transfer_summary(cfg: TrainConfig, db: Path) -> str:
    """The before/after table of the run's transfer evaluations ("" when there are none)."""
    if cfg.transfer is None or not db.exists():
        return ""
    from strategic_arena.arena.store import ResultsStore
    from strategic_arena.transfer import cells, render_table

    prefix = f"{cfg.run.name}/step-"
    with ResultsStore.for_reading(db) as store:
        found = [cell for cell in cells(store) if cell.label.startswith(prefix)]
    return render_table(found, "transfer before/after") if found else ""


def transfer_command(
    cfg: TrainConfig, base_url: str, served: str, step: int, settings: Path | None = None
) -> str:
    """``transfer run`` of the served checkpoint on the run's transfer plan (its own label).

    With the checkpoint's settings file: ``--settings``, which holds the trainer's plan and
    chat-template arguments (so the request is the trainer's); else the plan's options.
    """
    plan = cfg.transfer
    assert plan is not None
    tail = [
        f"--base-url {base_url}",
        f"--model {shlex.quote(served)}",
        f"--label {shlex.quote(f'{cfg.run.name}/served-step-{step:06d}')}",
    ]
    if settings is not None:
        return " ".join(
            ["strategic-arena transfer run", f"--settings {shlex.quote(str(settings))}", *tail]
        )
    words = ["strategic-arena transfer run", f"--paper {plan.paper}"]
    if plan.benchmarks:
        words.append("--benchmarks " + " ".join(shlex.quote(name) for name in plan.benchmarks))
    words.append(f"--data-dir {shlex.quote(plan.data_dir)}")
    for flag, value in (
        ("--samples", plan.samples),
        ("--max-tokens", plan.max_tokens),
        ("--temperature", plan.temperature),
        ("--limit", plan.limit),
    ):
        if value is not None:
            words.append(f"{flag} {value}")
    words += [f"--seed {plan.seed}", *tail]
    return " ".join(words)


def _next_commands(
    cfg: TrainConfig, checkpoint: Path | None, db: Path | None, steps: int
) -> list[str]:
    """Commands that read the evaluations and evaluate the checkpoint through a vLLM server."""
    quote = shlex.quote
    commands = []
    if db is not None:
        commands += [
            f"strategic-arena report --db {quote(str(db))}",
            f"strategic-arena publish --db {quote(str(db))} "
            f"--out {quote(str(Path(cfg.run.output_dir) / 'leaderboard'))}",
        ]
    if checkpoint is not None:
        served = checkpoint_commands(cfg, checkpoint, steps)
        commands.append(f"{served.recipe.shell()}   # serves the checkpoint; another terminal")
        commands += served.evals
        if served.transfer is not None:
            commands.append(served.transfer)
    return commands


@dataclass(frozen=True)
class CheckpointCommands:
    """How a checkpoint is served and asked again outside the trainer (the printed commands).

    Attributes:
        recipe: the vLLM server that serves it.
        evals: the ``eval`` commands that replay the trainer's evaluation games.
        transfer: the ``transfer run`` of the trainer's benchmarks (``None``: no transfer
            section).
    """

    recipe: ServeRecipe
    evals: list[str]
    transfer: str | None


def checkpoint_commands(cfg: TrainConfig, checkpoint: Path, steps: int) -> CheckpointCommands:
    """The commands the run's summary prints for ``checkpoint`` of step ``steps``.

    One function for the summary and for whoever runs them (``make flagship``), so what is
    run is what is printed: the checkpoint's settings file (written beside every checkpoint:
    how its evaluation asked the policy) goes in ``--settings``; the run's own server venv
    (``vllm.python``) and remote-code choice (the user's, never the file's) in the recipe.
    """
    from strategic_arena.asking import settings_file
    from strategic_arena.train.engines.serving import eval_commands, serve_recipe, served_name

    try:
        settings: Path | None = settings_file(checkpoint)
    except ValueError:  # a checkpoint from before the settings file
        settings = None
    recipe = serve_recipe(
        checkpoint,
        served=served_name(cfg.run.name, steps),
        python=cfg.vllm.python,
        trust_remote_code=cfg.model.trust_remote_code,
    )
    transfer = None
    if cfg.transfer is not None:
        transfer = transfer_command(cfg, recipe.base_url, recipe.served_name, steps, settings)
    return CheckpointCommands(recipe, eval_commands(recipe, settings), transfer)
