"""Self-play trainer (extra ``[train]``: torch, transformers; ``make vllm`` for vLLM rollouts).

Stages, each a function of :mod:`~strategic_arena.train.loop.trainer`: generate (rollouts through
the arena's match loop against an engine, :mod:`~strategic_arena.train.loop.rollout`,
:mod:`~strategic_arena.train.engines.engine`, :mod:`~strategic_arena.train.engines.vllm_engine` over
servers from :mod:`~strategic_arena.train.engines.vllm_server`) -> score
(:mod:`~strategic_arena.rl.rewards`) -> advantage (:mod:`~strategic_arena.train.algo.estimators`)
-> update (:mod:`~strategic_arena.train.policy.learner`) -> sync. Configuration lives in
:mod:`~strategic_arena.train.config`; the ``strategic-arena train`` command in
:mod:`strategic_arena.cli.train`. The pure parts need only numpy: the episode and its rewards
live in :mod:`strategic_arena.rl` (shared with the integrations), the estimators here; importing
this package imports nothing heavy.
"""

from strategic_arena.rl.verifiers import register_verifier

# MAPoRL's learned verifier is the trainer's (it loads a policy model): registered here, by the
# layer that owns it, so the verifiers' registry below never names this package.
register_verifier("learned", "strategic_arena.train.policy.verifier:load_verifier")
