"""Token-level traces of answers.

Shared by the backends that produce them and the turn logic that carries them, and kept apart
so that the turn logic needs no HTTP backend module.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class TokenTrace:
    """The tokens of one answer, from backends that expose them (the trainer's engine, vLLM).

    Attributes:
        prompt_ids: the prompt's token ids, chat template applied.
        response_ids: the generated token ids.
        logprobs: the sampler's log-probability of each response token.
        weight_version: the version of the weights that generated it, when known.
    """

    prompt_ids: tuple[int, ...]
    response_ids: tuple[int, ...]
    logprobs: tuple[float, ...]
    weight_version: int | None = None
