r"""The second route: the same benchmark files through lm-eval's custom tasks (extra ``lm-eval``).

lm-eval's own tasks name hub datasets and cannot run offline; its custom tasks read local JSON.
:func:`write_tasks` writes, per benchmark of a plan, a JSON Lines file (``id``, ``prompt``: the
user message of the paper's prompt, ``answer``: the gold answer) and a task YAML that asks it
with ``generate_until`` (the protocol's temperature, top-p and token budget, no stop string),
reads the last ``\boxed{...}`` with lm-eval's ``regex`` filter (one level of nested braces)
and scores lm-eval's ``exact_match``. :func:`run_lm_eval` runs them with lm-eval's
``local-chat-completions`` model against the same endpoint, with the prompt's system message
as lm-eval's ``system_instruction`` (tasks grouped by it), writes lm-eval's results object
of each call (one per system instruction; usually one) to ``results-1.json``... in the same
folder as the tasks, as lm-eval's own ``--output_path`` would hold it (metrics with their
standard errors, the task configs, the model arguments, versions), and returns each
benchmark's accuracy.

Where the two routes may disagree (docs/transfer.md): lm-eval compares strings exactly where
ours uses math-verify (``0.5`` against ``\frac12``); its regex reads one level of nested braces
(``\boxed{\frac{\sqrt{3}}{2}}`` is cut); it sends the seed 1234 with every request, so only
one sample per problem is meaningful (pass@1; our samples each have their own seed); and it
retries and times out by its own rules. On answers written exactly as the gold, as the test's
served solver writes them, both report the same accuracy.
"""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path
from typing import Any

from strategic_arena._extras import require
from strategic_arena.transfer.benchmarks import BenchmarkRun, TransferPlan
from strategic_arena.transfer.prompts import prompt

__all__ = ["BOX_PATTERN", "RESULTS_GLOB", "run_lm_eval", "write_tasks"]

#: The last boxed answer, as lm-eval's regex filter reads it (one level of nested braces).
BOX_PATTERN = r"\\boxed\{((?:[^{}]|\{[^{}]*\})*)\}"

#: lm-eval's results, one file per call of lm-eval (per system instruction), in the out folder.
RESULTS_GLOB = "results-*.json"

#: lm-eval's metric key of the tasks written here.
METRIC_KEY = "exact_match,box"


def task_name(run: BenchmarkRun) -> str:
    """The lm-eval task of one benchmark."""
    return f"strategic_arena_{run.benchmark.name}"


def _task_yaml(run: BenchmarkRun, data_file: Path) -> str:
    protocol = run.protocol
    config: dict[str, Any] = {
        "task": task_name(run),
        "dataset_path": "json",
        "dataset_kwargs": {"data_files": {"test": str(data_file)}},
        "test_split": "test",
        "output_type": "generate_until",
        "doc_to_text": "{{prompt}}",
        "doc_to_target": "{{answer}}",
        "generation_kwargs": {
            "until": [],
            "max_gen_toks": protocol.max_tokens,
            "temperature": protocol.temperature,
            "top_p": protocol.top_p,
            "do_sample": protocol.temperature > 0,
        },
        "filter_list": [
            {
                "name": "box",
                "filter": [
                    {"function": "regex", "regex_pattern": BOX_PATTERN, "group_select": -1},
                    {"function": "take_first"},
                ],
            }
        ],
        "metric_list": [{"metric": "exact_match", "aggregation": "mean", "higher_is_better": True}],
        "metadata": {"version": 1},
    }
    return json.dumps(config, indent=2)  # YAML is a superset of JSON


def write_tasks(plan: TransferPlan, out_dir: str | Path) -> dict[str | None, list[str]]:
    """Write each benchmark's rows and task file; task names by system instruction."""
    folder = Path(out_dir).resolve()
    folder.mkdir(parents=True, exist_ok=True)
    groups: dict[str | None, list[str]] = defaultdict(list)
    for run in plan.runs():
        chosen = prompt(run.protocol.prompt)
        rows = []
        systems = set()
        for problem in run.problems():
            messages = chosen.messages(problem)
            system = [m["content"] for m in messages if m["role"] == "system"]
            systems.add(system[0] if system else None)
            user = [m["content"] for m in messages if m["role"] == "user"][-1]
            rows.append({"id": problem.id, "prompt": user, "answer": problem.answer})
        if len(systems) != 1:
            raise ValueError(
                f"{run.benchmark.name}: its problems have different system messages, which "
                "lm-eval cannot send per problem"
            )
        data_file = folder / f"{task_name(run)}.jsonl"
        data_file.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
        (folder / f"{task_name(run)}.yaml").write_text(_task_yaml(run, data_file))
        groups[systems.pop()].append(task_name(run))
    return dict(groups)


def run_lm_eval(
    plan: TransferPlan,
    *,
    base_url: str,
    model: str,
    out_dir: str | Path,
    concurrency: int = 4,
) -> dict[str, float]:
    """lm-eval's accuracy on each benchmark of ``plan``; its results in ``out_dir`` (module doc).

    Results files of a former run in ``out_dir`` (``results-*.json``) are removed first, so
    the folder holds this run's only.

    Raises:
        ValueError: the plan asks for few-shot prompts (this route writes zero-shot tasks;
            ``transfer run --shots`` asks few-shot).
    """
    if plan.shots:
        raise ValueError(
            "the lm-eval route writes zero-shot tasks only; few-shot runs go through "
            "'transfer run --shots'"
        )
    lm_eval = require("lm_eval", "the lm-eval route")
    tasks = require("lm_eval.tasks", "the lm-eval route")
    utils = require("lm_eval.utils", "the lm-eval route")
    groups = write_tasks(plan, out_dir)
    manager = tasks.TaskManager(include_path=str(Path(out_dir).resolve()))
    model_args = {
        "model": model,
        "base_url": base_url.rstrip("/") + "/chat/completions",
        "num_concurrent": concurrency,
        "max_retries": 3,
        "tokenized_requests": False,
    }
    folder = Path(out_dir)
    for stale in folder.glob(RESULTS_GLOB):  # a former run's: the files are this run's only
        stale.unlink()
    scores: dict[str, float] = {}
    for number, (system, names) in enumerate(groups.items(), 1):
        results = lm_eval.simple_evaluate(
            model="local-chat-completions",
            model_args=model_args,
            tasks=names,
            task_manager=manager,
            apply_chat_template=True,
            system_instruction=system,
            log_samples=False,
        )
        # lm-eval's own results object, as its CLI's --output_path writes it
        text = json.dumps(results, indent=2, default=utils.handle_non_serializable)
        (folder / f"results-{number}.json").write_text(text + "\n", encoding="utf-8")
        for name in names:
            scores[name.removeprefix("strategic_arena_")] = float(
                results["results"][name][METRIC_KEY]
            )
    return scores
