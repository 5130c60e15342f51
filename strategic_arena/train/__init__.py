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
