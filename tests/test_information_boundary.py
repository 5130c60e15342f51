"""The information boundary: an endpoint receives only what its seat may know.

A recording endpoint (real HTTP, answering through ``serve``'s own service, and claiming
``owned_by: strategic-arena`` like an arena server) records every request byte. The strong form:
each game is played twice with the other seat's hidden cards changed (in Hanabi: the endpoint's
own hand, which it cannot see), by scripting the chance outcomes; wherever OpenSpiel says the
endpoint's seat knows the same in both games, the recorded requests must be byte-identical.
This runs for the arena's model player (the one ``eval`` builds) and the trainer's endpoint
opponent, over all six curated games; ``eval`` itself and a trainer's rollouts are checked to
send nothing but the seat's information.
"""

from __future__ import annotations

import asyncio
import hashlib
import itertools
import json
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

import strategic_arena as sa
from strategic_arena.arena.match import MatchRecord, play_match
from strategic_arena.env import TextGameEnv
from strategic_arena.players import GAME_HEADER
from strategic_arena.serve import PlayerService
from strategic_arena.turn import Decision, GameState, Player, SeatInformation

pytest.importorskip("openai", reason="the [arena] extra (openai) is not installed")

from strategic_arena.arena.runner import Entrant
from strategic_arena.backends import OpenAIBackend
from strategic_arena.cli import main
from tests.servers import any_model

GAMES = (
    "tic_tac_toe-v0",
    "connect_four-v0",
    "kuhn_poker-v0",
    "leduc_holdem-v0",
    "mini_hanabi-v0",
    "simple_hanabi-v0",
)
IMPERFECT = {"kuhn_poker-v0", "leduc_holdem-v0", "mini_hanabi-v0", "simple_hanabi-v0"}


class InformationHashPlayer:
    """Served behind the recorder: a legal move picked by a hash of the seat's information.

    Its answer is a function of what it received alone, so a second game that sends the same
    requests gets the same answers, whatever the server saw before.
    """

    name = "hash"

    async def act(self, state: GameState, seat: int) -> Decision:
        information = state.information(seat)
        digest = hashlib.sha256(json.dumps(information.payload()).encode()).digest()
        legal = sorted(information.legal_actions)
        action = legal[digest[0] % len(legal)]
        return Decision(action, information.legal_actions[action])


@dataclass(frozen=True)
class Request:
    """One recorded request: the raw body and every header (names in lower case)."""

    body: bytes
    headers: tuple[tuple[str, str], ...]


class RecordingEndpoint:
    """A real HTTP endpoint that records every request and answers like ``serve``."""

    def __init__(self) -> None:
        self.requests: list[Request] = []
        self.service = PlayerService("recorder", lambda env_id: InformationHashPlayer())
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            disable_nagle_algorithm = True

            def do_GET(self) -> None:
                # Claims to be an arena server, as any endpoint may.
                self._reply(self.service_models())

            def service_models(self) -> dict[str, Any]:
                listing = outer.service.models()
                assert listing["data"][0]["owned_by"] == "strategic-arena"
                return listing

            def do_POST(self) -> None:
                raw = self.rfile.read(int(self.headers["Content-Length"]))
                headers = sorted((key.lower(), value) for key, value in self.headers.items())
                outer.requests.append(Request(raw, tuple(headers)))
                body = any_model(json.loads(raw))  # it stands in for whatever model is asked
                self._reply(outer.service.complete(body, self.headers.get(GAME_HEADER)))

            def _reply(self, payload: dict[str, Any]) -> None:
                data = json.dumps(payload).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    @property
    def base_url(self) -> str:
        host, port = self.httpd.server_address[:2]
        return f"http://{host!s}:{port}/v1"

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture(scope="module")
def recorder() -> Iterator[RecordingEndpoint]:
    endpoint = RecordingEndpoint()
    yield endpoint
    endpoint.close()


# -- scripted chance ---------------------------------------------------------------------------


class ScriptedChance(TextGameEnv):
    """An env whose chance outcomes are given in order (then the first available one)."""

    def __init__(self, env_id: str, script: Sequence[int]) -> None:
        super().__init__(sa.get_spec(env_id))
        self.script = list(script)

    def _resolve_chance(self) -> None:
        state = self.spiel_state
        while state.is_chance_node():
            available = [outcome for outcome, _ in state.chance_outcomes()]
            wanted = self.script.pop(0) if self.script else available[0]
            state.apply_action(wanted if wanted in available else available[0])


def deals(env_id: str, seat: int) -> tuple[list[int], list[int]]:
    """Two chance scripts that differ only in what ``seat`` cannot see.

    Poker: the other seat's card (seat 0 is dealt first, then seat 1, then Leduc's public
    card). Hanabi (outcome = colour * 2 + rank - 1; seat 0's hand is dealt first): the
    endpoint seat's own hand, hidden from it, in another order (so the deck, the partner's
    hand and which hints are legal stay the same).
    """
    if env_id == "kuhn_poker-v0":
        mine, theirs, other = 1, 0, 2
        first = [mine, theirs] if seat == 0 else [theirs, mine]
        second = [mine, other] if seat == 0 else [other, mine]
        return first, second
    if env_id == "leduc_holdem-v0":
        mine, theirs, other, public = 2, 0, 5, 3
        first = [mine, theirs, public] if seat == 0 else [theirs, mine, public]
        second = [mine, other, public] if seat == 0 else [other, mine, public]
        return first, second
    if env_id == "mini_hanabi-v0":  # R1 R1 R1 R2 Y1 Y1 Y1 Y2, three cards a hand
        partner = [2, 1, 3]  # Y1 R2 Y2
        own_a, own_b = [0, 0, 2], [2, 0, 0]
    else:  # simple_hanabi-v0: R Y G, ranks 1-2, five cards a hand
        partner = [2, 1, 4, 3, 0]
        own_a, own_b = [0, 2, 4, 0, 5], [5, 0, 0, 4, 2]
    if seat == 0:
        return own_a + partner, own_b + partner
    return partner + own_a, partner + own_b


