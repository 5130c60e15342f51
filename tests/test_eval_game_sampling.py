"""``eval --game-sampling``: a game's own sampling in every request of that game, and only there.

A recording server (real HTTP, :class:`tests.servers.FaultServer`) plays ``random`` for the
evaluated model; each request's game comes from its game header, its sampling from its body.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("openai", reason="the [arena] extra (openai) is not installed")

from strategic_arena.arena.store import ResultsStore
from strategic_arena.asking import Sampling, game_sampling_params
from strategic_arena.cli import main
from tests.servers import FaultServer

KUHN, TTT = "kuhn_poker-v0", "tic_tac_toe-v0"
#: The sampling fields of a request body (top_k and min_p are extra body fields).
FIELDS = ("temperature", "top_p", "top_k", "min_p", "max_tokens")


def eval_args(db: Path, base_url: str, *extra: str) -> list[str]:
    args = ["eval", "--db", str(db), "--base-url", base_url, "--name", "m", "--quiet"]
    args += ["--envs", KUHN, TTT, "--opponents", "random", "--num-games", "2", "--no-report"]
    return [*args, "--concurrency", "1", *extra]  # one request at a time: header and body pair


def test_each_games_requests_carry_its_own_sampling_and_the_rest_the_global_one(
    tmp_path: Path,
) -> None:
    server = FaultServer()
    db = tmp_path / "g.sqlite"
    given = "temperature=0.7,top_p=0.9,top_k=40,min_p=0.05"
    args = eval_args(db, server.base_url, "--temperature", "0.3", "--max-tokens", "64")
    args += ["--game-sampling", f"{KUHN}:{given}"]
    try:
        assert main(args) == 0
        seen: dict[str, set[tuple[object, ...]]] = {KUHN: set(), TTT: set()}
        assert len(server.seen_bodies) == len(server.seen_game_headers)
        for header, body in zip(server.seen_game_headers, server.seen_bodies, strict=True):
            assert header is not None
            env_id = json.loads(header)["env_id"]
            seen[env_id].add(tuple(body.get(name) for name in FIELDS))
        assert seen == {
            KUHN: {(0.7, 0.9, 40, 0.05, 64)},  # its own, max_tokens from the global options
            TTT: {(0.3, None, None, None, 64)},  # the global options alone
        }
        with ResultsStore(db) as store:
            params = store.players()["m"].params
        recorded = {KUHN: {**dict.fromkeys(("max_tokens", "seed")), "stop": []}}
        recorded[KUHN].update(temperature=0.7, top_p=0.9, top_k=40, min_p=0.05)
        assert params["game_sampling"] == recorded
        # The trainer's evaluation records eval.game_sampling in this same form.
        game = Sampling(temperature=0.7, top_p=0.9, top_k=40, min_p=0.05)
        assert game_sampling_params({KUHN: game}) == recorded
        assert params["temperature"] == 0.3 and "top_k" not in params
        # The same command resumes the same run: nothing is played again.
        before = len(server.seen_bodies)
        assert main(args) == 0
        assert len(server.seen_bodies) - before == 2  # the preflight alone: one per sampling
    finally:
        server.close()


@pytest.mark.parametrize(
    ("option", "message"),
    [
        ("nope-v0:temperature=0.5", "--game-sampling nope-v0: unknown env id 'nope-v0'"),
        (f"{KUHN}:temprature=0.5", f"{KUHN}: unknown Sampling key 'temprature'"),
        (f"{KUHN}:top_p=1.5", f"{KUHN}: top_p must lie in (0, 1]; got 1.5"),
        (f"{KUHN}:top_k=high", f"{KUHN}: top_k must be an integer or null; got 'high'"),
        (f"{KUHN}temperature=0.5", "expected ENV_ID:KEY=VALUE"),
        ("leduc_holdem-v0:temperature=0.5", "names leduc_holdem-v0, which the run does not play"),
    ],
)
def test_a_bad_game_sampling_is_one_line_before_any_request(
    option: str, message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    server = FaultServer()
    db = tmp_path / "g.sqlite"
    try:
        try:
            status = main(eval_args(db, server.base_url, "--game-sampling", option))
        except SystemExit as stop:  # argparse refuses what the option's own reader refuses
            status = int(str(stop.code))
    finally:
        server.close()
    assert status == 2
    err = capsys.readouterr().err.strip()
    # One error line (argparse puts its usage above it), no traceback.
    assert message in err.splitlines()[-1] and err.count("error:") == 1
    assert "Traceback" not in err
    assert server.seen_bodies == [] and not db.exists()


def test_a_game_given_twice_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    args = ["eval", "--db", str(tmp_path / "g.sqlite"), "--envs", KUHN]
    args += ["--game-sampling", f"{KUHN}:temperature=0.1", "--game-sampling", f"{KUHN}:top_k=5"]
    assert main(args) == 2
    assert f"--game-sampling names {KUHN} twice" in capsys.readouterr().err
