"""Scheduling rules of the runner and the metrics' definitions, on hand-checked numbers."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from strategic_arena.arena.match import MatchRecord
from strategic_arena.arena.metrics import infrastructure, render_text, report, summarize
from strategic_arena.arena.runner import Entrant, round_robin, run, versus
from strategic_arena.arena.store import ResultsStore
from strategic_arena.players import RandomPlayer
from strategic_arena.turn import Decision, GameState


def bot(name: str, envs: tuple[str, ...] | None = None) -> Entrant:
    return Entrant(name, "random", {}, lambda env_id, seed: RandomPlayer(seed, name=name), envs)


def test_versus_plays_both_seats_on_paired_deals() -> None:
    model, weak, strong = bot("model"), bot("weak"), bot("strong", ("kuhn_poker-v0",))
    tasks = versus([model], [weak, strong], ["kuhn_poker-v0", "tic_tac_toe-v0"], 5, seed=9)
    seatings = Counter((t.env_id, tuple(e.name for e in t.seats)) for t in tasks)
    # 5 games split over 2 seatings: rounded up to 3 per seating; 'strong' plays Kuhn only.
    assert seatings == {
        ("kuhn_poker-v0", ("model", "weak")): 3,
        ("kuhn_poker-v0", ("weak", "model")): 3,
        ("kuhn_poker-v0", ("model", "strong")): 3,
        ("kuhn_poker-v0", ("strong", "model")): 3,
        ("tic_tac_toe-v0", ("model", "weak")): 3,
        ("tic_tac_toe-v0", ("weak", "model")): 3,
    }
    # Game i of an env has one deal whatever the seating or opponent.
    seeds = {(t.env_id, t.index): set() for t in tasks}
    for task in tasks:
        seeds[(task.env_id, task.index)].add(task.seed)
    assert all(len(found) == 1 for found in seeds.values())
    assert len({t.seed for t in tasks if t.env_id == "kuhn_poker-v0"}) == 3
    assert len({t.key for t in tasks}) == len(tasks)


def test_cooperative_games_add_self_play_and_rules_are_checked() -> None:
    model, partner = bot("model"), bot("partner")
    tasks = versus([model], [partner], ["mini_hanabi-v0"], 4, seed=0)
    seatings = Counter(tuple(e.name for e in t.seats) for t in tasks)
    assert seatings == {("model", "model"): 4, ("model", "partner"): 2, ("partner", "model"): 2}
    with pytest.raises(ValueError, match="no chosen opponent plays kuhn_poker-v0"):
        versus([model], [bot("c4", ("connect_four-v0",))], ["kuhn_poker-v0"], 2, seed=0)
    with pytest.raises(ValueError, match="two different players are named 'model'"):
        versus([model], [bot("model", ("kuhn_poker-v0",))], ["kuhn_poker-v0"], 2, seed=0)
    with pytest.raises(ValueError, match="num_games"):
        versus([model], [partner], ["kuhn_poker-v0"], 0, seed=0)


def test_round_robin_pairs_everyone_who_can_play() -> None:
    a, b, c = bot("a"), bot("b"), bot("c", ("tic_tac_toe-v0",))
    tasks = round_robin([a, b, c], ["tic_tac_toe-v0", "kuhn_poker-v0"], 2, seed=0)
    pairs = Counter((t.env_id, frozenset(e.name for e in t.seats)) for t in tasks)
    assert pairs == {
        ("tic_tac_toe-v0", frozenset("ab")): 2,
        ("tic_tac_toe-v0", frozenset("ac")): 2,
        ("tic_tac_toe-v0", frozenset("bc")): 2,
        ("kuhn_poker-v0", frozenset("ab")): 2,
    }


def test_a_failing_player_is_reported_and_retried_on_rerun(tmp_path: Path) -> None:
    calls = Counter[str]()

    def flaky(env_id: str, seed: int) -> RandomPlayer:
        calls["built"] += 1
        if calls["built"] == 3:
            raise RuntimeError("cannot start")
        return RandomPlayer(seed, name="flaky")

    tasks = versus([Entrant("flaky", "x", {}, flaky)], [bot("r")], ["kuhn_poker-v0"], 4, seed=1)
    with ResultsStore(tmp_path / "r.sqlite") as store:
        first = run(store, "r", tasks, seed=1, concurrency=2, progress=False)
        assert first.failed and first.failed[0][1] == "RuntimeError: cannot start"
        assert first.played == 3 and not first.complete
        second = run(store, "r", tasks, seed=1, concurrency=2, progress=False)
        assert second.resumed == 3 and second.played == 1 and second.complete
        with pytest.raises(ValueError, match="seed"):
            run(store, "r", tasks, seed=2, progress=False)


class RaisesOnSecondMove(RandomPlayer):
    """A player (ours or an endpoint's) that raises in the middle of a game."""

    async def act(self, state: GameState, seat: int) -> Decision:
        if state.spiel_state.move_number() >= 2:
            raise ValueError("boom\x1b[2J")
        return await super().act(state, seat)


def test_a_player_that_raises_mid_game_is_stored_and_counted(tmp_path: Path) -> None:
    def build(env_id: str, seed: int) -> RandomPlayer:
        return RaisesOnSecondMove(seed, name="raiser")

    raiser = Entrant("raiser", "x", {}, build)
    tasks = versus([raiser], [bot("r")], ["tic_tac_toe-v0"], 2, seed=3)
    with ResultsStore(tmp_path / "r.sqlite") as store:
        settings = {"max_replays": 0}  # as eval stores it: the report says what eval will do
        summary = run(store, "r", tasks, seed=3, progress=False, max_replays=0, settings=settings)
        assert (summary.played, summary.incomplete, summary.given_up) == (0, 2, 2)
        games = store.games(store.run_id("r"), include_incomplete=True)
        assert len(games) == 2 and not any(game.scored for game in games)
        for game in games:
            moves = store.moves(game.id)
            assert len(moves) >= 2 and moves[-1].action is None  # the moves before are kept
            assert game.players[moves[-1].seat] == "raiser"
            assert game.infrastructure_error == (
                "endpoint: the player raised ValueError: boom\\x1b[2J"
            )
        (apart,) = infrastructure(store)
        assert (apart.player, apart.incomplete_games, apart.given_up) == ("raiser", 2, 2)


def record(env_id: str, players: tuple[str, str], returns: tuple[float, float]) -> MatchRecord:
    return MatchRecord(env_id, 0, players, (), returns, "complete")


def test_metrics_on_hand_checked_games(tmp_path: Path) -> None:
    with ResultsStore(tmp_path / "m.sqlite") as store:
        run_id = store.run("hand", 0, {"candidates": ["m"]})
        games = [
            record("tic_tac_toe-v0", ("m", "o"), (1, -1)),
            record("tic_tac_toe-v0", ("o", "m"), (1, -1)),
            record("tic_tac_toe-v0", ("m", "o"), (0, 0)),
            record("tic_tac_toe-v0", ("o", "m"), (-1, 1)),
            record("mini_hanabi-v0", ("m", "m"), (3, 3)),
            record("mini_hanabi-v0", ("m", "m"), (1, 1)),
        ]
        for i, game in enumerate(games):
            store.add_game(run_id, str(i), game)
        rows = {(s.player, s.env_id, s.opponent, s.seat): s for s in summarize(store)}
        data = report(store)
    ttt = rows[("m", "tic_tac_toe-v0", "o", None)]
    # m's returns: 1, -1, 0, 1 -> mean 0.25; s = 0.9574; t(0.975, 3) = 3.1824;
    # half-width = 3.1824 * 0.9574 / 2 = 1.5234. Normalized: (0.25 + 1) / 2 = 62.5 %.
    assert ttt.games == 4 and ttt.mean_return == pytest.approx(0.25)
    assert ttt.ci95 == pytest.approx(1.5234, abs=1e-4)
    assert (ttt.wins, ttt.draws, ttt.losses) == (2, 1, 1)
    assert ttt.normalized == pytest.approx(62.5)
    assert rows[("m", "tic_tac_toe-v0", "o", 0)].mean_return == pytest.approx(0.5)
    assert rows[("m", "tic_tac_toe-v0", "o", 1)].mean_return == pytest.approx(0.0)
    assert rows[("o", "tic_tac_toe-v0", "m", None)].mean_return == pytest.approx(-0.25)
    # Self-play counts each game once; Mini Hanabi normalizes by its reachable 4.
    hanabi = rows[("m", "mini_hanabi-v0", "self", None)]
    assert hanabi.games == 2 and hanabi.mean_return == pytest.approx(2.0)
    assert hanabi.wins is None and hanabi.normalized == pytest.approx(50.0)
    assert rows[("m", "mini_hanabi-v0", "self", 1)].games == 2
    text = render_text(data)
    assert "(self-play)" in text and "2/1/1" in text
    # Only the run's candidate gets rows, unless every player is asked for.
    assert not any(line.startswith("o ") for line in text.splitlines())
    assert any(line.startswith("o ") for line in render_text(data, all_players=True).splitlines())
    assert data["normalization"]["mini_hanabi-v0"] == {
        "forfeit": 0.0,
        "optimum": 4.0,
        "worst": 0.0,
    }


def test_a_run_named_twice_is_counted_once(tmp_path: Path) -> None:
    with ResultsStore(tmp_path / "m.sqlite") as store:
        run_id = store.run("hand", 0, {"candidates": ["m"]})
        store.add_game(run_id, "0", record("tic_tac_toe-v0", ("m", "o"), (1, -1)))
        store.add_game(run_id, "1", record("tic_tac_toe-v0", ("o", "m"), (0, 0)))
        once = {(s.player, s.opponent, s.seat): s for s in summarize(store, ["hand"])}
        twice = {(s.player, s.opponent, s.seat): s for s in summarize(store, ["hand", "hand"])}
    assert once[("m", "o", None)].games == twice[("m", "o", None)].games == 2
    assert twice[("m", "o", None)].ci95 == once[("m", "o", None)].ci95


def test_random_plays_openspiel_games_like_opponents_make_allows() -> None:
    random = Entrant.opponent("random")
    assert random.plays("openspiel/breakthrough") and random.plays("kuhn_poker-v0")
    assert not Entrant.opponent("nash").plays("openspiel/kuhn_poker")
    tasks = versus([bot("m")], [random], ["openspiel/tic_tac_toe"], 2, seed=0)
    assert len(tasks) == 2


def test_progress_line_counts_games_errors_and_eta() -> None:
    import io

    from strategic_arena.arena.runner import Progress

    now = [100.0]  # a clock the test moves: the rate is from the first finished game on
    stream = io.StringIO()
    bar = Progress(10, 2, label="run", stream=stream, interval_s=0.0, clock=lambda: now[0])
    assert bar.line().endswith("| rate pending")  # nothing finished: no rate, no ETA
    now[0] = 130.0  # the first game took 30 s (start-up included): still no rate
    bar.update()
    assert bar.line().endswith("| rate pending") and "ETA" not in bar.line()
    now[0] = 134.0  # the second one 4 s later: 0.25 games/s, 6 games left
    bar.update(error=True)
    bar.update(failed=True)
    line = bar.line()
    assert line.startswith("run [########------------]  40% 4/10 games (2 resumed)")
    assert "| 1 with invalid answers" in line and "failed 1" in line
    assert line.endswith("| 0.25 games/s | ETA 20s"), line  # 5 left (one failed) / 0.25
    bar.update(final=True)
    assert stream.getvalue().count("\n") == 4  # not a terminal: one line per update


def test_progress_never_passes_the_total_when_workers_share_a_run() -> None:
    """Another worker stores games after this one counted its resumed ones: 100% at most."""
    import io

    from strategic_arena.arena.runner import Progress

    now = [0.0]
    bar = Progress(80, 40, stream=io.StringIO(), interval_s=0.0, clock=lambda: now[0])
    for step in range(41):  # one game more than this worker's share
        now[0] = float(step)
        bar.update()
    line = bar.line()
    assert "80/80 games" in line and "100%" in line and "101%" not in line
    assert "ETA 0s" in line and "-0s" not in line
