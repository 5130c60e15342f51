"""docs/arena.md's vLLM recipes against a real vLLM server (``make vllm``), nothing mocked.

A stock ``vllm.entrypoints.openai.api_server`` serves the trainer's tiny model: started without
a tool-call parser, ``eval --style tools`` stops at the preflight with vLLM's own refusal and the
fix, storing nothing; the same server plays a ``boxed`` run with ``--chat-template-kwargs``
(vLLM renders its chat template with them). The module skips, with the reason, where no vLLM
environment exists.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("torch", reason="the [train] extra builds the tiny model")
pytest.importorskip("openai", reason="the [arena] extra (openai) is not installed")

from strategic_arena.arena.store import ResultsStore
from strategic_arena.cli import main
from strategic_arena.train.engines.vllm_server import (
    VLLMServer,
    default_vllm_python,
    vllm_unavailable_reason,
)
from strategic_arena.train.policy.models import save_full_model
from strategic_arena.train.policy.tiny import build_tiny

pytestmark = [pytest.mark.vllm, pytest.mark.xdist_group("vllm")]


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[VLLMServer]:
    reason = vllm_unavailable_reason()
    if reason is not None:
        pytest.skip(f"no vLLM server here: {reason}")
    model, tokenizer = build_tiny(
        ["kuhn_poker-v0"], vocab="answers", style="boxed", hidden_size=128, heads=2, layers=1
    )
    path = tmp_path_factory.mktemp("tiny-vllm-recipes")
    save_full_model(model, tokenizer, dict(model.state_dict()), path)
    with VLLMServer(
        str(path),
        python=default_vllm_python(),
        served_name="tiny",
        dtype="float32",
        max_model_len=2048,
        gpu_memory_utilization=0.3,
        enforce_eager=True,
        log_path=tmp_path_factory.mktemp("vllm-log") / "server.log",
    ) as running:  # no --enable-auto-tool-choice, no --tool-call-parser
        yield running


def eval_args(db: Path, server: VLLMServer, *extra: str) -> list[str]:
    args = ["eval", "--db", str(db), "--base-url", server.base_url, "--envs", "kuhn_poker-v0"]
    return [*args, "--opponents", "random", "--num-games", "2", "--quiet", "--no-report", *extra]


def test_style_tools_without_a_tool_parser_stops_before_anything_is_stored(
    server: VLLMServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "tools.sqlite"
    assert main(eval_args(db, server, "--style", "tools", "--max-tokens", "16")) == 2
    err = capsys.readouterr().err
    assert "requires --tool-call-parser" in err  # vLLM's own words, passed on
    assert "start vLLM with --enable-auto-tool-choice --tool-call-parser NAME" in err
    assert not db.exists()


def test_chat_template_kwargs_are_accepted_by_vllm(
    server: VLLMServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "boxed.sqlite"
    kwargs = '{"enable_thinking": false}'
    args = eval_args(db, server, "--style", "boxed", "--max-tokens", "16")
    assert main([*args, "--chat-template-kwargs", kwargs]) == 0
    assert "0 incomplete (server failures)" in capsys.readouterr().err
    with ResultsStore(db) as store:
        assert len(store.games()) == 2
        assert store.players()["tiny"].params["chat_template_kwargs"] == {"enable_thinking": False}
