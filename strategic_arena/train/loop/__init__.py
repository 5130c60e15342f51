"""The training loop: the trainer that composes engines, policy and algorithms, and its run.

The trainer and its step (:mod:`.trainer`), several policies trained together (:mod:`.cotrain`,
their shared LoRA server :mod:`.lora_server`), the ``strategic-arena train`` run
(:mod:`.run`, :mod:`.console`, :mod:`.interrupt`), rollouts (:mod:`.rollout`,
:mod:`.async_rollouts`, opponents :mod:`.opponent_players`, :mod:`.past_self`), scoring of
debates (:mod:`.maporl`), metrics (:mod:`.metrics`) and evaluation (:mod:`.evaluation`,
:mod:`.transfer_eval`).
"""
