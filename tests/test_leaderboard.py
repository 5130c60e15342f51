"""Published leaderboards: JSON against its schema, deterministic files, escaping of every
user or model string, the CLI, the committed baseline ladder, and the page in headless Chromium."""

from __future__ import annotations

import html
import json
import os
import re
import shlex
import unicodedata
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("trueskill")
pytest.importorskip("numba")  # the MCTS and Nash opponents

from strategic_arena.actions import ActionError
from strategic_arena.arena.runner import Entrant, round_robin, run
from strategic_arena.arena.store import ResultsStore
from strategic_arena.cli import main
from strategic_arena.door.printable import printable
from strategic_arena.leaderboard import FILES, publish, reproduce, schema
from strategic_arena.serve import PlayerServer
from strategic_arena.turn import Decision, GameState, Player
from tests.browser import headless_chromium

ROOT = Path(__file__).resolve().parents[1]
COMMITTED = ROOT / "leaderboards"

#: A player name and answers that would run script if a page did not escape them.
EVIL_NAME = "<script>alert(1)</script> | evil"
#: Terminal controls too: clear the screen, set the window title (OSC), NUL, a bidi override.
TERMINAL_CONTROLS = "\x1b[2J\x1b]0;pwned\x07\x00\u202eevil"
EVIL_RESPONSE = (
    "<answer><script>window.__xss = 1; alert(2)</script></answer>\n<b>bold?</b>" + TERMINAL_CONTROLS
)
EVIL_PARAM = "<img src=x onerror=alert(3)>" + TERMINAL_CONTROLS


class EvilPlayer:
    """Answers every move with markup instead of a move (and so forfeits)."""

    def __init__(self, name: str) -> None:
        self.name = name

    async def act(self, state: GameState, seat: int) -> Decision:
        error = ActionError("unknown_action", "not a move: <script>alert(4)</script>")
        return Decision(action=None, text=EVIL_RESPONSE, error=error, errors=(error,))


def evil_entrant() -> Entrant:
    def build_player(env_id: str, seed: int) -> Player:
        return EvilPlayer(EVIL_NAME)

    return Entrant(EVIL_NAME, "llm", {"model": EVIL_PARAM}, build_player, ("tic_tac_toe-v0",))


