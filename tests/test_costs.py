"""What the answers cost: the report's tokens, time and money against the stored moves.

An eval over real HTTP against a server that fails one request (so one game is incomplete and
still paid for), then the report's costs checked against sums taken straight from the SQLite
tables, and the money against the price formula; price tables through the door.
"""

from __future__ import annotations

import json
import os
import sqlite3
from collections import defaultdict
from pathlib import Path

import pytest

pytest.importorskip("openai", reason="the [arena] extra (openai) is not installed")

from strategic_arena.arena.costs import Price, parse_price, read_prices
from strategic_arena.cli import main
from strategic_arena.door import Refused
from tests.servers import FaultServer


def sums_from_tables(db: Path) -> dict[str, dict[str, float]]:
    """Per player: games, decisions and tokens, summed by SQL over every stored game."""
    con = sqlite3.connect(db)
    try:
        rows = con.execute(
            "SELECT g.id, g.players, m.seat, m.prompt_tokens, m.completion_tokens, m.latency_s "
            "FROM moves m JOIN games g ON g.id = m.game_id"
        ).fetchall()
    finally:
        con.close()
    sums: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    games: dict[str, set[int]] = defaultdict(set)
    for game_id, players, seat, prompt, completion, latency in rows:
        name = json.loads(players)[seat]
        games[name].add(game_id)
        sums[name]["decisions"] += 1
        sums[name]["prompt_tokens"] += prompt
        sums[name]["completion_tokens"] += completion
        sums[name]["model_time_s"] += latency
    for name, ids in games.items():
        sums[name]["games"] = len(ids)
    return sums


def test_costs_are_the_stored_usage_at_the_given_prices(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "costs.sqlite"
    prices = tmp_path / "prices.json"
    prices.write_text(json.dumps({"flaky": {"prompt": 2.5, "completion": 10}}))
    # The preflight's request, then a failure with no retry: one game stays incomplete.
    server = FaultServer(["ok"] * 10 + ["500"])
    try:
        args = ["eval", "--db", str(db), "--quiet", "--base-url", server.base_url, "--name"]
        args += ["flaky", "--envs", "tic_tac_toe-v0", "--opponents", "random", "--num-games"]
        args += ["6", "--max-attempts", "1", "--concurrency", "1", "--seed", "3", "--no-report"]
        assert main(args) == 1  # the incomplete game
        capsys.readouterr()
    finally:
        server.close()
    assert main(["report", "--db", str(db), "--prices", str(prices), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    expected = sums_from_tables(db)["flaky"]
    (player,) = data["costs"]["players"]  # the bot reports no tokens: not listed
    assert player["player"] == "flaky"
    for key in ("games", "decisions", "prompt_tokens", "completion_tokens"):
        assert player[key] == expected[key], key
    assert player["model_time_s"] == pytest.approx(expected["model_time_s"])
    assert player["games"] == 6  # five scored games and the incomplete one, paid for too
    assert player["prompt_tokens"] > 0 and player["completion_tokens"] > 0
    money = (2.5 * expected["prompt_tokens"] + 10 * expected["completion_tokens"]) / 1e6
    assert player["money"] == pytest.approx(money)
    assert player["tokens_per_decision"] == pytest.approx(
        (expected["prompt_tokens"] + expected["completion_tokens"]) / expected["decisions"]
    )
    (run,) = data["costs"]["runs"]
    con = sqlite3.connect(db)
    try:
        rows = con.execute("SELECT finished, duration_s, status FROM games").fetchall()
    finally:
        con.close()
    assert sorted(status for _, _, status in rows).count("incomplete") == 1
    span = max(f for f, _, _ in rows) - min(f - d for f, d, _ in rows)
    assert run["games"] == 6 and run["wall_time_s"] == pytest.approx(span)
    assert run["money"] == pytest.approx(money) and run["unpriced_players"] == []
    # Per matchup (one here): the same sums.
    (matchup,) = data["costs"]["matchups"]
    assert (matchup["env_id"], matchup["opponent"]) == ("tic_tac_toe-v0", "random")
    assert matchup["prompt_tokens"] == player["prompt_tokens"]
    # A --price overrides the file; the text report shows the cost table.
    assert main(["report", "--db", str(db), "--prices", str(prices), "--price", "flaky=0,0"]) == 0
    text = capsys.readouterr().out
    assert "== Cost" in text and "money 0.0000" in text
    # Without prices there is no money.
    assert main(["report", "--db", str(db), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["costs"]["players"][0]["money"] is None


def test_price_tables_come_through_the_door(tmp_path: Path) -> None:
    table = tmp_path / "prices.json"
    table.write_text('{"a": {"prompt": 1, "completion": 2}, "b": {"prompt": 0, "completion": 0}}')
    assert read_prices(table) == {"a": Price(1, 2), "b": Price(0, 0)}
    assert Price(1.5, 6).of(1_000_000, 500_000) == pytest.approx(4.5)
    for text, message in (
        ("[1, 2]", "must be a JSON object"),
        ('{"a": {"prompt": 1}}', "must be"),
        ('{"a": {"prompt": "x", "completion": 1}}', "not two numbers"),
        ('{"a": {"prompt": -1, "completion": 1}}', "at least 0"),
        ('{"a": {"prompt": NaN, "completion": 1}}', "NaN is not a number"),
        ("not json", "not JSON"),
    ):
        table.write_text(text)
        with pytest.raises(ValueError, match=message):
            read_prices(table)
    link = tmp_path / "link.json"
    os.symlink(table, link)
    with pytest.raises(Refused):
        read_prices(link)
    assert parse_price("org/model=0.15,0.6") == ("org/model", Price(0.15, 0.6))
    assert parse_price("a=b=1,2") == ("a=b", Price(1, 2))
    for text in ("model", "model=1", "=1,2", "model=x,1"):
        with pytest.raises(ValueError, match="--price"):
            parse_price(text)


def test_the_published_page_shows_each_players_cost(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """leaderboard.json's players carry the same sums (valid against the schema), the page
    its cost columns, and the money is the price formula's."""
    db = tmp_path / "page.sqlite"
    server = FaultServer()
    try:
        args = ["eval", "--db", str(db), "--quiet", "--base-url", server.base_url, "--name"]
        args += ["paid", "--envs", "tic_tac_toe-v0", "--opponents", "random", "--num-games"]
        args += ["4", "--concurrency", "1", "--seed", "5", "--no-report"]
        assert main(args) == 0
    finally:
        server.close()
    out = tmp_path / "site"
    assert main(["publish", "--db", str(db), "--out", str(out), "--price", "paid=1,4"]) == 0
    capsys.readouterr()
    data = json.loads((out / "leaderboard.json").read_text(encoding="utf-8"))
    expected = sums_from_tables(db)["paid"]
    cost = data["players"]["paid"]["cost"]
    for key in ("games", "decisions", "prompt_tokens", "completion_tokens"):
        assert cost[key] == expected[key], key
    money = (expected["prompt_tokens"] + 4 * expected["completion_tokens"]) / 1e6
    assert cost["money"] == pytest.approx(money)
    assert data["players"]["random"]["cost"] is None  # a bot reports no tokens
    page = (out / "index.html").read_text(encoding="utf-8")
    assert "tokens / decision" in page and f"{int(expected['prompt_tokens']):,}" in page
    jsonschema = pytest.importorskip("jsonschema")
    schema = json.loads((out / "leaderboard.schema.json").read_text(encoding="utf-8"))
    jsonschema.validate(data, schema)
