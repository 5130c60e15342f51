"""The config check of the ``policies`` section (:mod:`.policies`) against the rest of the run.

Kept apart from the section itself, which the schema imports: this check reads the whole
config.
"""

from __future__ import annotations

from typing import Any

from strategic_arena.train.config.schema import TrainConfig

#: What the co-training loop does not do (yet); each (config test, reason) refuses a config.
UNSUPPORTED: tuple[tuple[str, Any, str], ...] = (
    ("rollout.max_staleness", lambda c: c.rollout.max_staleness > 0, "asynchronous rollouts"),
    ("bank", lambda c: c.bank is not None, "an episode bank"),
    ("games.opponents", lambda c: bool(c.games.opponents), "an opponent pool (self-play only)"),
    ("games.snapshot_every", lambda c: c.games.snapshot_every > 0, "self-play snapshots"),
    ("eval.every", lambda c: c.eval.every > 0, "the trainer's solver evaluation"),
    ("placement.vllm_sleep_level", lambda c: c.placement.vllm_sleep_level > 0, "sleep mode"),
    ("vllm.base_urls", lambda c: bool(c.vllm.base_urls), "external servers"),
)


def policies_fit(cfg: TrainConfig) -> list[str]:
    """Several policies: own problems, distinct names, seats that partition every game's seats.

    Also refuses what the co-training loop does not support (:data:`UNSUPPORTED`).
    """
    if not cfg.policies:
        return []
    problems = [problem for policy in cfg.policies for problem in policy.problems()]
    names = [policy.name for policy in cfg.policies]
    if len(set(names)) != len(names):
        problems.append(f"policies: names must differ, got {names}")
    owners: dict[int, str] = {}
    for policy in cfg.policies:
        for seat in policy.seats:
            if seat in owners:
                problems.append(
                    f"policies: seat {seat} belongs to {owners[seat]} and {policy.name}"
                )
            owners[seat] = policy.name
    from strategic_arena.games import get_spec  # OpenSpiel: only where a config is checked

    for env_id in cfg.games.ids:
        try:
            seats = set(range(get_spec(env_id).num_players))
        except (KeyError, ValueError):
            continue  # the games section reports unknown games
        if set(owners) != seats:
            problems.append(
                f"policies: {env_id} has seats {sorted(seats)}, the policies play "
                f"{sorted(owners)} (every seat exactly once)"
            )
    for key, applies, what in UNSUPPORTED:
        if applies(cfg):
            problems.append(f"policies: co-training does not support {what} ({key})")
    return problems
