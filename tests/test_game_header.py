"""The game header stays under its cap, ``serve`` plays from it, and long games are still scored.

Every form is checked against the seat's information it came from: the full form whenever it
fits, else the compact form (the same information without its growing strings) or the game's
identity, each with the digest of the full form.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from strategic_arena.actions import TEXT_MOVE
from strategic_arena.arena.match import play_match
from strategic_arena.env import make
from strategic_arena.game_header import (
    GAME_HEADER,
    GAME_HEADER_CAP,
    MIN_GAME_HEADER_CAP,
    game_header,
)
from strategic_arena.games import CURATED, DEBATE_ID, TEXT_GAMES, get_spec
from strategic_arena.players import RandomPlayer
from strategic_arena.serve import GAME_FIELD, PlayerServer, PlayerService
from strategic_arena.turn import Decision, GameState, Player, SeatInformation
from tests.servers import FRONT_SERVER_HEADER_LIMIT, HeaderLimitServer

CODENAMES = "mindgames_codenames-v0"

#: Turns of maximal moves before the game ends (its 41st move ends it).
LONG_TURNS = 40


def maximal(move: str, length: int) -> str:
    """``move`` padded to ``length`` characters: still legal (TextArena reads its first bracket)."""
    return (move + " because" * length)[:length]


class VerboseCodenames:
    """Codenames at the longest legal moves: a clue no board word is part of, then a pass.

    With ``end_after`` the spymaster's clue at that turn of its own names a board word, which
    ends the game (the other team wins): a game of known length.
    """

    name = "verbose"

    def __init__(self, end_after: int | None = None) -> None:
        self.end_after = end_after
        self.turns = 0
        self.length = get_spec(CODENAMES).max_move_chars

    async def act(self, state: GameState, seat: int) -> Decision:
        self.turns += 1
        if seat in (0, 2):  # the spymasters
            move = "[qqqq 1]"
            if self.end_after is not None and self.turns > self.end_after:
                board = state.observation(seat).rsplit("Codenames Words:\n", 1)[1]
                move = f"[{board.split()[0]} 1]"
        else:
            move = "[pass]"
        move = maximal(move, self.length)
        return Decision(TEXT_MOVE, move, move_text=move)


def test_a_long_codenames_game_is_scored_behind_a_front_servers_header_limit(
    tmp_path: Path,
) -> None:
    """40 turns of the longest legal moves against an endpoint behind an 8 KiB header limit.

    Before the header had a cap it carried the whole conversation: the endpoint answered 431
    as soon as it outgrew 8 KiB, and the game was stored incomplete, never scored.
    """
    pytest.importorskip("openai", reason="the [arena] extra (openai) is not installed")
    pytest.importorskip("textarena", reason="the [textarena] extra is not installed")
    from strategic_arena.arena.runner import Entrant, GameTask, run
    from strategic_arena.arena.store import ResultsStore
    from strategic_arena.backends import OpenAIBackend

    service = PlayerService("verbose", lambda env_id: VerboseCodenames())
    # Red (seats 0, 1) plays in process; its spymaster's 11th clue (the 41st turn) ends the game.
    red = Entrant(
        "red",
        "scripted",
        {},
        lambda env_id, seed: VerboseCodenames(end_after=LONG_TURNS // 4),
        envs=(CODENAMES,),
    )
    with HeaderLimitServer(service) as server, ResultsStore(tmp_path / "a.sqlite") as store:
        backend = OpenAIBackend("verbose", server.base_url, timeout_s=60, max_attempts=1)
        blue = Entrant.llm(backend, name="blue")
        task = GameTask("codenames/0", CODENAMES, 0, (red, red, blue, blue))
        summary = run(store, "long", [task], seed=0, progress=False, max_replays=0)
        (game,) = store.games(include_incomplete=True)
        moves = store.moves(game.id)
    assert server.refused == 0, f"{server.refused} requests refused with 431"
    assert game.status == "complete" and len(moves) == LONG_TURNS + 1
    assert summary.played == 1 and summary.incomplete == 0
    # Blue (the endpoint's team) wins: Red's last clue named a board word.
    assert game.returns[2] > game.returns[0]
    length = get_spec(CODENAMES).max_move_chars
    assert all(len(move.action_text) == length for move in moves)  # every move maximal
    assert max(server.longest_lines) <= FRONT_SERVER_HEADER_LIMIT
    headers = [header for header in server.seen_game_headers if header is not None]
    assert len(headers) == len(server.seen_game_headers) == LONG_TURNS // 2
    assert all(len(header) <= GAME_HEADER_CAP for header in headers)
    # The conversation only grows: full headers first, then (past the cap) compact ones, which
    # the endpoint played from.
    forms = [json.loads(header).get("form") for header in headers]
    first = forms.index("compact")
    assert set(forms[:first]) == {None} and set(forms[first:]) == {"compact"}


# -- every form, checked against the information it came from ------------------------------------


def full_text(information: SeatInformation, style: str = "marshal") -> str:
    """The full form, written here independently of the code under test."""
    payload = {**information.payload(), "style": style}
    return json.dumps(payload, sort_keys=True, separators=(",", ":"))


def check_header(information: SeatInformation, header: str, cap: int = GAME_HEADER_CAP) -> str:
    """Check ``header`` against the seat's ``information``; its form."""
    assert header.isascii() and len(header) <= cap
    full = full_text(information)
    if len(full) <= cap:
        assert header == full  # what fits is sent whole
        return "full"
    sent = json.loads(header)
    assert sent["digest"] == hashlib.sha256(full.encode()).hexdigest()
    assert (sent["env_id"], sent["seat"], sent["style"]) == (
        information.env_id,
        information.seat,
        "marshal",
    )
    seen = information.history if information.history is not None else information.public_moves
    assert sent["moves"] == len(seen)
    if sent["form"] == "id":
        assert set(sent) == {"form", "env_id", "seat", "style", "moves", "digest"}
        return "id"
    assert sent["form"] == "compact"
    compact = SeatInformation.from_payload(sent)
    assert compact.observation is None and compact.information_state is None
    assert compact.history == information.history
    if information.history is None:  # nothing to rebuild them from: sent as they are
        assert compact.public_moves == information.public_moves
        assert compact.legal_actions == information.legal_actions
    return "compact"


