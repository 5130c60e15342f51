"""Per-game sampling (``eval.game_sampling``): every request of a game carries its settings.

The recipe's evaluation (``configs/mindgames_multi_game.yaml``: In2AI's Table 4) runs against a
recording server that speaks vLLM's ``/v1/completions`` over real HTTP, through the trainer's
vLLM engine; each request's sampling fields are read back and matched to the game its prompt
belongs to.
"""

from __future__ import annotations

import asyncio
import json
import threading
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")
pytest.importorskip("httpx")
pytest.importorskip("textarena")

from strategic_arena.train.config import load_config
from strategic_arena.train.engines.vllm_engine import VLLMServerEngine
from strategic_arena.train.loop.evaluation import evaluate_policy
from strategic_arena.train.loop.opponent_players import OpponentPlayers
from strategic_arena.train.loop.rollout import PromptEncoder
from strategic_arena.train.policy.models import load_tokenizer
from tests.train.conftest import TINY
from tests.train.stub_http import StubServer

CONFIG = Path(__file__).parents[2] / "configs" / "mindgames_multi_game.yaml"
#: In2AI's Table 4: (temperature, top_p, top_k, min_p); vLLM's "off" is top_k -1, min_p 0.
TABLE_4 = {
    "Codenames": (0.7, 0.8, 30, 0.05),
    "Colonel Blotto": (1.0, 1.0, -1, 0.0),
    "Prisoner": (0.6, 0.85, 30, 0.0),
}


class RecordingVllm(StubServer):
    """Answers every completion with the EOS token (an empty answer) and records the body."""

    def __init__(self, eos: int) -> None:
        self.bodies: list[dict[str, Any]] = []
        self.lock = threading.Lock()
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                payload = b"{}"
                if self.path == "/v1/completions":
                    with owner.lock:
                        owner.bodies.append(json.loads(raw))
                    choice = {
                        "token_ids": [eos],
                        "logprobs": {"token_logprobs": [-0.5]},
                        "finish_reason": "stop",
                    }
                    payload = json.dumps({"choices": [choice]}).encode()
                self.send_response(200)
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def log_message(self, *args: Any) -> None:
                pass

        super().__init__(Handler)


@pytest.mark.slow
def test_each_games_requests_carry_its_sampling(tmp_path: Path) -> None:
    cfg = load_config(
        CONFIG,
        [
            *TINY,
            f"run.output_dir={tmp_path / 'run'}",
            "games.ids=[mindgames_codenames-v0, mindgames_colonel_blotto-v0, "
            "mindgames_three_player_ipd-v0]",
            "games.self_play_weight=1.0",
            "games.opponents=[]",
            "answer.chat_template_kwargs={}",
            "answer.response_prefix=''",
            "eval.games=2",
            "model.tiny_vocab=prompts",
        ],
    )
    tokenizer = load_tokenizer(cfg.model, cfg.games, cfg.answer)
    server = RecordingVllm(int(tokenizer.eos_token_id))
    engine = VLLMServerEngine([server.url], "policy", [tokenizer.eos_token_id])
    try:
        evaluation = asyncio.run(
            evaluate_policy(
                cfg,
                engine,
                PromptEncoder(tokenizer, cfg.answer),
                0,
                OpponentPlayers(cfg, tokenizer, None),
            )
        )
    finally:
        engine.close()
        server.close()
    assert evaluation.rows  # the games were played and stored
    seen: dict[str, set[tuple[float, float, int, float]]] = {game: set() for game in TABLE_4}
    for body in server.bodies:
        prompt = tokenizer.decode(body["prompt"])
        (game,) = [name for name in TABLE_4 if name in prompt]
        seen[game].add((body["temperature"], body["top_p"], body["top_k"], body["min_p"]))
    assert seen == {game: {settings} for game, settings in TABLE_4.items()}
