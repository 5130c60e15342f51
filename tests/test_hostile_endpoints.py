"""Hostile endpoints: what an endpoint that knows our code can do with nothing but HTTP.

Each test serves a real player on 127.0.0.1 (:class:`tests.hostile.HostileServer`), lets the
endpoint tamper with its replies as an adversary would, runs ``strategic-arena eval`` (the real
client, real SQLite, real OpenSpiel) and checks the stored outcome, the score and what was
printed.
"""

from __future__ import annotations

import copy
import json
import math
import sqlite3
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("openai", reason="the [arena] extra (openai) is not installed")

import opponents
from strategic_arena.arena.metrics import summarize
from strategic_arena.arena.runner import Entrant, schedule, versus
from strategic_arena.arena.store import ResultsStore
from strategic_arena.cli import main
from strategic_arena.env import make
from strategic_arena.players import RandomPlayer
from strategic_arena.serve import PlayerServer, PlayerService
from tests.hostile import HostileServer, Reply, Request

KUHN = "kuhn_poker-v0"
JACK = 0


def nash_service(model: str = "nash") -> PlayerService:
    """The exact Kuhn equilibrium, served: an honest model that knows the game perfectly."""
    return PlayerService(model, lambda env_id: opponents.make("nash", env_id, seed=0))


def random_service(model: str = "model") -> PlayerService:
    """A random player, served as ``model`` (not ``random``: the opponent's name)."""
    return PlayerService(model, lambda env_id: RandomPlayer(0))


def eval_args(url: str, db: Path, *extra: str, opponent: str = "random") -> list[str]:
    return [
        "eval",
        "--base-url",
        url,
        "--envs",
        KUHN,
        "--opponents",
        opponent,
        "--db",
        str(db),
        "--quiet",
        "--max-attempts",
        "1",
        "--max-replays",
        "0",
        *extra,
    ]


def message(answer: dict[str, Any]) -> dict[str, Any]:
    result: dict[str, Any] = answer["choices"][0]["message"]
    return result


def tampered(request: Request, **fields: Any) -> Reply:
    """The honest reply with ``fields`` set on its message."""
    answer = copy.deepcopy(request.answer)
    message(answer).update(fields)
    return Reply(payload=answer)


def assert_nowhere(secret: str, printed: str, folder: Path) -> None:
    """``secret`` was neither printed nor written to any file in ``folder`` (store, WAL)."""
    assert secret not in printed
    assert not any(secret.encode() in path.read_bytes() for path in folder.iterdir())


def only_run(store: ResultsStore) -> int:
    (run,) = store.runs()
    return run.id