class Watcher:
    """A random player that checks the game header of each of its decisions."""

    def __init__(self, seed: int, forms: list[str]) -> None:
        self.inner = RandomPlayer(seed)
        self.name = "watcher"
        self.forms = forms

    async def act(self, state: GameState, seat: int) -> Decision:
        information = state.information(seat)
        self.forms.append(check_header(information, game_header(information, "marshal")))
        return await self.inner.act(state, seat)


@pytest.mark.parametrize("env_id", [*CURATED, *TEXT_GAMES, DEBATE_ID])
def test_no_header_of_a_curated_game_is_over_the_cap(env_id: str) -> None:
    if env_id in TEXT_GAMES:
        pytest.importorskip("textarena", reason="the [textarena] extra is not installed")
    seats = get_spec(env_id).num_players
    forms: list[str] = []
    for seed in range(2):
        players: list[Player] = [Watcher(seed * seats + seat, forms) for seat in range(seats)]
        record = asyncio.run(play_match(env_id, players, seed))
        assert record.status in ("complete", "forfeit")
    # The menu games' information always fits; a free-text game's conversation may outgrow the
    # cap (Codenames' always does), but its compact form always fits.
    assert set(forms) == {"full"} if env_id in CURATED else set(forms) <= {"full", "compact"}
    assert "compact" in forms or env_id != CODENAMES


def state_after(env_id: str, moves: int, seed: int = 0) -> tuple[GameState, int]:
    """The state of a seeded random game after ``moves`` moves, and the seat to move."""
    env = make(env_id)
    env.reset(seed=seed)
    rng = np.random.default_rng(seed)
    for _ in range(moves):
        env.step(int(rng.choice(env.spiel_state.legal_actions())))
    seat = env.agent_name_mapping[env.agent_selection]
    return GameState(env_id, env.spiel_state.clone()), seat


def test_the_forms_follow_the_cap() -> None:
    state, seat = state_after("connect_four-v0", 30, seed=1)
    information = state.information(seat)
    assert check_header(information, game_header(information, "marshal")) == "full"
    compact = game_header(information, "marshal", cap=MIN_GAME_HEADER_CAP)
    assert check_header(information, compact, MIN_GAME_HEADER_CAP) == "compact"
    # Hanabi hides cards: nothing rebuilds its legal actions, which outgrow this cap.
    state, seat = state_after("hanabi_3p-v0", 6)
    information = state.information(seat)
    identity = game_header(information, "marshal", cap=MIN_GAME_HEADER_CAP)
    assert check_header(information, identity, MIN_GAME_HEADER_CAP) == "id"
    with pytest.raises(ValueError, match="at least 512 bytes"):
        game_header(information, "marshal", cap=MIN_GAME_HEADER_CAP - 1)


# -- serve plays from every form it can ------------------------------------------------------------