class Scripted:
    """The other seat: its first (or last) legal action, which no hidden card changes (the hand
    permutations of :func:`deals` keep Hanabi's legal hints the same).

    The first is a pass, a check or a play; the last a bet, a raise or a hint.
    """

    def __init__(self, last: bool) -> None:
        self.last = last
        self.name = "last-legal" if last else "first-legal"

    async def act(self, state: GameState, seat: int) -> Decision:
        menu = state.menu(seat)
        action = max(menu) if self.last else min(menu)
        return Decision(action, menu[action])


@dataclass(frozen=True)
class Game:
    """One played game: its record and, per endpoint request, what OpenSpiel says it knew."""

    record: MatchRecord
    requests: list[Request]
    knowledge: list[tuple[str, tuple[int, ...]]]


class Witness:
    """Wraps the endpoint's player to note the seat's OpenSpiel knowledge at each request."""

    def __init__(self, player: Player, knowledge: list[tuple[str, tuple[int, ...]]]) -> None:
        self.player = player
        self.name = player.name
        self.knowledge = knowledge

    async def act(self, state: GameState, seat: int) -> Decision:
        spiel = state.spiel_state
        assert spiel is not None
        known = (
            spiel.information_state_string(seat)
            if spiel.get_game().get_type().provides_information_state_string
            else spiel.observation_string(seat)
        )
        moves = tuple(int(item.action) for item in spiel.full_history() if item.player >= 0)
        self.knowledge.append((str(known), moves))
        return await self.player.act(state, seat)


def play(
    recorder: RecordingEndpoint,
    env_id: str,
    seat: int,
    script: Sequence[int],
    endpoint_player: Callable[[], Player],
    last: bool,
) -> Game:
    """One game with the endpoint's player in ``seat`` and :class:`Scripted` in the other."""
    recorder.requests.clear()
    knowledge: list[tuple[str, tuple[int, ...]]] = []
    players: list[Player] = [Scripted(last), Scripted(last)]
    players[seat] = Witness(endpoint_player(), knowledge)
    env = ScriptedChance(env_id, script)
    record = asyncio.run(play_match(env_id, players, seed=0, env=env))
    return Game(record, list(recorder.requests), knowledge)


def assert_hidden_cards_change_nothing(
    recorder: RecordingEndpoint, env_id: str, endpoint_player: Callable[[], Player]
) -> None:
    """The strong form of the boundary, for both seats of ``env_id`` and both scripted rivals."""
    compared = 0
    for seat, last in itertools.product((0, 1), (False, True)):
        if env_id not in IMPERFECT:
            game = play(recorder, env_id, seat, [], endpoint_player, last)
            assert game.record.status == "complete" and game.requests
            for request in game.requests:
                information = json.loads(dict(request.headers)[GAME_HEADER.lower()])
                assert information["history"] is not None  # public: nothing is hidden
            continue
        first_script, second_script = deals(env_id, seat)
        first = play(recorder, env_id, seat, first_script, endpoint_player, last)
        second = play(recorder, env_id, seat, second_script, endpoint_player, last)
        assert first.record.history != second.record.history  # the deals really differ
        assert len(first.requests) == len(first.knowledge) >= 1
        for index in range(min(len(first.requests), len(second.requests))):
            if first.knowledge[index] != second.knowledge[index]:
                break  # the seat learned something (a card it played): the games may part
            assert first.requests[index] == second.requests[index], (env_id, seat, index)
            information = json.loads(dict(first.requests[index].headers)[GAME_HEADER.lower()])
            assert information["history"] is None
            compared += 1
    assert env_id not in IMPERFECT or compared >= 4


@pytest.mark.parametrize("env_id", GAMES)
def test_the_arena_model_player_sends_nothing_hidden(
    recorder: RecordingEndpoint, env_id: str
) -> None:
    backend = OpenAIBackend("recorder", recorder.base_url, timeout_s=30, max_attempts=1)
    entrant = Entrant.llm(backend, name="m")
    assert_hidden_cards_change_nothing(recorder, env_id, lambda: entrant.build(env_id, 0))


# -- eval, end to end --------------------------------------------------------------------------


def test_eval_sends_only_seat_information_to_an_endpoint_claiming_to_be_an_arena_server(
    recorder: RecordingEndpoint, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    recorder.requests.clear()
    args = ["eval", "--base-url", recorder.base_url, "--name", "m", "--envs", *GAMES]
    args += ["--opponents", "random", "--num-games", "2", "--max-attempts", "1"]
    assert main([*args, "--db", str(tmp_path / "e.sqlite"), "--quiet"]) == 0
    capsys.readouterr()
    fields = {*SeatInformation("x", 0, None, None, (), {}).payload(), "style"}
    games = set()
    for request in recorder.requests:
        information = json.loads(dict(request.headers)[GAME_HEADER.lower()])
        assert set(information) == fields
        games.add(information["env_id"])
        # The full history (with hidden chance outcomes) only where nothing is hidden.
        assert (information["history"] is None) == (information["env_id"] in IMPERFECT)
        body = json.loads(request.body)
        assert set(body) <= {"model", "messages", "max_tokens", "temperature", "top_p", "seed"}
    assert games == set(GAMES)
