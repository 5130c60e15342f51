"""How a batch is sampled: the one sampling dataclass the engines and the learner share.

The engines sample with these settings and the learner recomputes log-probs at the same
temperature (:attr:`BatchSampling.logprob_temperature`), so both read it from here, below either
package. :meth:`BatchSampling.of` builds it from the request-level
:class:`~strategic_arena.asking.Sampling` of the config.
"""

from __future__ import annotations

from dataclasses import dataclass

from strategic_arena.asking import Sampling as SamplingSettings


@dataclass(frozen=True)
class BatchSampling:
    """Sampling settings shared by a batch.

    Attributes:
        temperature: softmax temperature; 0 means greedy.
        top_p: nucleus threshold (1.0: off).
        top_k: keep the k most likely tokens (0: off).
        min_p: drop tokens less likely than ``min_p`` times the most likely one (0: off).
        max_new_tokens: default token budget of a request.
        stop: stop strings: a response ends with the token that completes the first of them
            (that token included, like a stop token).
    """

    temperature: float = 1.0
    top_p: float = 1.0
    top_k: int = 0
    max_new_tokens: int = 256
    stop: tuple[str, ...] = ()
    min_p: float = 0.0

    @classmethod
    def of(cls, settings: SamplingSettings) -> BatchSampling:
        """The engine's sampling of a :class:`~strategic_arena.asking.Sampling`.

        Unset fields take the engine's defaults (temperature 1, no top-p, top-k, min-p or
        stop); ``seed`` has no meaning here (each request carries its own seed).
        """
        default = cls()
        return cls(
            temperature=_or(settings.temperature, default.temperature),
            top_p=_or(settings.top_p, default.top_p),
            top_k=max(0, settings.top_k or 0),
            max_new_tokens=settings.max_tokens or default.max_new_tokens,
            stop=settings.stop,
            min_p=_or(settings.min_p, default.min_p),
        )

    @property
    def greedy(self) -> bool:
        """Whether decoding is greedy."""
        return self.temperature <= 0.0

    @property
    def logprob_temperature(self) -> float:
        """The temperature the recorded log-probs (and the learner's) are computed at."""
        return 1.0 if self.greedy else self.temperature


def _or(value: float | None, default: float) -> float:
    """``value`` unless it is unset."""
    return default if value is None else value
