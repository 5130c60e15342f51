"""Rollout engines: what turns prompts into sampled tokens, and how weights reach it.

The transformers engine and the client games share (:mod:`.engine`), stock vLLM servers
(:mod:`.vllm_server`, :mod:`.vllm_engine`), the weight transports (:mod:`.vllm_nccl`, and the
disk path of :mod:`.vllm_engine`), LoRA adapters on one server (:mod:`.vllm_lora`), a server
sharing the learner's GPU (:mod:`.colocation`), which GPUs do what (:mod:`.placement`) and how a
checkpoint is served for evaluation (:mod:`.serving`). Nothing here imports the policy package.
"""
