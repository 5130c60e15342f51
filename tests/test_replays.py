"""The published page's replay viewer: a bounded, deterministic sample of games; each step's
board is the env's own rendering after that many moves; model text is inert; and in headless
Chromium, a Connect Four and a Kuhn Poker game stepped forward and back from the leaderboard's
links, with a screenshot of the board checked against what the page states."""

from __future__ import annotations

import io
import itertools
import json
import re
import unicodedata
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("trueskill")
pytest.importorskip("numba")  # the solver and Nash opponents

from strategic_arena.arena.records import StoredGame
from strategic_arena.arena.runner import Entrant, round_robin, run
from strategic_arena.arena.store import ResultsStore
from strategic_arena.cli import main
from strategic_arena.door.printable import printable
from strategic_arena.env import TextGameEnv, make
from strategic_arena.grading.tables import GradeTables
from strategic_arena.leaderboard import publish
from strategic_arena.leaderboard.replays import (
    TEXT_LIMIT,
    build_replays,
    grade_text,
    sample,
)
from strategic_arena.turn import Decision, GameState, Player
from tests.browser import headless_chromium

C4, KUHN = "connect_four-v0", "kuhn_poker-v0"
SOLVER = "solver:max_nodes=20000,fallback_simulations=20"
HOSTILE = "hostile-model"
#: Markup that would run, terminal controls, and more characters than the page keeps.
HOSTILE_RESPONSE = (
    "<script>window.__xss = 1</script><img src=x onerror=alert(1)>\x1b[2J\x1b]0;pwned\x07"
    + "x" * (TEXT_LIMIT + 200)
)
HOSTILE_REASONING = "</script><!-- <b>think</b> \u202eevil"
GAMES_PER_PAIR = 4  # in the store; the page keeps 2


class HostilePlayer:
    """Plays the first legal move, with a hostile answer and reasoning around it."""

    name = HOSTILE

    async def act(self, state: GameState, seat: int) -> Decision:
        action = state.legal_actions(seat)[0]
        return Decision(
            action=action, text=HOSTILE_RESPONSE, reasoning=HOSTILE_REASONING, attempts=1
        )


def hostile_entrant() -> Entrant:
    def build_player(env_id: str, seed: int) -> Player:
        return HostilePlayer()

    return Entrant(HOSTILE, "llm", {"model": "m"}, build_player, (C4, KUHN))