@pytest.fixture(scope="module")
def store_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A store with competitive and cooperative games and one hostile player."""
    path = tmp_path_factory.mktemp("leaderboard") / "arena.db"
    specs = ["random", "mcts:simulations=10", "nash", "hanabi_bot"]
    entrants = [*(Entrant.opponent(spec) for spec in specs), evil_entrant()]
    envs = ["tic_tac_toe-v0", "kuhn_poker-v0", "mini_hanabi-v0"]
    with ResultsStore(path) as store:
        tasks = round_robin(entrants, envs, 8, seed=5)
        assert run(store, "mixed", tasks, seed=5, concurrency=1, progress=False).complete
    # Grades: every Tic-Tac-Toe move, and the built-in players' Kuhn strategies (the model,
    # with no endpoint given, is skipped).
    argv = ["grade", "--db", str(path), "--envs", "kuhn_poker-v0", "--samples", "5", "--quiet"]
    assert main(argv) == 0
    return path


@pytest.fixture(scope="module")
def published(store_path: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("published")
    publish(store_path, out)
    return out


def load(folder: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((folder / "leaderboard.json").read_text())
    return data


def validate(data: dict[str, Any]) -> None:
    jsonschema = pytest.importorskip("jsonschema")
    validator = jsonschema.Draft202012Validator(schema())
    validator.check_schema(schema())
    errors = sorted(validator.iter_errors(data), key=lambda e: list(e.absolute_path))
    assert not errors, "\n".join(f"{list(e.absolute_path)}: {e.message}" for e in errors)


# ------------------------------------------------------------------------------------------
# JSON


def test_json_validates_against_its_schema(published: Path) -> None:
    data = load(published)
    validate(data)
    assert data["schema_version"] == 5
    assert data["coverage"] == []  # no server failed here
    grades = data["grades"]
    pooled = {row["player"]: row for row in grades["moves"] if row["opponent"] == "all"}
    assert pooled[EVIL_NAME]["invalid"] == pooled[EVIL_NAME]["moves"] > 0  # never graded
    assert pooled[EVIL_NAME]["graded"] == 0 and pooled["random"]["graded"] > 0
    assert {row["player"] for row in grades["strategies"]} == {"nash", "random"}
    assert json.loads((published / "leaderboard.schema.json").read_text()) == schema()
    envs = {env["env_id"]: env for env in data["envs"]}
    assert list(envs) == ["tic_tac_toe-v0", "kuhn_poker-v0", "mini_hanabi-v0"]
    assert envs["mini_hanabi-v0"]["cooperative"] and envs["mini_hanabi-v0"]["partner_bots"] == [
        "hanabi_bot"
    ]
    ttt = envs["tic_tac_toe-v0"]
    assert ttt["rows"][-1]["player"] == EVIL_NAME  # it forfeits every game
    evil = ttt["rows"][-1]
    assert evil["invalid_rate"] == 1.0 and evil["losses"] == evil["games"] == 16
    assert evil["versus"]["random"]["mean"] == -1.0
    assert ttt["reference_opponents"] == ["mcts:simulations=10", "random"]  # not the model


def test_models_and_baselines_are_ranked_apart(published: Path) -> None:
    """A baseline that beat a forfeiting model is not ranked above the models (#1 before)."""
    data = load(published)
    assert {name: p["baseline"] for name, p in data["players"].items()} == {
        EVIL_NAME: False,
        "hanabi_bot": True,
        "mcts:simulations=10": True,
        "nash": True,
        "random": True,
    }
    for rows in [data["overall"]["rows"], *(env["rows"] for env in data["envs"])]:
        models = [row["rank"] for row in rows if not row["baseline"]]
        baselines = [row["rank"] for row in rows if row["baseline"] and row["rank"] is not None]
        assert models in ([], [1])  # the only model is first among the models
        assert baselines == list(range(1, len(baselines) + 1))
    ttt = next(env for env in data["envs"] if env["env_id"] == "tic_tac_toe-v0")
    ranks = {row["player"]: row["rank"] for row in ttt["rows"]}
    assert ranks == {"mcts:simulations=10": 1, "random": 2, EVIL_NAME: 1}
    page = (published / "index.html").read_text()
    overall = page[page.index('id="panel-overall"') : page.index('id="panel-game-1"')]
    models_at, baselines_at = overall.index(">Models</h3>"), overall.index(">Baselines</h3>")
    random_cell = '<td class="text name">random</td>'
    assert models_at < overall.index("&lt;script&gt;alert(1)", models_at) < baselines_at
    assert random_cell not in overall[:baselines_at] and random_cell in overall[baselines_at:]
    # The charts mark the baselines' names too.
    labels = re.findall(r"<text( class=\"baseline\")? x=[^>]*>([^<]*)<", overall)
    assert {bool(css) for css, name in labels if name == "random"} == {True}
    assert "Names in grey italics: baselines" in overall
    evil_labels = [css for css, name in labels if name.endswith("| evil")]
    assert evil_labels and not any(evil_labels)
    markdown = (published / "LEADERBOARD.md").read_text()
    assert "**Models**" in markdown and "**Baselines**" in markdown


def test_schema_rejects_a_malformed_leaderboard(published: Path) -> None:
    jsonschema = pytest.importorskip("jsonschema")
    data = load(published)
    data["envs"][0]["rows"][0]["trueskill"]["sigma"] = "wide"
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(data, schema(), cls=jsonschema.Draft202012Validator)
    data = load(published)
    data["schema_version"] = 1
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(data, schema(), cls=jsonschema.Draft202012Validator)


def test_publishing_twice_writes_identical_files(store_path: Path, tmp_path: Path) -> None:
    first, second = publish(store_path, tmp_path / "a"), publish(store_path, tmp_path / "b")
    assert sorted(first) == sorted(FILES)
    for name in FILES:
        assert first[name].read_bytes() == second[name].read_bytes(), name


def test_invalid_answers_are_sampled_as_written(published: Path) -> None:
    samples = load(published)["invalid_samples"]
    evil = [s for s in samples if s["player"] == EVIL_NAME]
    assert len(evil) == 3  # at most three per player and game
    assert {s["response"] for s in evil} == {EVIL_RESPONSE}
    assert evil[0]["error_kind"] == "unknown_action"


def test_a_long_invalid_answer_is_shown_in_part_and_expands(published: Path) -> None:
    from strategic_arena.leaderboard import html as page
    from strategic_arena.leaderboard import markdown

    data = load(published)
    long_answer = "I think <b>" + "x" * 1500 + " END"
    data["invalid_samples"][0].update(response=long_answer, truncated=True)
    text = page.render(data)
    head = html.escape(long_answer[: page.SHOWN_CHARS])
    rest = html.escape(long_answer[page.SHOWN_CHARS :] + " …")
    assert f'<pre class="response">{head}</pre><details class="more">' in text
    assert f"show the other {len(long_answer) - page.SHOWN_CHARS} characters" in text
    assert f'<pre class="response">{rest}</pre></details>' in text
    table = markdown.render(data)  # a table cell keeps the first characters only
    assert f"I think &lt;b&gt;{'x' * (markdown.SAMPLE_CHARS - 11)} …" in table
    assert "x" * (markdown.SAMPLE_CHARS - 10) not in table


# ------------------------------------------------------------------------------------------
# escaping in the static files


def test_markdown_escapes_user_strings(published: Path) -> None:
    text = (published / "LEADERBOARD.md").read_text()
    assert "<script" not in text and "<img" not in text and "<b>" not in text
    assert "&lt;script&gt;alert(1)&lt;/script&gt; \\| evil" in text
    assert "&lt;img src=x onerror=alert(3)&gt;" in text
    # Every table row keeps its column count: the '|' in the name stays inside its cell.
    for table in re.findall(r"(?:^\|.*\|\n)+", text, flags=re.MULTILINE):
        rows = table.splitlines()
        widths = {len(re.findall(r"(?<!\\)\|", row)) for row in rows}
        assert len(widths) == 1, rows[0]


def raw_controls(text: str) -> set[str]:
    """The characters of ``text`` a terminal or editor would act on (line breaks aside)."""
    return {c for c in text if c != "\n" and unicodedata.category(c) in {"Cc", "Cf", "Cs"}}


def test_published_pages_show_control_characters_as_escapes(published: Path) -> None:
    markdown = (published / "LEADERBOARD.md").read_text()
    page = (published / "index.html").read_text()
    assert raw_controls(markdown) == set() and raw_controls(page) == set()
    # Shown, not dropped: the escapes are there (backslashes doubled in markdown).
    assert "\\\\x1b\\[2J\\\\x1b\\]0;pwned\\\\x07\\\\x00\\\\u202eevil" in markdown
    assert "\\x1b[2J\\x1b]0;pwned\\x07\\x00\\u202eevil" in page
    assert "&lt;/answer&gt;\\\\n&lt;b&gt;" in markdown  # the reply's line break, visible
    # The JSON keeps the data exactly as written (JSON itself escapes the C0 controls).
    assert load(published)["players"][EVIL_NAME]["params"]["model"] == EVIL_PARAM


def test_html_escapes_user_strings(published: Path) -> None:
    page = (published / "index.html").read_text()
    # The page's own script and the replays' data block (never run), nothing else.
    assert re.findall(r"<script[^>]*>", page) == [
        '<script type="application/json" id="replay-data">',
        "<script>",
    ]
    assert (
        "<img" not in page
        and "<b>" not in page
        and "onerror=" not in page.replace("onerror=alert(3)&gt;", "")
    )
    assert "&lt;script&gt;alert(1)&lt;/script&gt; | evil" in page
    assert "window.__xss" in page  # the response is there, as text
    assert "http://" not in page.replace("http://www.w3.org/2000/svg", "")  # nothing remote
    assert "https://" not in page


# ------------------------------------------------------------------------------------------
# command line


def test_publish_command(
    store_path: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "site"
    assert main(["publish", "--db", str(store_path), "--out", str(out), "--passes", "4"]) == 0
    assert sorted(p.name for p in out.iterdir()) == sorted(FILES)
    assert load(out)["rating"]["passes"] == 4
    argv = ["publish", "--db", str(store_path), "--out", str(out), "--passes", "4"]
    title, description = "Kuhn & co <b>", "Small models, 8 games each.\n<i>draft</i>"
    assert main([*argv, "--title", title, "--description", description]) == 0
    assert load(out)["page"] == {"title": title, "description": description}
    page = (out / "index.html").read_text()
    assert "<title>Kuhn &amp; co &lt;b&gt;</title>" in page
    assert "<h1>Kuhn &amp; co &lt;b&gt;</h1>" in page and "&lt;i&gt;draft&lt;/i&gt;" in page
    assert (out / "LEADERBOARD.md").read_text().startswith("# Kuhn &amp; co &lt;b&gt;\n")
    assert main(["publish", "--db", str(tmp_path / "missing.db"), "--out", str(out)]) == 2
    assert "no results database" in capsys.readouterr().err
    assert main(["publish", "--db", str(store_path), "--out", str(out), "--run", "nope"]) == 2
    assert "no run named 'nope'" in capsys.readouterr().err


def test_each_run_shows_the_command_that_reproduces_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """An eval run's command, rebuilt from its stored settings, replays that same run."""
    monkeypatch.setenv("SA_TEST_KEY", "sk-very-secret")
    db, out = tmp_path / "arena.db", tmp_path / "site"
    with PlayerServer("random", model="served-random") as server:
        argv = [
            "eval", "--base-url", server.base_url, "--model", "served-random", "--name", "bot",
            "--api-key-env", "SA_TEST_KEY", "--envs", "tic_tac_toe-v0", "--opponents", "random",
            "--num-games", "2", "--seed", "3", "--temperature", "0.5", "--max-tokens", "64",
            "--history", "--lenient", "--db", str(db), "--quiet", "--no-report",
        ]  # fmt: skip
        assert main(argv) == 0
        assert main(["publish", "--db", str(db), "--out", str(out)]) == 0
        (run_info,) = load(out)["source"]["runs"]
        expected = (
            f"strategic-arena eval --base-url {server.base_url} --model served-random "
            "--history --lenient --temperature 0.5 --max-tokens 64 --name bot --envs "
            "tic_tac_toe-v0 --opponents random --num-games 2 --seed 3 --run-name "
            f"{run_info['name']} --db arena.db"
        )
        assert run_info["command"] == expected
        digest = load(out)["source"]["games_digest"]
        # The command, run from the database's folder, resumes the same run: nothing new.
        monkeypatch.chdir(tmp_path)
        assert main([*shlex.split(expected)[1:], "--quiet", "--no-report"]) == 0
    assert main(["publish", "--db", str(db), "--out", str(out)]) == 0
    assert load(out)["source"]["games_digest"] == digest
    assert [run["name"] for run in load(out)["source"]["runs"]] == [run_info["name"]]
    for name in FILES:
        assert "sk-very-secret" not in (out / name).read_text()
    page = (out / "index.html").read_text()
    assert html.escape(expected) in page
    assert expected in (out / "LEADERBOARD.md").read_text()
    capsys.readouterr()


def test_the_command_is_rebuilt_from_stored_settings_or_not_at_all() -> None:
    """Settings no ``eval`` wrote (the trainer's evaluation) give no command, not a wrong one;
    credentials and query strings of the URL never appear; extra body fields come back."""
    assert reproduce.command("train-eval", 0, {"run": "r", "step": 20, "style": "marshal"}) is None
    settings: dict[str, Any] = {
        "candidates": ["m"],
        "model": {"model": "m", "base_url": "http://u:k@host:8000/v1?api_key=k2", "style": "json"},
        "opponents": {"kuhn_poker-v0": ["random", "nash"], "tic_tac_toe-v0": ["random"]},
        "num_games": 4,
        "protocol": None,
    }
    assert reproduce.command("r", 1, settings) is None  # no single --opponents list plays it
    settings["opponents"] = {"kuhn_poker-v0": ["random", "nash"]}  # the default for Kuhn
    assert reproduce.command("r", 1, settings) == (
        "strategic-arena eval --base-url http://host:8000/v1 --model m --style json "
        "--envs kuhn_poker-v0 --num-games 4 --seed 1 --run-name r"
    )
    settings["model"]["chat_template_kwargs"] = {"enable_thinking": False}
    settings["model"]["repetition_penalty"] = 1.1  # an extra body field without its own option
    assert reproduce.command("r", 1, settings) == (
        "strategic-arena eval --base-url http://host:8000/v1 --model m --style json "
        "--chat-template-kwargs '{\"enable_thinking\": false}' "
        "--extra-body '{\"repetition_penalty\": 1.1}' "
        "--envs kuhn_poker-v0 --num-games 4 --seed 1 --run-name r"
    )
    settings["model"]["system_prompt"] = "You play boldly."  # a persona: its own option
    assert "--system-prompt 'You play boldly.' --extra-body" in str(
        reproduce.command("r", 1, settings)
    )
    del settings["num_games"]  # not what eval stores: no command rather than a wrong one
    assert reproduce.command("r", 1, settings) is None


def test_ladder_command_plays_resumes_and_publishes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "ladder"
    argv = ["ladder", "--out", str(out), "--envs", "tic_tac_toe-v0", "--num-games", "2"]
    assert main(argv) == 0
    assert "30 games played" in capsys.readouterr().out  # 6 entrants play Tic-Tac-Toe: 15 pairs
    data = load(out)
    validate(data)
    (run_info,) = data["source"]["runs"]
    assert run_info["name"] == "baseline-ladder"
    assert run_info["settings"]["command"].startswith("strategic-arena ladder --out ")
    assert main(argv) == 0  # a rerun resumes: nothing left to play, same games
    assert "0 games played, 30 resumed" in capsys.readouterr().out
    assert load(out)["source"]["games_digest"] == data["source"]["games_digest"]
    assert main([*argv[:-1], "3"]) == 2  # another ladder into the same database
    assert "other settings" in capsys.readouterr().err


# ------------------------------------------------------------------------------------------
# the committed baseline ladder


def test_the_committed_baseline_ladder_is_valid_and_ordered() -> None:
    path = COMMITTED / "leaderboard.json"
    if not path.exists():
        pytest.skip("leaderboards/leaderboard.json is not in this checkout")
    data = load(COMMITTED)
    validate(data)
    envs = {env["env_id"]: env for env in data["envs"]}
    assert set(envs) == {
        "tic_tac_toe-v0",
        "connect_four-v0",
        "kuhn_poker-v0",
        "leduc_holdem-v0",
        "mini_hanabi-v0",
        "simple_hanabi-v0",
    }

    def rank(env_id: str, player: str) -> int:
        (row,) = [row for row in envs[env_id]["rows"] if row["player"] == player]
        value: int = row["rank"]
        return value

    for env_id in ("tic_tac_toe-v0", "connect_four-v0"):
        ranks = [rank(env_id, f"mcts:simulations={n}") for n in (1000, 100, 10)]
        assert ranks == sorted(ranks) and rank(env_id, "random") > ranks[-1]
    assert rank("tic_tac_toe-v0", "minimax") < rank("tic_tac_toe-v0", "mcts:simulations=100")
    solver = next(
        row["player"] for row in envs["connect_four-v0"]["rows"] if "solver" in row["player"]
    )
    assert rank("connect_four-v0", solver) < rank("connect_four-v0", "mcts:simulations=100")
    for env_id in ("kuhn_poker-v0", "leduc_holdem-v0"):  # the models' rows rank apart
        baselines = [row for row in envs[env_id]["rows"] if row["baseline"]]
        assert baselines[-1]["player"] == "random"
    for env_id in ("mini_hanabi-v0", "simple_hanabi-v0"):
        assert envs[env_id]["rows"][0]["player"] == "hanabi_bot"
    # Grades: the solvers play perfectly, random poorly; CFR+ after 10 and 100 iterations
    # separate by exploitability in Leduc Hold'em where their returns did not.
    moves = {
        (row["env_id"], row["player"]): row
        for row in data["grades"]["moves"]
        if row["opponent"] == "all"
    }
    for key in (("tic_tac_toe-v0", "minimax"), ("connect_four-v0", solver)):
        assert moves[key]["optimal"]["share"] == 1.0 and moves[key]["graded"] > 100
    for env_id in ("tic_tac_toe-v0", "connect_four-v0"):
        worst = min((row for row in moves.values() if row["env_id"] == env_id),
                    key=lambda row: row["accuracy"]["mean"])  # fmt: skip
        assert worst["player"] == "random"
    strategies = {(row["env_id"], row["player"]): row for row in data["grades"]["strategies"]}
    ten = strategies[("leduc_holdem-v0", "cfr:iterations=10")]
    hundred = strategies[("leduc_holdem-v0", "cfr:iterations=100")]
    assert hundred["ci95"][1] < ten["ci95"][0]
    page = (COMMITTED / "index.html").read_text()
    markdown = (COMMITTED / "LEADERBOARD.md").read_text()
    assert data["source"]["games_digest"] in page and data["source"]["games_digest"] in markdown


# ------------------------------------------------------------------------------------------
# the page in a real browser


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with headless_chromium() as driver:
        yield driver


def test_page_in_headless_chromium(browser: Any, published: Path) -> None:
    from selenium.common.exceptions import NoAlertPresentException
    from selenium.webdriver.common.by import By

    browser.get((published / "index.html").as_uri())
    tabs = browser.find_elements(By.CSS_SELECTOR, '[role="tab"]')
    assert [tab.text for tab in tabs] == [
        "Overall",
        "Tic-Tac-Toe",
        "Kuhn Poker",
        "Mini Hanabi",
        "Grades",
        "Players",
        "Replays",
        "About",
    ]

    def visible_panels() -> list[str]:
        panels = browser.find_elements(By.CSS_SELECTOR, '[role="tabpanel"]')
        return [panel.get_attribute("id") for panel in panels if panel.is_displayed()]

    # The tables render, one tab at a time.
    assert visible_panels() == ["panel-overall"]
    rows = browser.find_elements(By.CSS_SELECTOR, "#panel-overall table tbody tr")
    assert len(rows) == 5 and all(row.is_displayed() for row in rows)
    assert browser.find_element(By.CSS_SELECTOR, "#panel-overall svg").is_displayed()

    # Tabs switch.
    for tab in tabs:
        tab.click()
        panel = tab.get_attribute("aria-controls")
        assert visible_panels() == [panel]
        assert tab.get_attribute("aria-selected") == "true"

    # A table sorts by a clicked column, and back.
    tabs[1].click()
    table = browser.find_element(By.CSS_SELECTOR, "#panel-game-1 table")

    def players() -> list[str]:
        cells = table.find_elements(By.CSS_SELECTOR, "tbody tr td:nth-child(2)")
        return [cell.text for cell in cells]

    ranked = players()
    header = table.find_element(By.XPATH, ".//th[normalize-space()='player']/button")
    header.click()
    assert players() == sorted(ranked, key=str.lower)
    header.click()
    assert players() == sorted(ranked, key=str.lower, reverse=True)
    table.find_element(By.XPATH, ".//th[normalize-space()='rank']/button").click()
    assert players() == ranked

    # The grades: a chart of accuracy and blunders, one of Kuhn exploitability, their tables.
    tabs[4].click()
    charts = browser.find_elements(By.CSS_SELECTOR, "#panel-grades svg")
    assert len(charts) == 2 and all(chart.is_displayed() for chart in charts)
    labels = [chart.get_attribute("aria-label") for chart in charts]
    assert labels == [
        "Accuracy and blunder rate per player and game",
        "kuhn_poker-v0: exploitability",
    ]
    assert len(charts[1].find_elements(By.CSS_SELECTOR, "circle")) == 2  # nash, random
    grades_text = browser.find_element(By.ID, "panel-grades").text
    assert EVIL_NAME in grades_text and "minimax" not in grades_text

    # Model and user strings show as text and never run.
    tabs[5].click()
    text = browser.find_element(By.ID, "panel-players").text
    parameters = printable(json.dumps({"model": EVIL_PARAM}, ensure_ascii=False))
    assert EVIL_NAME in text and parameters in text  # controls shown as escapes
    assert "<script>window.__xss = 1; alert(2)</script>" in text
    assert browser.execute_script("return window.__xss === undefined") is True
    # The page's own script, and the replays' frames as a data block (never run).
    assert len(browser.find_elements(By.CSS_SELECTOR, "script:not([type])")) == 1
    assert len(browser.find_elements(By.CSS_SELECTOR, 'script[type="application/json"]')) == 1
    assert not browser.find_elements(By.TAG_NAME, "img")
    with pytest.raises(NoAlertPresentException):
        browser.switch_to.alert.text  # noqa: B018

    # No console errors (a blocked inline script would report a CSP violation here).
    errors = [entry for entry in browser.get_log("browser") if entry["level"] == "SEVERE"]
    assert not errors, errors


#: The columns of the overall table that must stay in view at any width.
KEY_COLUMNS = ("rank", "player", "μ − 3σ", "mean normalized", "invalid %")

#: For each table in a panel: its container's visible width, the table's full width, and the
#: key columns' right edges past the container's right edge (px; <= 0 when in view).
_LAYOUT = r"""
const [panel, keys] = arguments;
return Array.from(document.querySelectorAll(`#${panel} .table-wrap`)).map((wrap) => {
  const right = wrap.getBoundingClientRect().right;
  const headers = Array.from(wrap.querySelectorAll("thead th"));
  const past = {};
  for (const th of headers) {
    const label = th.textContent.replace(/\s+/g, " ").trim();
    if (keys.includes(label)) { past[label] = th.getBoundingClientRect().right - right; }
  }
  return {visible: wrap.clientWidth, full: wrap.scrollWidth, past: past};
});
"""


def _screenshots(browser: Any, page: Path, name: str, folder: Path) -> dict[int, Any]:
    """Open ``page`` at 1400 and 800 px; save a full-height screenshot of each tab's panel
    into ``folder`` (and into $STRATEGIC_ARENA_SHOTS when set, for people to look at)."""
    from selenium.webdriver.common.by import By

    shots = [folder]
    if os.environ.get("STRATEGIC_ARENA_SHOTS"):
        shots.append(Path(os.environ["STRATEGIC_ARENA_SHOTS"]))
    layout = {}
    for width in (1400, 800):
        browser.set_window_size(width, 1000)
        browser.get(page.as_uri())
        found = {}
        for tab in ("overall", "grades", "players"):
            browser.find_element(By.ID, f"tab-{tab}").click()
            height = browser.execute_script("return document.body.scrollHeight")
            browser.set_window_size(width, min(height + 160, 6000))
            # Loaded again at the full height: a page resized after layout can show sticky cells
            # at stale positions in the screenshot (the layout itself is right).
            browser.get(page.as_uri())
            browser.find_element(By.ID, f"tab-{tab}").click()
            for target in shots:
                target.mkdir(parents=True, exist_ok=True)
                browser.save_screenshot(str(target / f"{name}-{tab}-{width}px.png"))
            found[tab] = browser.execute_script(_LAYOUT, f"panel-{tab}", list(KEY_COLUMNS))
            found[f"{tab}-responses"] = [
                element.size["width"]
                for element in browser.find_elements(By.CSS_SELECTOR, "pre.response")
                if element.is_displayed()
            ]
            browser.set_window_size(width, 1000)
        layout[width] = found
    return layout


def test_page_layout_at_1400_and_800_px(browser: Any, published: Path, tmp_path: Path) -> None:
    """Every column of the overall and grades tables fits at 1400 px; at 800 px the overall
    table scrolls in its own container with the key columns in view; invalid answers get the
    page's width."""
    pages = {"mixed": published / "index.html"}
    if (COMMITTED / "index.html").exists():
        pages["ladder"] = COMMITTED / "index.html"  # 6 games, long solver names
    for name, page in pages.items():
        layout = _screenshots(browser, page, name, tmp_path)
        wide, narrow = layout[1400]["overall"], layout[800]["overall"]
        assert wide and narrow
        for table in wide:
            assert table["full"] <= table["visible"], (name, table)  # no horizontal scrolling
            assert set(table["past"]) == set(KEY_COLUMNS)
        for table in narrow:
            assert set(table["past"]) == set(KEY_COLUMNS)
            assert all(past <= 0.5 for past in table["past"].values()), (name, table)
        for table in layout[1400]["grades"]:  # the grades tables fit at 1400 px too
            assert table["full"] <= table["visible"], (name, table)
    # The model's invalid answers: wrapped at about the page's width, not a squeezed column.
    mixed = _screenshots(browser, published / "index.html", "mixed", tmp_path)
    assert len(mixed[1400]["players-responses"]) == 3
    assert min(mixed[1400]["players-responses"]) > 1000
    assert min(mixed[800]["players-responses"]) > 600
    assert (tmp_path / "mixed-overall-800px.png").stat().st_size > 0


def test_links_open_the_tab_that_holds_their_target(browser: Any, published: Path) -> None:
    """The Grades tab's "Definitions" and the Overall tab's "How to read the ranking" are links
    that open the About tab at their section; "Definitions: docs/grading.md" was plain text."""
    from selenium.webdriver.common.by import By

    browser.set_window_size(1400, 1000)
    browser.get((published / "index.html").as_uri())
    for tab, text, target in [
        ("grades", "Definitions", "definitions"),
        ("overall", "How to read the ranking", "about-ranking"),
    ]:
        browser.find_element(By.ID, f"tab-{tab}").click()
        link = browser.find_element(By.ID, f"panel-{tab}").find_element(By.LINK_TEXT, text)
        assert link.get_attribute("href").endswith(f"#{target}")
        link.click()
        assert browser.find_element(By.ID, "tab-about").get_attribute("aria-selected") == "true"
        assert browser.find_element(By.ID, target).is_displayed()
    # The same link twice (no hash change the second time) still opens its tab.
    browser.find_element(By.ID, "tab-overall").click()
    browser.find_element(By.ID, "panel-overall").find_element(
        By.LINK_TEXT, "How to read the ranking"
    ).click()
    assert browser.find_element(By.ID, "tab-about").get_attribute("aria-selected") == "true"
    about = browser.find_element(By.ID, "panel-about").text  # what the ranking link explains
    assert "ranked by μ − 3σ" in about and "step 20 can rank above step 40" in about
    markdown = (published / "LEADERBOARD.md").read_text()
    assert "Definitions: [docs/grading.md](../docs/grading.md)." in markdown
    assert "step 20 can rank above step 40" in markdown


def test_markdown_from_an_endpoint_is_shown_as_written_not_rendered() -> None:
    # Before, a model named "**b**" was published in bold; emphasis, strikethrough and math
    # marks are escaped now, and an underscore inside a word (kuhn_poker) is left alone.
    from strategic_arena.leaderboard.markdown import escape

    assert escape("**b** __u__ ~~s~~ $x$") == "\\*\\*b\\*\\* \\_\\_u\\_\\_ \\~\\~s\\~\\~ \\$x\\$"
    assert escape("kuhn_poker-v0 _a_") == "kuhn_poker-v0 \\_a\\_"
