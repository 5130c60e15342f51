"""The algorithms of a step, without torch: advantages, the replay bank, what to keep.

Advantage estimators (:mod:`.estimators`, a registry: each declares its config and whether it
needs a critic), the episode bank (:mod:`.bank`), off-policy staleness (:mod:`.staleness`), turn
subsampling (:mod:`.subsample`), collapse detection (:mod:`.collapse`) and per-move game rewards
(:mod:`.game_rewards`). Only numpy: nothing here imports torch, the engines or the policy.
"""