@pytest.fixture(scope="module")
def store_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Connect Four (solver, random, the model) and Kuhn Poker (Nash, random, the model)."""
    path = tmp_path_factory.mktemp("replays") / "arena.db"
    entrants = [*(Entrant.opponent(s) for s in (SOLVER, "nash", "random")), hostile_entrant()]
    with ResultsStore(path) as store:
        tasks = round_robin(entrants, [C4, KUHN], GAMES_PER_PAIR, seed=11)
        assert run(store, "replays", tasks, seed=11, concurrency=1, progress=False).complete
    argv = ["grade", "--db", str(path), "--max-nodes", "20000", "--no-strategies", "--quiet"]
    assert main(argv) == 0
    return path


@pytest.fixture(scope="module")
def published(store_path: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("site")
    publish(store_path, out)
    return out


def load_replays(folder: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((folder / "replays.json").read_text())
    return data


def stored_game(store: ResultsStore, replay: dict[str, Any]) -> StoredGame:
    (game,) = [game for game in store.games() if game.game_key == replay["game_key"]]
    return game


def expected_board(env: TextGameEnv) -> list[str]:
    """The env's own rendering: the grid rows of Connect Four, every seat's view otherwise."""
    if env.spec.openspiel_name == "connect_four":
        return str(env.render()).splitlines()
    return [env.spec.observation_text(env.spiel_state, seat) for seat in range(2)]


def boards_after_each_move(store: ResultsStore, game: StoredGame) -> list[list[str]]:
    """The board after 0, 1, 2, ... of the stored moves, replayed here with a fresh env."""
    env = make(game.env_id, render_mode="ansi")
    env.reset(seed=game.seed)
    boards = [expected_board(env)]
    for move in store.moves(game.id):
        agent = env.possible_agents[move.seat]
        assert move.action is not None  # nobody forfeits here
        env.play(env.judge(agent, Decision(move.action, move_text=move.action_text)))
        boards.append(expected_board(env))
    return boards


def page_board(step: dict[str, Any]) -> list[str]:
    board = step["board"]
    return list(board["grid"]) if "grid" in board else [view["text"] for view in board["views"]]


# ------------------------------------------------------------------------------------------
# the data


def test_at_most_two_games_per_pair_both_seatings_deterministic(
    store_path: Path, published: Path
) -> None:
    replays = load_replays(published)
    assert replays["games_per_pair"] == 2 and replays["text_limit"] == TEXT_LIMIT
    assert replays["skipped"] == []
    pairs = Counter((g["env_id"], tuple(sorted(g["players"]))) for g in replays["games"])
    assert set(pairs.values()) == {2} and len(pairs) == 6  # 3 pairs in each of 2 games
    for (env_id, pair), _ in pairs.items():
        seatings = {
            tuple(g["players"])
            for g in replays["games"]
            if g["env_id"] == env_id and tuple(sorted(g["players"])) == pair
        }
        assert len(seatings) == 2  # each player in each seat
    assert [g["env_id"] for g in replays["games"]] == [C4] * 6 + [KUHN] * 6
    with ResultsStore.for_reading(store_path) as store:
        games = store.games()
        names = {run.id: run.name for run in store.runs()}
        assert len(games) == 6 * GAMES_PER_PAIR
        assert len(sample(games, names, 1)) == 6 and sample(games, names, 0) == []
        assert sample(games, names, 9) == sample(list(reversed(games)), names, 9)  # any order
        assert len(sample(games, names, 9)) == len(games)
        with pytest.raises(ValueError, match="at least 0"):
            sample(games, names, -1)
        assert build_replays(store, per_pair=2) == replays  # the file is the data, as built


def test_each_step_shows_the_env_after_that_many_moves(store_path: Path, published: Path) -> None:
    replays = load_replays(published)
    with ResultsStore.for_reading(store_path) as store:
        for replay in replays["games"]:
            game = stored_game(store, replay)
            boards = boards_after_each_move(store, game)
            assert [page_board(step) for step in replay["steps"]] == boards, game.game_key
            moves = store.moves(game.id)
            assert replay["steps"][0]["move"] is None
            assert [s["move"]["text"] for s in replay["steps"][1:]] == [
                m.action_text for m in moves
            ]
            assert [s["move"]["seat"] for s in replay["steps"][1:]] == [m.seat for m in moves]


def test_grades_are_the_stored_ones(store_path: Path, published: Path) -> None:
    replays = load_replays(published)
    store = ResultsStore.for_reading(store_path)
    with store, GradeTables(store_path, readonly=True) as tables:
        labels: Counter[str] = Counter()
        for replay in replays["games"]:
            game = stored_game(store, replay)
            grades = {grade.ply: grade for grade in tables.move_grades([game.id])}
            shown = [step["move"]["grade"] for step in replay["steps"][1:]]
            if game.env_id == KUHN:
                assert shown == [None] * len(shown)  # poker moves have no per-move grade
                continue
            assert shown == [grade_text(grades[ply]) for ply in range(len(shown))]
            labels.update(grade["label"] for grade in shown)
    assert labels["top move"] > 0 and labels["unknown"] > 0  # a budget of 20,000 nodes


def raw_controls(text: str) -> set[str]:
    return {c for c in text if c != "\n" and unicodedata.category(c) in {"Cc", "Cf", "Cs"}}


def test_a_hostile_answer_is_cut_and_inert(published: Path) -> None:
    replays = load_replays(published)
    moves = [
        step["move"]
        for game in replays["games"]
        for step in game["steps"][1:]
        if game["players"][step["move"]["seat"]] == HOSTILE
    ]
    assert moves
    for move in moves:
        response, reasoning = move["response"], move["reasoning"]
        shown = printable(HOSTILE_RESPONSE, keep_newlines=True)
        assert response["cut"] and response["chars"] == len(shown)
        assert response["text"] == shown[: TEXT_LIMIT - 1] + "…"
        assert response["text"].startswith("<script>window.__xss = 1</script><img")
        assert "\\x1b[2J\\x1b]0;pwned\\x07" in response["text"]  # visible escapes
        assert reasoning == {
            "text": "</script><!-- <b>think</b> \\u202eevil",
            "chars": len("</script><!-- <b>think</b> \\u202eevil"),
            "cut": False,
        }
    page = (published / "index.html").read_text()
    files = [page, (published / "replays.json").read_text()]
    assert all(raw_controls(text) == set() for text in files)
    # The frames travel as one inert data block, with no markup inside it at all.
    (block,) = re.findall(
        r'<script type="application/json" id="replay-data">(.*?)</script>', page, re.S
    )
    assert not set(block) & set("<>&")
    assert json.loads(block) == replays
    assert re.findall(r"<script[^>]*>", page) == [
        '<script type="application/json" id="replay-data">',
        "<script>",
    ]
    assert "<img" not in page and "<b>" not in page


def test_publish_can_leave_the_replays_out(store_path: Path, tmp_path: Path) -> None:
    publish(store_path, tmp_path, replays_per_pair=0)
    assert load_replays(tmp_path)["games"] == []
    page = (tmp_path / "index.html").read_text()
    assert 'role="tab" id="tab-replays"' not in page and 'id="panel-replays"' not in page
    assert '<script type="application/json"' not in page and 'href="#replays-' not in page


def test_publish_command_takes_the_number_of_replays(
    store_path: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["publish", "--db", str(store_path), "--out", str(tmp_path), "--passes", "1"]
    assert main([*argv, "--replays", "1"]) == 0
    replays = load_replays(tmp_path)
    assert replays["games_per_pair"] == 1 and len(replays["games"]) == 6
    assert "Up to 1 game of each pair of players" in (tmp_path / "index.html").read_text()
    assert main([*argv, "--replays", "-1"]) == 2
    assert capsys.readouterr().err.strip().endswith("--replays must be at least 0, not -1")


def test_a_long_view_keeps_its_end(monkeypatch: pytest.MonkeyPatch) -> None:
    """A free-text game's view ends with its latest moves: a view past the limit keeps them."""
    from strategic_arena.leaderboard import replays

    env = make(KUHN)
    env.reset(seed=1)
    full = replays.board(env, ["a", "b"])["views"]
    monkeypatch.setattr(replays, "VIEW_LIMIT", 40)
    cut = replays.board(env, ["a", "b"])["views"]
    for whole, part in zip(full, cut, strict=True):
        assert part["label"] == whole["label"] and len(part["text"]) == 40
        assert part["text"] == "…" + whole["text"][-39:]


