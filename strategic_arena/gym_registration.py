"""The ids of the single-agent views, registered with ``gymnasium.make``.

Apart from :mod:`strategic_arena.wrappers` (which needs PettingZoo) so that the package can
register the ids the moment gymnasium is imported, before any game or wrapper is loaded.
"""

from __future__ import annotations

#: The namespace of the ids registered with ``gymnasium.make``.
GYMNASIUM_NAMESPACE = "strategic_arena"


def register_envs() -> list[str]:
    """Register every curated game's single-agent view with gymnasium.

    ``gymnasium.make("strategic_arena/kuhn_poker-v0", opponent="nash", seat=1, text=False)``
    builds :class:`strategic_arena.wrappers.SingleAgentEnv` with those arguments (defaults: a
    random opponent, seat 0, the text included). Registering twice is harmless (the entries
    are replaced).

    Returns:
        The registered ids.
    """
    import gymnasium

    from strategic_arena.games import CURATED

    ids = []
    for env_id in CURATED:  # no game is loaded here: importing the package stays cheap
        gym_id = f"{GYMNASIUM_NAMESPACE}/{env_id}"
        if gym_id not in gymnasium.registry:
            gymnasium.register(
                id=gym_id,
                entry_point="strategic_arena.wrappers:SingleAgentEnv",
                kwargs={"env_id": env_id},
            )
        ids.append(gym_id)
    return ids
