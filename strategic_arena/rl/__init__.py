"""Pure reinforcement-learning definitions shared by the trainer and the integrations.

:mod:`~strategic_arena.rl.episode` is the data model of a finished game (an
:class:`~strategic_arena.rl.episode.Episode` of learner
:class:`~strategic_arena.rl.episode.Turn` s) and :mod:`~strategic_arena.rl.rewards` turns one into
per-turn rewards (MARSHAL's terms, In2AI's gating). They need only the standard library, and sit
below both :mod:`strategic_arena.train` and :mod:`strategic_arena.integrations`, so that an
integration scores a game exactly as the trainer does without depending on the trainer.
:mod:`~strategic_arena.rl.definitions` is the registry of reward definitions a game may be scored
by instead (In2AI's MindGames rewards, :mod:`~strategic_arena.rl.mindgames`, which replay the game
through TextArena when they score it).
"""