# ------------------------------------------------------------------------------------------
# in a browser


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with headless_chromium() as driver:
        yield driver


#: The visible grid: a row per table row, "." for an empty cell, else the cell's mark.
_GRID = r"""
return Array.from(document.querySelectorAll("#replay-board table.replay-grid tbody tr")).map(
  (row) => Array.from(row.querySelectorAll("td")).map((td) => td.textContent || ".").join(""));
"""

#: Each grid cell's mark and where it is inside the board's box (px).
_CELLS = r"""
const box = document.getElementById("replay-board").getBoundingClientRect();
return Array.from(document.querySelectorAll("#replay-board td")).map((td) => {
  const r = td.getBoundingClientRect();
  return {mark: td.dataset.mark, x: r.left - box.left, y: r.top - box.top};
});
"""

#: The viewer's colours of X and O cells (page.css), and the page's background.
COLOURS = {"x": (0xD1, 0x24, 0x2F), "o": (0xF2, 0xCC, 0x60), ".": (0xFF, 0xFF, 0xFF)}


def _open_from_leaderboard(browser: Any, page: Path, env_title: str) -> int:
    """Follow the hostile model's row link in ``env_title``'s table, then its first game."""
    from selenium.webdriver.common.by import By

    browser.get(page.as_uri())
    tab = browser.find_element(By.XPATH, f"//button[@role='tab'][normalize-space()='{env_title}']")
    tab.click()
    panel = browser.find_element(By.ID, tab.get_attribute("aria-controls"))
    row = panel.find_element(By.XPATH, f".//tbody/tr[td[2][normalize-space()='{HOSTILE}']]")
    link = row.find_element(By.CSS_SELECTOR, "a[href^='#replays-']")
    assert link.text == "4 games"  # two against each of its two opponents
    link.click()
    assert browser.find_element(By.ID, "tab-replays").get_attribute("aria-selected") == "true"
    anchor = browser.find_element(By.ID, link.get_attribute("href").split("#")[1])
    assert anchor.is_displayed() and anchor.text == HOSTILE
    first = anchor.find_element(By.XPATH, "following-sibling::ul[1]//a")
    first.click()
    return int(first.get_attribute("href").rsplit("-", 1)[1])


