"""Reasoning and tool-calling models as users run them: template kwargs, extra body, max tokens."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("openai", reason="the [arena] extra (openai) is not installed")

from strategic_arena.arena.defaults import DEFAULT_MAX_TOKENS
from strategic_arena.arena.store import ResultsStore
from strategic_arena.cli import main
from tests.servers import FaultServer


def eval_args(db: Path, base_url: str, *extra: str) -> list[str]:
    args = ["eval", "--db", str(db), "--base-url", base_url, "--name", "m", "--quiet"]
    return [*args, "--envs", "kuhn_poker-v0", "--opponents", "random", "--num-games", "2", *extra]


def test_chat_template_kwargs_and_extra_body_reach_every_request_and_the_store(
    tmp_path: Path,
) -> None:
    server = FaultServer()
    db = tmp_path / "o.sqlite"
    try:
        args = eval_args(db, server.base_url, "--no-report", "--top-k", "20")
        args += ["--chat-template-kwargs", '{"enable_thinking": false}']
        args += ["--extra-body", '{"repetition_penalty": 1.1, "top_k": 40}']
        assert main(args) == 0
    finally:
        server.close()
    assert len(server.seen_bodies) >= 3  # the preflight request and the games'
    for body in server.seen_bodies:
        assert body["chat_template_kwargs"] == {"enable_thinking": False}
        assert body["repetition_penalty"] == 1.1
        assert body["top_k"] == 40  # --extra-body is sent as given: it wins over --top-k
        assert body["max_tokens"] == DEFAULT_MAX_TOKENS  # the default, stated in --help
    with ResultsStore(db) as store:
        params = store.players()["m"].params
    assert params["chat_template_kwargs"] == {"enable_thinking": False}
    assert params["repetition_penalty"] == 1.1 and params["max_tokens"] == DEFAULT_MAX_TOKENS


def test_max_tokens_0_leaves_the_limit_to_the_server(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    server = FaultServer()
    try:
        assert main(eval_args(tmp_path / "o.sqlite", server.base_url, "--max-tokens", "0")) == 0
    finally:
        server.close()
    assert all("max_tokens" not in body for body in server.seen_bodies)
    # The preflight's HTTP client does not outlive its event loop into the run's.
    assert "Event loop is closed" not in caplog.text


def test_json_options_must_be_json_objects(capsys: pytest.CaptureFixture[str]) -> None:
    for bad in ("{enable_thinking: false}", "[1, 2]"):
        with pytest.raises(SystemExit) as stop:
            main(["eval", "--chat-template-kwargs", bad])
        assert stop.value.code == 2
        err = capsys.readouterr().err
        assert "argument --chat-template-kwargs:" in err and "Traceback" not in err


def test_the_help_states_the_default_max_tokens(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["eval", "--help"])
    out = capsys.readouterr().out
    assert f"(default {DEFAULT_MAX_TOKENS} for a --base-url" in " ".join(out.split())
    assert "--chat-template-kwargs JSON" in out


def test_the_solver_suite_keeps_no_token_limit_so_old_stores_resume(tmp_path: Path) -> None:
    # A store made before --max-tokens had a default (make arena) holds the solver suite
    # without a limit: a rerun must resume it, not refuse it for a changed max_tokens.
    db = tmp_path / "arena.sqlite"
    first = ["eval", "--db", str(db), "--envs", "kuhn_poker-v0", "--opponents", "random"]
    first += ["--num-games", "2", "--no-report"]
    assert main(first) == 0
    with ResultsStore(db) as store:
        assert store.players()["solver-suite"].params.get("max_tokens") is None
    assert main(first) == 0


def test_reasoning_content_is_read_and_replayed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # A server that returns the reasoning apart (vLLM's --reasoning-parser): the marshal answer
    # needs no <think> block then, and replay --prompts shows the reasoning.
    server = FaultServer(["ok", "reasoning"])
    db = tmp_path / "o.sqlite"
    try:
        args = eval_args(db, server.base_url, "--no-report", "--concurrency", "1")
        assert main(args) == 0
    finally:
        server.close()
    assert main(["replay", "1", "--db", str(db), "--prompts"]) == 0
    out = capsys.readouterr().out
    assert "--- reasoning ---\nI think, so I am." in out