def post(server: PlayerServer, header: str, game: dict[str, Any] | None = None) -> tuple[int, Any]:
    """A chat request with the game ``header`` (and the ``game`` body field): status, JSON."""
    body = {"messages": [{"role": "user", "content": "your move"}]}
    if game is not None:
        body[GAME_FIELD] = game  # type: ignore[assignment]
    request = urllib.request.Request(
        f"{server.base_url}/chat/completions",
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json", GAME_HEADER: header},
    )
    try:
        with urllib.request.urlopen(request, timeout=30) as reply:
            return reply.status, json.loads(reply.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


def answer(reply: Any) -> str:
    return str(reply["choices"][0]["message"]["content"])


@pytest.fixture()
def servers() -> Iterator[tuple[PlayerServer, PlayerServer]]:
    """Two fresh endpoints of the same seeded player: one decision apiece gives equal moves."""
    with PlayerServer("random") as first, PlayerServer("random") as second:
        yield first, second


def test_serve_plays_a_compact_header_as_the_full_one(
    servers: tuple[PlayerServer, PlayerServer],
) -> None:
    state, seat = state_after("connect_four-v0", 30, seed=1)
    information = state.information(seat)
    full = game_header(information, "marshal")
    compact = game_header(information, "marshal", cap=MIN_GAME_HEADER_CAP)
    assert json.loads(compact)["form"] == "compact"  # no legal action sent: rebuilt by replay
    by_full, by_compact = post(servers[0], full), post(servers[1], compact)
    assert by_full[0] == by_compact[0] == 200
    assert answer(by_full[1]) == answer(by_compact[1])
    move = answer(by_compact[1]).rsplit("<answer>", 1)[1].removesuffix("</answer>")
    assert move in information.legal_actions.values()


def test_serve_plays_a_compact_free_text_game_and_says_what_a_player_missed() -> None:
    pytest.importorskip("textarena", reason="the [textarena] extra is not installed")
    state, seat = state_after(CODENAMES, 0)
    information = state.information(seat)
    compact = game_header(information, "marshal", cap=MIN_GAME_HEADER_CAP)
    assert json.loads(compact)["form"] == "compact"
    with PlayerServer("random") as server:  # writes one of the game's sample moves
        status, reply = post(server, compact)
    assert status == 200 and "<answer>" in answer(reply)

    class Reader:
        """A player that reads its observation (which the compact header left out)."""

        name = "reader"

        async def act(self, state: GameState, seat: int) -> Decision:
            move = state.observation(seat)[:20]
            return Decision(TEXT_MOVE, move, move_text=move)

    with PlayerServer(lambda env_id: Reader()) as server:
        status, reply = post(server, compact)
        assert post(server, compact, information.payload())[0] == 200  # the body: in full
    message = reply["error"]["message"]
    assert status == 400 and "\n" not in message
    assert "has no observation string" in message and "compact" in message
    assert f"{GAME_FIELD!r} field" in message


def test_an_identity_header_is_a_clear_400_and_the_body_still_plays() -> None:
    state, seat = state_after("hanabi_3p-v0", 6)
    information = state.information(seat)
    identity = game_header(information, "marshal", cap=MIN_GAME_HEADER_CAP)
    assert json.loads(identity)["form"] == "id"
    with PlayerServer("random") as server:
        status, reply = post(server, identity)
        in_body = post(server, identity, {**information.payload(), "style": "marshal"})
    message = reply["error"]["message"]
    assert status == 400 and "\n" not in message
    assert "identity alone" in message and f"{GAME_FIELD!r} field" in message
    assert in_body[0] == 200


def test_a_compact_header_of_a_game_that_hides_cards_says_what_it_lacks() -> None:
    state, seat = state_after("mini_hanabi-v0", 2)
    information = state.information(seat)
    compact = {**information.payload(), "observation": None, "form": "compact"}
    with PlayerServer("hanabi_bot") as server:
        status, reply = post(server, json.dumps(compact))
    message = reply["error"]["message"]
    assert status == 400 and "not a Hanabi observation" in message and "compact" in message


@pytest.mark.parametrize(
    ("header", "message"),
    [
        ('{"form": "short", "env_id": "tic_tac_toe-v0", "seat": 0}', f"{GAME_FIELD}: form must be"),
        ("[" * 1000 + "]" * 1000, f"the {GAME_HEADER} header: JSON nested deeper"),
        ("{not json", f"the {GAME_HEADER} header: not JSON"),
    ],
)
def test_a_bad_header_is_a_one_line_400(header: str, message: str) -> None:
    with PlayerServer("random") as server:
        status, reply = post(server, header)
    assert status == 400 and reply["error"]["message"].startswith(message)
    assert "\n" not in reply["error"]["message"]
