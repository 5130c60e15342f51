"""Lazy imports of optional dependencies, with an error that names the extra to install.

The core (games, env, prompting, validation) needs only numpy, gymnasium, pettingzoo and
open_spiel. Everything heavy -- numba, openai, trueskill, torch, transformers, vllm, and the
LLM-RL frameworks of :mod:`strategic_arena.integrations` -- is imported
through :func:`require` at the moment a feature needs it, never at ``import strategic_arena``.
"""

from __future__ import annotations

import importlib
from types import ModuleType

#: Which pip extra provides each optional top-level module.
EXTRA_OF_MODULE: dict[str, str] = {
    "numba": "solvers",
    "openai": "arena",
    "httpx": "arena",
    "trueskill": "arena",
    "torch": "train",
    "transformers": "train",
    "yaml": "train",
    "vllm": "vllm",
    "safetensors": "train",
    "verifiers": "verifiers",
    "trl": "trl",
    "datasets": "trl",
    "openenv": "openenv",
    "uvicorn": "openenv",
    "pydantic": "train",  # the training config's schema (OpenEnv brings it too)
    "peft": "train",
    "tokenizers": "train",
    "textarena": "textarena",
    "psycopg": "postgres",
    "math_verify": "transfer",
    "lm_eval": "lm-eval",
}


class MissingExtraError(ImportError):
    """An optional dependency is not installed; the message names the pip extra to install."""


def missing_extra_message(module: str, feature: str | None = None) -> str:
    """One line: ``module`` is not installed, and the pip command whose extra brings it."""
    top = module.split(".", 1)[0]
    extra = EXTRA_OF_MODULE.get(top)
    purpose = f" for {feature}" if feature else ""
    hint = f"pip install 'strategic-arena[{extra}]'" if extra else f"pip install {top}"
    return f"{top!r} is needed{purpose} but is not installed; install it with: {hint}"


def require(module: str, feature: str | None = None) -> ModuleType:
    """Import ``module`` or raise :class:`MissingExtraError` telling which extra provides it.

    Args:
        module: dotted module name, e.g. ``"numba"`` or ``"torch.nn"``.
        feature: what the caller wanted to do, used in the message (e.g. ``"MCTS opponents"``).
    """
    try:
        return importlib.import_module(module)
    except ImportError as error:
        raise MissingExtraError(missing_extra_message(module, feature)) from error
