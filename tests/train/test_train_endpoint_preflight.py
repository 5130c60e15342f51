"""The trainer checks its endpoint opponents before anything is loaded, as ``eval`` does.

Real HTTP: a closed port (nothing answers) and a served player that lists ``random``. The run
must stop with status 2 and one ``error:`` line naming the config entry, before a run folder
exists or any request reaches a game.
"""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("httpx", reason="the [arena] extra is not installed")

from strategic_arena.cli import main
from strategic_arena.train.config import EvalConfig, GamesConfig, OpponentConfig
from strategic_arena.train.loop.endpoint_preflight import (
    EndpointPreflightError,
    check_endpoints,
    endpoint_entries,
)
from tests.servers import FaultServer


@pytest.fixture
def server() -> Iterator[FaultServer]:
    endpoint = FaultServer()
    yield endpoint
    endpoint.close()


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _train(tmp_path: Path, opponents: str) -> int:
    config = tmp_path / "run.yaml"
    config.write_text(
        f"""run: {{name: preflight, output_dir: {tmp_path / "run"}, steps: 2}}
model: {{name: tiny}}
games:
  ids: [kuhn_poker-v0]
  episodes_per_game: 2
{opponents}
""",
        encoding="utf-8",
    )
    return main(["train", "--config", str(config)])


def test_an_unreachable_persona_stops_the_run_in_one_line_before_anything_loads(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    port = _closed_port()
    status = _train(
        tmp_path,
        f"""  opponents:
    - {{spec: gpt-oss-120b, base_url: "http://127.0.0.1:{port}/v1", name: aggressive}}""",
    )
    err = capsys.readouterr().err
    assert status == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith(
        f"strategic-arena train: error: games.opponents opponent 'aggressive': nothing answers "
        f"at 127.0.0.1:{port}"
    )
    assert not (tmp_path / "run").exists()  # no run folder, no model, no server


def test_an_evaluation_opponent_whose_model_is_not_served_is_named_with_what_is(
    tmp_path: Path, server: FaultServer, capsys: pytest.CaptureFixture[str]
) -> None:
    status = _train(
        tmp_path,
        f"""eval:
  every: 1
  opponents:
    kuhn_poker-v0: [nash, {{spec: gpt-x, base_url: "{server.base_url}"}}]""",
    )
    err = capsys.readouterr().err
    assert status == 2
    assert "eval.opponents opponent 'gpt-x': the endpoint at " in err
    assert "does not serve model 'gpt-x' (it lists: random)" in err
    assert sum(server.served.values()) == 0  # only /models was asked: no game request
    assert not (tmp_path / "run").exists()


def test_each_endpoint_is_asked_once_and_a_served_model_passes(server: FaultServer) -> None:
    served = OpponentConfig(spec="random", base_url=server.base_url, name="persona-a")
    same = OpponentConfig(spec="random", base_url=server.base_url, name="persona-b")
    games = GamesConfig(ids=["kuhn_poker-v0"], opponents=[served, same, OpponentConfig("nash")])
    evaluation = EvalConfig(opponents={"kuhn_poker-v0": ["nash", served]})
    entries = endpoint_entries(games, evaluation)
    assert [(e.where, e.opponent.name) for e in entries] == [("games.opponents", "persona-a")]
    check_endpoints(entries)  # answers and lists "random": no error
    gone = OpponentConfig(spec="random", base_url=f"http://127.0.0.1:{_closed_port()}/v1")
    with pytest.raises(EndpointPreflightError, match=r"games\.opponents opponent 'random': "):
        check_endpoints(endpoint_entries(GamesConfig(opponents=[gone]), EvalConfig()))
