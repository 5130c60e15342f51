"""Adapters to the LLM-RL frameworks people train with, each in its own optional extra.

* :mod:`~strategic_arena.integrations.verifiers` -- ``load_environment`` for verifiers
  (``vf-eval``, prime-rl): a multi-turn environment over one or many games (extra
  ``[verifiers]``);
* :mod:`~strategic_arena.integrations.trl` -- an ``environment_factory`` environment for TRL's
  ``GRPOTrainer``, the model moving by calling its ``play`` tool (extra ``[trl]``);
* :mod:`~strategic_arena.integrations.openenv` -- the games as an OpenEnv environment server and
  client (extra ``[openenv]``).

All three are thin layers over :class:`~strategic_arena.integrations.session.GameSession`: one
game from the model's seat, stepped with the model's answers, the other seats played in-process
by the package's opponents, rewarded by the trainer's reward definitions. Importing this package
imports no framework.
"""