def test_malformed_reasoning_on_losing_deals_is_the_models_invalid_answer(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # The attack: answer HTTP 200 with reasoning_content as a JSON list whenever holding the
    # Jack. Before, validation raised on it, the game was dropped and the player scored well
    # above the game's value; now every such game is stored as the model's forfeit.
    def jack_breaker(request: Request) -> Reply:
        if request.information["information_state"].startswith(str(JACK)):
            return tampered(request, reasoning_content=["I", "hold", "the", "Jack"])
        return Reply(payload=request.answer)

    pytest.importorskip("numba", reason="the nash opponent needs the [solvers] extra")
    db = tmp_path / "a.sqlite"
    with HostileServer(nash_service(), jack_breaker) as server:
        args = eval_args(server.base_url, db, "--name", "m", "--num-games", "40", opponent="nash")
        status = main(args)
    out = capsys.readouterr().out
    assert status == 0
    with ResultsStore(db) as store:
        run_id = only_run(store)
        games = store.games(run_id, include_incomplete=True)
        assert len(games) == 40 and all(game.scored for game in games)  # nothing dropped
        jacks = 0
        for game in games:
            seat = game.players.index("m")
            if game.history[seat] == JACK:
                jacks += 1
                assert game.status == "forfeit" and game.forfeited_by == seat
                assert game.returns[seat] == -1.0
                (move,) = [m for m in store.moves(game.id) if m.seat == seat]
                assert move.error is not None and move.error.kind == "format"
                assert "reasoning_content is a list" in move.error.detail
            else:
                assert game.status == "complete"
        (mine,) = [s for s in summarize(store) if s.player == "m" and s.seat is None]
        expected = sum(g.returns[g.players.index("m")] for g in games) / 40
    assert jacks > 0
    assert mine.games == 40 and mine.mean_return == pytest.approx(expected)
    assert mine.forfeits == jacks
    assert f"invalid answers (the model's): format {jacks}; forfeits {jacks}" in out


class DealGuesser:
    """An endpoint that knows our code and assumes the default seed 0 of earlier versions.

    It rebuilds the run's tasks and schedule from seed 0, counts the games it starts (at
    concurrency 1 they start one at a time), rebuilds the deal of the game it thinks it is in
    and guesses the opponent's card from it. ``guesses`` holds one guess per decision. It
    knows the first request is eval's preflight probe, not a game, and answers it unguessed.
    """

    def __init__(self, num_games: int) -> None:
        model = Entrant("m", "llm", {}, lambda env_id, seed: RandomPlayer(seed))
        tasks = versus([model], [Entrant.opponent("random")], [KUHN], num_games, seed=0)
        self.order = schedule(tasks, 0)
        self.started = -1
        self.probed = False
        self.guesses: list[int] = []
        self.env = make(KUHN)

    def __call__(self, request: Request) -> Reply:
        if not self.probed:  # the preflight's one request comes before any game
            self.probed = True
            return Reply(payload=request.answer)
        information = request.information
        seat = information["seat"]
        # The model's first decision in a game: seat 0 opens, seat 1 answers one move.
        if len(information["information_state"]) == 1 + seat:
            self.started += 1
        task = self.order[self.started % len(self.order)]
        self.env.reset(seed=task.seed)
        deal = self.env.spiel_state.history()
        self.guesses.append(int(deal[1 - seat]))
        return Reply(payload=request.answer)


def guesses_and_truths(db: Path, guesser: DealGuesser) -> tuple[int, int]:
    """(right guesses, decisions): the stored deals are the truth, in the order played."""
    truths = []
    with ResultsStore(db) as store:
        for game in store.games(only_run(store)):  # stored in the order played (concurrency 1)
            seat = game.players.index("m")
            moves = [m for m in store.moves(game.id) if m.seat == seat]
            truths += [game.history[1 - seat]] * len(moves)
    assert len(truths) == len(guesser.guesses)
    return sum(g == t for g, t in zip(guesser.guesses, truths, strict=True)), len(truths)


def test_an_endpoint_that_knows_the_code_cannot_predict_the_deals(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    num_games = 200
    common = ("--name", "m", "--num-games", str(num_games), "--concurrency", "1", "--no-report")
    # Control: with the seed fixed to 0 the attack works -- every guess is right.
    guesser = DealGuesser(num_games)
    with HostileServer(random_service(), guesser) as server:
        assert (
            main(eval_args(server.base_url, tmp_path / "fixed.sqlite", *common, "--seed", "0")) == 0
        )
    right, decisions = guesses_and_truths(tmp_path / "fixed.sqlite", guesser)
    assert right == decisions >= 200
    # By default the root seed is secret (here a fixed stand-in, so the test is deterministic).
    monkeypatch.setattr("strategic_arena.arena.store.secret_seed", lambda: 0x5EC2E7_5EED_1234)
    guesser = DealGuesser(num_games)
    with HostileServer(random_service(), guesser) as server:
        assert main(eval_args(server.base_url, tmp_path / "secret.sqlite", *common)) == 0
    right, decisions = guesses_and_truths(tmp_path / "secret.sqlite", guesser)
    # Knowing its own card, the opponent holds one of the two others: chance is 1/2 at best.
    # Three standard deviations above it: an honest endpoint exceeds this once in ~700 seeds.
    assert decisions >= 200
    assert right <= decisions / 2 + 3 * math.sqrt(decisions / 4)
    capsys.readouterr()


def test_the_secret_seed_is_stored_never_sent_and_shown_after_the_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "s.sqlite"
    args = eval_args("", db, "--name", "m", "--num-games", "2", "--no-report")
    with HostileServer(random_service()) as server:
        args[2] = server.base_url
        assert main(args) == 0
        first = capsys.readouterr().err
        assert main(args) == 0  # the same command resumes the same run: the stored seed
        again = capsys.readouterr().err
        with ResultsStore(db) as store:
            (run,) = store.runs()
        sent = json.dumps([r.body for r in server.requests]) + json.dumps(
            [r.information for r in server.requests]
        )
    assert run.seed not in (0, None) and f"(seed {run.seed})" in first
    assert "0 games played, 2 resumed" in again and f"(seed {run.seed})" in again
    assert str(run.seed) not in sent
    assert main(["report", "--db", str(db)]) == 0
    assert f"(seed {run.seed})" in capsys.readouterr().out
    # Another store draws another secret.
    with HostileServer(random_service()) as server:
        args[2], args[args.index("--db") + 1] = server.base_url, str(tmp_path / "t.sqlite")
        assert main(args) == 0
    with ResultsStore(tmp_path / "t.sqlite") as store:
        (other,) = store.runs()
    assert other.seed != run.seed


def test_a_trickling_server_is_cut_at_the_deadline(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # One byte every 20 ms: never silent long enough for a per-read timeout, the reply would
    # take seconds. The deadline covers the whole request.
    requests = 0

    def trickle(request: Request) -> Reply:
        nonlocal requests
        requests += 1
        if requests == 1:  # eval's preflight request: answered at once, so games are played
            return Reply(payload=request.answer)
        return Reply(payload=request.answer, trickle_s=0.02)

    db = tmp_path / "t.sqlite"
    with HostileServer(random_service(), trickle) as server:
        status = main(
            eval_args(
                server.base_url,
                db,
                "--model",
                "model",
                "--name",
                "m",
                "--num-games",
                "2",
                "--timeout",
                "3",  # the preflight's two honest replies fit well inside; a trickle takes ~6 s
            )
        )
    # The preflight's model listing has the same deadline: trickled, it is cut.
    listing = Reply(payload=random_service().models(), trickle_s=0.02)
    with HostileServer(random_service(), models=listing) as slow:
        other = tmp_path / "other.sqlite"
        assert main(eval_args(slow.base_url, other, "--num-games", "2", "--timeout", "0.5")) == 2
    out, err = capsys.readouterr()
    assert status == 1
    assert "within 0.5 s (--timeout)" in err
    with ResultsStore(db) as store:
        games = store.games(only_run(store), include_incomplete=True)
    assert len(games) == 2 and not any(game.scored for game in games)
    assert all(g.infrastructure_error == "timeout: timeout: no reply within 3 s" for g in games)
    assert "2 failed requests (2 cut at the --timeout deadline); 2 games stopped" in out
    assert "2 still unscored and left out of every score: 2 given up (--max-replays" in out


def test_no_redirect_carries_the_key_to_another_origin(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    key = "sk-redirected-secret-0123456789"
    monkeypatch.setenv("OPENAI_API_KEY", key)
    db = tmp_path / "r.sqlite"
    with HostileServer(random_service()) as elsewhere:
        chats = 0

        def redirect(request: Request) -> Reply:
            nonlocal chats
            chats += 1
            if chats == 1:  # the preflight's request goes through, so the games are played
                return Reply(payload=request.answer)
            return Reply(302, {}, headers={"Location": f"{elsewhere.base_url}/chat/completions"})

        moved = Reply(302, {}, headers={"Location": f"{elsewhere.base_url}/models"})
        with HostileServer(random_service(), models=moved) as server:  # the listing redirects
            probe = main(eval_args(server.base_url, tmp_path / "p.sqlite", "--num-games", "2"))
            assert set(server.authorizations) == {f"Bearer {key}"}  # the origin it was for
        with HostileServer(random_service(), redirect) as server:  # the games' requests do
            status = main(eval_args(server.base_url, db, "--model", "model", "--num-games", "2"))
            assert set(server.authorizations) == {f"Bearer {key}"}
        assert elsewhere.authorizations == []  # never reached, with or without the key
    out, err = capsys.readouterr()
    # A redirect is a refusal of the request: the run stops, the games stay on the record.
    assert (probe, status) == (2, 2)
    with ResultsStore(db) as store:
        games = store.games(only_run(store), include_incomplete=True)
    assert games and all(g.infrastructure_error.startswith("refused: 302") for g in games)
    assert_nowhere(key, out + err, tmp_path)


def test_bad_usage_finish_reason_and_lone_surrogates_are_coerced(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    def hostile_fields(request: Request) -> Reply:
        answer = copy.deepcopy(request.answer)
        answer["usage"] = {"prompt_tokens": 10**30, "completion_tokens": -5}
        answer["choices"][0]["finish_reason"] = ["stop"]
        message(answer)["reasoning_content"] = "half a pair \ud800 here"
        return Reply(payload=answer)  # json.dumps writes the lone surrogate as \ud800

    db = tmp_path / "f.sqlite"
    with HostileServer(random_service(), hostile_fields) as server:
        status = main(eval_args(server.base_url, db, "--name", "m", "--num-games", "6"))
    out = capsys.readouterr().out
    assert status == 0
    with ResultsStore(db) as store:
        games = store.games(only_run(store), include_incomplete=True)
        assert len(games) == 6 and all(game.status == "complete" for game in games)
        moves = [m for g in games for m in store.moves(g.id) if m.seat == g.players.index("m")]
        (mine,) = [s for s in summarize(store) if s.player == "m" and s.seat is None]
    assert moves and all(m.reasoning == "half a pair \ufffd here" for m in moves)
    assert all(
        (m.prompt_tokens, m.completion_tokens, m.finish_reason) == (0, 0, None) for m in moves
    )
    assert mine.games == 6 and mine.invalid_answers == 0 and mine.forfeits == 0
    assert "m " in out and "invalid answers" not in out


def test_terminal_escapes_from_an_endpoint_are_printed_as_escapes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    evil = "evil\x1b]0;pwned\x07\nmodel\x00"
    requests = 0

    def escapes(request: Request) -> Reply:
        nonlocal requests
        requests += 1
        if requests == 2:  # after the preflight's: an error body that would clear the screen
            return Reply(500, {"error": {"message": "\x1b[2J\x1b[Hgone"}})
        return tampered(request, reasoning_content="\x1b[2J\x1b]0;title\x07\x00\u202eevil")

    db = tmp_path / "e.sqlite"
    with HostileServer(random_service(evil), escapes) as server:
        args = eval_args(server.base_url, db, "--num-games", "2", "--concurrency", "1")
        args.remove("--quiet")  # the progress line names the run, and so the model
        assert main(args) == 1
        with ResultsStore(db) as store:
            games = store.games(only_run(store), include_incomplete=True)
        assert evil in games[0].players  # stored exactly as received
        scored = next(g for g in games if g.scored)
        assert main(["replay", str(scored.id), "--db", str(db), "--prompts"]) == 0
        assert main(["report", "--db", str(db)]) == 0
    out, err = capsys.readouterr()
    printed = out + err
    for raw in ("\x1b", "\x07", "\x00", "\u202e", "evil\x1b]0;pwned\x07\nmodel"):
        assert raw not in printed
    assert "evil\\x1b]0;pwned\\x07\\nmodel\\x00" in printed  # the name, on one line
    assert "\\nmodel\\x00-" in err and "1/2 games" in err  # the progress line, escaped too
    assert "\\x1b[2J\\x1b]0;title\\x07\\x00\\u202eevil" in out  # the replayed reasoning
    assert "500: \\x1b[2J\\x1b[Hgone" in out  # the failure, in the report


def test_a_reply_that_echoes_the_key_is_stored_with_the_key_masked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    key = "sk-echoed-secret-0123456789"
    monkeypatch.setenv("OPENAI_API_KEY", key)

    def echo(request: Request) -> Reply:
        return tampered(request, reasoning_content=f"you sent {request.authorization}")

    db = tmp_path / "k.sqlite"
    query_key = "query-secret-0123456789"
    with HostileServer(random_service(), echo) as server:
        url = f"{server.base_url}?api-key={query_key}"
        assert main(eval_args(url, db, "--model", "model", "--num-games", "2")) == 0
        assert main(["report", "--db", str(db), "--json"]) == 0
    out, err = capsys.readouterr()
    with ResultsStore(db) as store:
        games = store.games(only_run(store))
        moves = [m for g in games for m in store.moves(g.id) if g.players[m.seat] == "model"]
        (player,) = [p for p in store.players().values() if p.kind == "llm"]
    assert moves and all(m.reasoning == "you sent Bearer ***" for m in moves)
    assert player.params["base_url"].endswith("/v1?api-key=***")
    for secret in (key, query_key):
        assert_nowhere(secret, out + err, tmp_path)


def test_oversized_replies_are_stored_cut_and_once(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    def huge(request: Request) -> Reply:
        return tampered(request, reasoning_content="x" * 2_000_000)

    db = tmp_path / "o.sqlite"
    with HostileServer(random_service(), huge) as server:
        args = eval_args(server.base_url, db, "--name", "m", "--num-games", "2")
        assert main([*args, "--max-response-chars", "1000", "--no-report"]) == 0
    capsys.readouterr()
    with ResultsStore(db) as store:
        games = store.games(only_run(store))
        moves = [m for g in games for m in store.moves(g.id) if g.players[m.seat] == "m"]
    assert len(games) == 2 and moves
    cut = "x" * 1000 + "... [cut: 2000000 characters in all]"
    assert all(m.reasoning == cut and m.tries[-1].reasoning == cut for m in moves)
    # Stored once: the final answer's texts are not repeated in the tries column.
    tries = sqlite3.connect(db).execute("SELECT tries FROM moves").fetchall()
    assert all("xxxx" not in row[0] for row in tries)
    assert sum(path.stat().st_size for path in tmp_path.iterdir()) < 1_000_000


def test_a_rival_endpoint_gets_no_key_unless_one_is_named_for_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # The attack: before, --opponent-api-key-env defaulted to --api-key-env, so the rival's
    # origin received "Bearer <the candidate's key>". Now each endpoint gets its own key only.
    ours, theirs = "sk-candidate-secret-0123456789", "sk-rival-secret-0123456789"
    monkeypatch.setenv("OPENAI_API_KEY", ours)
    monkeypatch.setenv("RIVAL_KEY", theirs)
    for extra, expected in (((), ""), (("--opponent-api-key-env", "RIVAL_KEY"), theirs)):
        db = tmp_path / f"{len(extra)}.sqlite"
        with (
            HostileServer(random_service()) as candidate,
            HostileServer(random_service("rival")) as rival,
        ):
            args = eval_args(candidate.base_url, db, "--num-games", "2", "--no-report")
            args[args.index("--opponents") + 1] = f"model:rival@{rival.base_url}"
            assert main([*args, *extra]) == 0
            assert set(candidate.authorizations) == {f"Bearer {ours}"}
            assert set(rival.authorizations) == {f"Bearer {expected}" if expected else ""}
            assert len(rival.requests) > 1  # the preflight and the games
        err = capsys.readouterr().err
        # The preflight of each endpoint says which key it is sent, by the variable's name.
        assert f"Endpoint {candidate.base_url}: sent the API key in $OPENAI_API_KEY" in err
        sent = "the API key in $RIVAL_KEY" if expected else "no API key (none named"
        assert f"Endpoint {rival.base_url}: sent {sent}" in err
        assert_nowhere(ours, err, tmp_path)


def test_no_message_shows_a_secret_of_the_base_url(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # Before, the preflight printed the base URL in clear: unreachable, refused credentials,
    # the /v1 hint; and a URL with user:key@ always failed it, so it always printed the key.
    user_key, query_key = "userinfo-secret-0123456789", "query-secret-0123456789"

    def secret_url(base_url: str) -> str:
        parts = base_url.split("//", 1)
        return f"{parts[0]}//user:{user_key}@{parts[1]}?api-key={query_key}"

    def refuse(request: Request) -> Reply:
        return Reply(401, {"error": {"message": "bad key"}})

    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    statuses = []
    with HostileServer(random_service()) as server:  # a run, with the URL's credentials
        args = eval_args(secret_url(server.base_url), tmp_path / "a.sqlite", "--num-games", "2")
        statuses.append(main(args))
        # The URL's user:password is sent to its own origin, as HTTP Basic credentials.
        assert server.authorizations and all(a.startswith("Basic ") for a in server.authorizations)
    with PlayerServer("random", model="model") as served:  # a 404, and the /v1 hint
        no_v1 = secret_url(served.base_url.removesuffix("/v1"))
        statuses.append(main(eval_args(no_v1, tmp_path / "b.sqlite")))
    dead = HostileServer(random_service())
    dead.close()  # nothing listens there now
    statuses.append(main(eval_args(secret_url(dead.base_url), tmp_path / "c.sqlite")))
    with HostileServer(random_service(), refuse) as locked:  # the credentials are refused
        statuses.append(main(eval_args(secret_url(locked.base_url), tmp_path / "d.sqlite")))
    out, err = capsys.readouterr()
    assert statuses == [0, 2, 2, 2]
    assert "lacks /v1" in err and "nothing answers at" in err and "refused the credentials" in err
    assert "/v1?api-key=***" in err  # the hint, masked
    for secret in (user_key, query_key):
        assert_nowhere(secret, out + err, tmp_path)


def test_a_selective_refusers_run_completes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # The attack: refuse (HTTP 400) whenever holding the Jack. Before, each refusal stopped
    # the run, so every rerun stopped early and the run never finished. Now the refused games
    # are replayed --max-replays times, then final; the run completes, the player unranked.
    pytest.importorskip("trueskill")
    from strategic_arena.leaderboard import build

    def refuse_the_jack(request: Request) -> Reply:
        if request.information["information_state"].startswith(str(JACK)):
            return Reply(400, {"error": {"message": "I would rather not"}})
        return Reply(payload=request.answer)

    db = tmp_path / "refuser.sqlite"
    args = eval_args("", db, "--name", "m", "--num-games", "12", "--seed", "5", "--no-report")
    args[args.index("--max-replays") + 1] = "1"
    statuses = []
    with HostileServer(nash_service(), refuse_the_jack) as server:
        args[2] = server.base_url
        for _ in range(3):
            statuses.append(main(args))
            capsys.readouterr()
        assert main(["report", "--db", str(db)]) == 0
    out = capsys.readouterr().out
    # Calls 1 and 2 meet refusals (the second replays them once); the third has nothing left.
    assert statuses == [2, 2, 1]
    with ResultsStore(db) as store:
        run_id = only_run(store)
        scored = store.games(run_id)
        tries = store.incomplete_counts(run_id)
        data = build(store)
    refused = {key for key, count in tries.items() if count == 2}  # both tries refused
    assert refused and len(scored) + len(refused) == 12  # every game final: scored or given up
    assert f"stopped by them (refused {2 * len(refused)})" in out
    assert f"{len(refused)} given up (--max-replays reached)" in out
    (coverage,) = [row for row in data["coverage"] if row["player"] == "m"]
    assert coverage["left_out_games"] == len(refused) and coverage["ranked"] is False
