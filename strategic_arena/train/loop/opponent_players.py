"""The players of the opponent pool's entries: solvers and bots, endpoints, frozen models.

:class:`OpponentPlayers` is the rollouts' opponent factory: for a pool entry, an env and a seat
it builds the non-policy player of one game, seeded from the game's seed. Solvers and bots come
from :func:`opponents.make`; an OpenAI-compatible endpoint is an :class:`LLMPlayer` over one
backend per entry (kept for the run); a frozen checkpoint or a snapshot of the policy is the
same model player over its own transformers engine, loaded once and cached
until the pool drops the snapshot.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace
from pathlib import Path
from typing import Any

import opponents
from strategic_arena._extras import require
from strategic_arena.arena.runner import Entrant
from strategic_arena.asking import Sampling as SamplingSettings
from strategic_arena.backends import OpenAIBackend
from strategic_arena.players import LLMPlayer
from strategic_arena.seeding import derive_seed
from strategic_arena.train.config import GamesConfig, OpponentConfig, TrainConfig
from strategic_arena.train.dist import DistInfo, barrier
from strategic_arena.train.engines.engine import BatchSampling, EngineClient, TransformersEngine
from strategic_arena.train.loop.rollout import (
    OpponentPool,
    PoolEntry,
    PromptEncoder,
    configured_player,
)
from strategic_arena.train.policy.build import Policy
from strategic_arena.train.policy.models import load_saved_tokenizer
from strategic_arena.turn import Player


class OpponentPlayers:
    """Builds the non-policy player of a pool entry for one game (see the module docstring).

    Args:
        cfg: the run's config (sampling and prompt settings).
        tokenizer: the policy's tokenizer, used by frozen models saved without their own.
        device: the torch device frozen models run on.
    """

    def __init__(self, cfg: TrainConfig, tokenizer: Any, device: Any) -> None:
        self.cfg = cfg
        self.tokenizer = tokenizer
        self.device = device
        self._frozen: dict[str, tuple[EngineClient, PromptEncoder]] = {}
        self._backends: dict[str, OpenAIBackend] = {}

    def __call__(self, entry: PoolEntry, env_id: str, seat: int, game_seed: int) -> Player:
        """The player of ``entry`` in ``seat`` of the game seeded with ``game_seed``."""
        seed = derive_seed(game_seed, seat, "opponent")
        if entry.snapshot is not None:
            return self.frozen(entry.snapshot, entry.name, seed, None)
        config = entry.config
        assert config is not None
        if config.base_url is not None:
            # The arena's entrant builds the model player, as in eval and evaluation.
            return Entrant.llm(self.endpoint_backend(config, entry.name), name=entry.name).build(
                env_id, seed
            )
        if config.spec.startswith("checkpoint:"):
            path = config.spec.removeprefix("checkpoint:")
            return self.frozen(path, entry.name, seed, config.temperature)
        return opponents.make(config.spec, env_id, seed=seed)

    def endpoint_backend(self, config: OpponentConfig, name: str | None = None) -> OpenAIBackend:
        """The backend of an endpoint opponent (one per name, kept for the run).

        Asked as the policy is (``cfg.answer``), but with neither its prefix nor
        its chat template kwargs (they belong to the policy's template), and with the entry's
        persona (``system_prompt``) if it has one; sampling: the opponent's
        temperature (else the training one), the training top-p and response budget; its seed
        derives from the run's seed and ``name`` (default: the spec).
        """
        cfg = self.cfg
        name = name or config.spec
        backend = self._backends.get(name)
        if backend is None:
            if config.base_url is None:
                raise ValueError(f"opponent {config.spec!r} has no base_url")
            temperature = (
                cfg.sampling.temperature if config.temperature is None else config.temperature
            )
            sampling = SamplingSettings(
                temperature=temperature,
                top_p=cfg.sampling.top_p,
                max_tokens=cfg.sampling.max_tokens,
            )
            backend = OpenAIBackend(
                config.spec,
                config.base_url,
                api_key_env=config.api_key_env,
                sampling=sampling,
                asking=replace(
                    cfg.answer,
                    response_prefix="",
                    chat_template_kwargs={},
                    system_prompt=config.system_prompt,
                ),
                seed=derive_seed(cfg.run.seed, "endpoint", name),
            )
            self._backends[name] = backend
        return backend

    def frozen(self, path: str, name: str, seed: int, temperature: float | None) -> LLMPlayer:
        """A non-recording policy player over the model saved at ``path`` (loaded once)."""
        cfg = self.cfg
        if path not in self._frozen:
            transformers = require("transformers", "frozen opponents")
            tokenizer = (
                load_saved_tokenizer(path, tiny=cfg.model.name == "tiny")
                if (Path(path) / "tokenizer_config.json").exists()
                else self.tokenizer
            )
            tokenizer.padding_side = "left"
            model = transformers.AutoModelForCausalLM.from_pretrained(path).to(self.device)
            model.eval()
            model.requires_grad_(False)
            settings = cfg.sampling
            if temperature is not None:
                settings = replace(settings, temperature=temperature)
            sampling = BatchSampling.of(settings)
            engine = TransformersEngine(model, tokenizer, max_batch_size=cfg.rollout.max_batch_size)
            encoder = PromptEncoder(tokenizer, cfg.answer)
            self._frozen[path] = (
                EngineClient(engine, sampling, max_batch_size=cfg.rollout.max_batch_size),
                encoder,
            )
        client, encoder = self._frozen[path]
        return configured_player(cfg, client, encoder, seed, name=name)

    async def release(self, path: str) -> None:
        """Forget the frozen model loaded from ``path`` (a past checkpoint played once)."""
        found = self._frozen.pop(path, None)
        if found is not None:
            await found[0].aclose()

    def drop_snapshots(self, kept: Iterable[str | None]) -> None:
        """Forget the cached models of policy snapshots not in ``kept`` (left the pool)."""
        keep = set(kept)
        for stale in [path for path in self._frozen if path not in keep and "snapshots" in path]:
            del self._frozen[stale]


def add_snapshot(
    policy: Policy,
    pool: OpponentPool,
    players: OpponentPlayers,
    games: GamesConfig,
    step: int,
    output_dir: Path,
    world: DistInfo,
) -> None:
    """Add a frozen copy of the policy after ``step`` to the opponent pool (self-play snapshots).

    Rank 0 writes it under ``output_dir/snapshots``; the pool keeps ``games.max_snapshots`` at
    weight ``games.snapshot_weight``, and ``players`` forget the models of those it dropped.
    """
    path = output_dir / "snapshots" / f"step-{step:06d}"
    weights = dict(policy.full_weights())  # a collective under FSDP: every rank
    if world.main:
        policy.save_full(weights, path)
    barrier(world)
    pool.add_snapshot(str(path), step, games.snapshot_weight, games.max_snapshots)
    players.drop_snapshots(entry.snapshot for entry in pool.snapshots)
