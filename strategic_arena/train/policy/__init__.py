"""The policy being trained: its model, its update, and what is saved of it.

Loading a model (:mod:`.models`, the tiny test models of :mod:`.tiny`), PPO's value head
(:mod:`.value_head`), checkpoints (:mod:`.checkpoint`), the learner's update (:mod:`.learner`,
its micro-batches :mod:`.batching` and importance correction :mod:`.importance`) and the learned
verifier (:mod:`.verifier`). Nothing here imports the engines package.
"""