def _pixel(png: bytes, x: float, y: float) -> tuple[int, int, int]:
    image = pytest.importorskip("PIL.Image").open(io.BytesIO(png)).convert("RGB")
    rgb: tuple[int, int, int] = image.getpixel((round(x), round(y)))  # 1 CSS px = 1 px here
    return rgb


def _check_step(
    browser: Any, replay: dict[str, Any], boards: list[list[str]], step: int, grid: bool
) -> bytes:
    """What the page states at ``step`` against the data and the env; the board's screenshot."""
    from selenium.webdriver.common.by import By

    last = len(replay["steps"]) - 1
    label = browser.find_element(By.ID, "replay-step").text
    assert label == (f"Move 0 of {last} (the start)" if step == 0 else f"Move {step} of {last}")
    move_line = browser.find_element(By.ID, "replay-move").text
    transcript = browser.find_elements(By.CSS_SELECTOR, "#replay-transcript li")
    assert len(transcript) == step
    if step:
        move = replay["steps"][step]["move"]
        seat = move["seat"]
        assert move_line == (
            f"Move {step}: seat {seat} ({replay['players'][seat]}) played {move['text']}."
        )
        grade = browser.find_element(By.ID, "replay-grade")
        if move["grade"]:
            assert grade.text == f"Grade: {move['grade']['label']} ({move['grade']['detail']})"
        else:
            assert not grade.is_displayed()
        response = browser.find_element(By.ID, "replay-response").text
        assert response == move["response"]["text"].rstrip()
    else:
        assert move_line == "The start: no move yet."
    if grid:
        shown = browser.execute_script(_GRID)
        assert shown == [row.upper() for row in boards[step]]
    else:
        texts = [e.text for e in browser.find_elements(By.CSS_SELECTOR, "pre.board-text")]
        assert texts == [text.rstrip() for text in boards[step]]
    board = browser.find_element(By.ID, "replay-board")
    png: bytes = board.screenshot_as_png
    assert len(png) > 100
    if grid:  # every cell is drawn in the colour of the mark the page states for it
        for cell in browser.execute_script(_CELLS):
            colour = _pixel(png, cell["x"] + 6, cell["y"] + 6)
            assert colour == COLOURS[cell["mark"]], (step, cell)
    return png


def _step_through(browser: Any, store_path: Path, published: Path, index: int) -> list[bytes]:
    """Forward with the button and the → key to the end, then back to the start with ←."""
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    replay = load_replays(published)["games"][index]
    with ResultsStore.for_reading(store_path) as store:
        boards = boards_after_each_move(store, stored_game(store, replay))
    grid = "grid" in replay["steps"][0]["board"]
    title = browser.find_element(By.ID, "replay-title").text
    seats = " vs ".join(f"{name} (seat {seat})" for seat, name in enumerate(replay["players"]))
    assert title == f"{replay['title']}: {seats}"
    last = len(replay["steps"]) - 1
    shots = [_check_step(browser, replay, boards, 0, grid)]
    for step in range(1, last + 1):
        if step % 2:
            browser.find_element(By.ID, "replay-forward").click()
        else:
            ActionChains(browser).send_keys(Keys.ARROW_RIGHT).perform()
        shots.append(_check_step(browser, replay, boards, step, grid))
    ActionChains(browser).send_keys(Keys.ARROW_RIGHT).perform()  # past the end: stays
    _check_step(browser, replay, boards, last, grid)
    for step in range(last - 1, -1, -1):
        if step % 2:
            ActionChains(browser).send_keys(Keys.ARROW_LEFT).perform()
        else:
            browser.find_element(By.ID, "replay-back").click()
        shot = _check_step(browser, replay, boards, step, grid)
        assert shot == shots[step] or not grid  # the same grid drawn the same way
    ActionChains(browser).send_keys(Keys.END).perform()
    _check_step(browser, replay, boards, last, grid)
    return shots


def test_connect_four_and_kuhn_games_step_forward_and_back_in_chromium(
    browser: Any, store_path: Path, published: Path
) -> None:
    from selenium.common.exceptions import NoAlertPresentException
    from selenium.webdriver.common.by import By

    browser.set_window_size(1400, 1000)
    page = published / "index.html"
    index = _open_from_leaderboard(browser, page, "Connect Four")
    assert load_replays(published)["games"][index]["env_id"] == C4
    shots = _step_through(browser, store_path, published, index)
    assert all(a != b for a, b in itertools.pairwise(shots))  # each move shows
    # The answer is shown as text, cut where the page says, and never runs.
    cut = browser.find_element(By.ID, "replay-response-cut").text
    assert cut == f"(cut: the first {TEXT_LIMIT} of {len(printable(HOSTILE_RESPONSE))} characters)"
    response = browser.find_element(By.ID, "replay-response").text
    assert response.startswith("<script>window.__xss = 1</script><img src=x")
    assert "\\x1b[2J" in response
    reasoning = browser.find_element(By.ID, "replay-reasoning").text
    assert reasoning == "</script><!-- <b>think</b> \\u202eevil"

    index = _open_from_leaderboard(browser, page, "Kuhn Poker")
    replay = load_replays(published)["games"][index]
    assert replay["env_id"] == KUHN
    labels = [e.text for e in browser.find_elements(By.CSS_SELECTOR, "#replay-board h4")]
    assert labels == [f"seat {seat} ({name}) sees" for seat, name in enumerate(replay["players"])]
    _step_through(browser, store_path, published, index)

    # A link to one game opens it directly; the picker opens another.
    browser.get(page.as_uri() + f"#replay-{index}")
    assert browser.find_element(By.ID, "tab-replays").get_attribute("aria-selected") == "true"
    assert browser.find_element(By.ID, "replay-title").text.startswith("Kuhn Poker: ")
    from selenium.webdriver.support.ui import Select

    Select(browser.find_element(By.ID, "replay-pick")).select_by_value("0")
    assert browser.find_element(By.ID, "replay-title").text.startswith("Connect Four: ")

    assert browser.execute_script("return window.__xss === undefined") is True
    assert not browser.find_elements(By.TAG_NAME, "img")
    with pytest.raises(NoAlertPresentException):
        browser.switch_to.alert.text  # noqa: B018
    errors = [entry for entry in browser.get_log("browser") if entry["level"] == "SEVERE"]
    assert not errors, errors
