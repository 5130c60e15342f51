"""What reaches ``strategic-arena transfer`` from outside: log lines, the hub, benchmark files.

Each test runs the command in a subprocess, as a user would, and reads what it printed:

* an endpoint's answer holding terminal escapes and the API key, which math-verify logs when it
  gives up parsing it, reaches stderr escaped and with the key masked;
* ``transfer fetch`` with the hub unreachable (``HF_ENDPOINT`` on a closed loopback port) says
  one line per benchmark, without the hub libraries' retries;
* a benchmark file too large, with a line too long, or nested too deeply is one error line
  and exit 2, before the endpoint is asked anything.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from strategic_arena.problems import write_gsm8k_jsonl
from strategic_arena.transfer import BENCHMARKS, BenchmarkRun, Protocol
from strategic_arena.transfer.hub import hub_unreachable
from tests.servers import FaultServer
from tests.transfer.oracle import ProblemOracle

KEY = "sk-door-test-0123456789abcdef"
#: Nested brackets and parentheses keep math-verify's LaTeX parser busy far past its 2 s limit
#: (minutes), so it gives up and logs ``Timeout during parsing: <the answer>``; the text holds a
#: screen clear, a bell and the API key, as an endpoint that echoes them could send.
HOSTILE = "[(" * 120 + "1\\text{\x1b[2J\x07 " + KEY + "}" + ")]" * 120


def transfer(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """``strategic-arena transfer ARGS`` in a subprocess (this checkout's code)."""
    return subprocess.run(
        [sys.executable, "-m", "strategic_arena.cli", "transfer", *args],
        capture_output=True,
        text=True,
        timeout=240,
        env=env,
    )


def test_math_verify_log_lines_reach_stderr_escaped_and_without_the_key(tmp_path: Path) -> None:
    pytest.importorskip("math_verify", reason="math-verify comes with the transfer extra")
    pytest.importorskip("httpx", reason="the arena's backend needs httpx (the [arena] extra)")
    folder = tmp_path / "data"
    folder.mkdir()
    write_gsm8k_jsonl(folder / "arithmetic.jsonl", 1, seed=5)
    run = BenchmarkRun(
        BENCHMARKS["arithmetic"], Protocol("spiral_qwen3", samples=1), data_dir=str(folder)
    )
    oracle = ProblemOracle(
        [run], lambda pid, s: False, reply=lambda pid, s: f"\\boxed{{{HOSTILE}}}"
    )
    server = FaultServer(service=oracle)  # type: ignore[arg-type]
    try:
        result = transfer(
            "run",
            "--paper",
            "spiral",
            "--benchmarks",
            "arithmetic",
            "--samples",
            "1",
            "--data-dir",
            str(folder),
            "--base-url",
            server.base_url,
            "--db",
            str(tmp_path / "t.sqlite"),
            "--api-key-env",
            "DOOR_TEST_KEY",
            "--quiet",
            env={**os.environ, "DOOR_TEST_KEY": KEY},
        )
    finally:
        server.close()
    assert result.returncode == 0, result.stderr
    assert "Timeout during parsing: \\boxed{[([(" in result.stderr  # math-verify's own line
    assert "\x1b" not in result.stderr and "\x07" not in result.stderr
    assert "\\x1b[2J\\x07" in result.stderr  # shown as the characters received
    # the backend masks the key in what it hands on, before any log line holds it
    assert KEY not in result.stderr and "\\text{\\x1b[2J\\x07 ***}" in result.stderr


def test_the_command_masks_the_named_key_in_every_libraries_log_line(tmp_path: Path) -> None:
    """Once a command has read ``--api-key-env``, no logger prints that key (httpx's here)."""
    command = f"""
import logging, os, sys
from strategic_arena.cli import main
status = main([
    "transfer", "run", "--benchmarks", "math500", "--data-dir", {str(tmp_path)!r},
    "--base-url", "http://127.0.0.1:9/v1", "--db", {str(tmp_path / "x.sqlite")!r},
    "--api-key-env", "DOOR_TEST_KEY",
])
logging.getLogger("httpx").warning("Authorization: Bearer %s", os.environ["DOOR_TEST_KEY"])
sys.exit(status)
"""
    result = subprocess.run(
        [sys.executable, "-c", command],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "DOOR_TEST_KEY": KEY},
    )
    assert result.returncode == 2  # no benchmark file: one line, before any request
    assert "strategic-arena: error: benchmark math500: no file" in result.stderr
    assert "Authorization: Bearer ***" in result.stderr and KEY not in result.stderr


@pytest.fixture
def closed_port() -> Iterator[int]:
    """A loopback port bound and not listening: a connection to it is refused at once."""
    with socket.socket() as bound:
        bound.bind(("127.0.0.1", 0))
        yield bound.getsockname()[1]


def test_fetch_with_the_hub_unreachable_is_one_line_per_benchmark(
    tmp_path: Path, closed_port: int
) -> None:
    pytest.importorskip("datasets", reason="transfer fetch needs the datasets library")
    cleared = {"HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_ENDPOINT"}
    env = {
        key: value
        for key, value in os.environ.items()
        if key not in cleared and not key.lower().endswith("_proxy")
    }
    env["HF_ENDPOINT"] = f"http://127.0.0.1:{closed_port}"
    env["HF_HOME"] = str(tmp_path / "hf")  # an empty cache: nothing to fall back on
    result = transfer("fetch", "--data-dir", str(tmp_path / "data"), env=env)
    assert result.returncode == 1
    assert "arithmetic.jsonl written (generated)" in result.stdout
    from_hub = sorted(name for name, entry in BENCHMARKS.items() if entry.hub is not None)
    lines = result.stderr.strip().splitlines()  # no retry lines from the hub libraries
    assert [line.split(":", 1)[0] for line in lines] == from_hub, result.stderr
    for name, line in zip(from_hub, lines, strict=True):
        entry = BENCHMARKS[name]
        assert line.startswith(f"{name}: cannot fetch {entry.hub[0]}")  # type: ignore[index]
        assert f"(offline: the hub at 127.0.0.1:{closed_port} cannot be reached" in line
        assert (
            f"put the file at {entry.path(tmp_path / 'data')} in the {entry.schema} schema" in line
        )


@pytest.fixture
def no_proxy_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    for key in list(os.environ):
        if key.lower().endswith("_proxy"):
            monkeypatch.delenv(key)


def test_the_hub_check_connects_directly_or_through_the_named_proxy(
    closed_port: int, no_proxy_settings: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    with socket.create_server(("127.0.0.1", 0)) as listening:
        open_port = listening.getsockname()[1]
        assert hub_unreachable(f"http://127.0.0.1:{open_port}") is None
        closed = hub_unreachable(f"http://127.0.0.1:{closed_port}")
        assert (
            closed == f"the hub at 127.0.0.1:{closed_port} cannot be reached (Connection refused)"
        )
        # a proxy answers for a hub whose name does not resolve here ...
        monkeypatch.setenv("HTTPS_PROXY", f"http://user:pw@127.0.0.1:{open_port}")
        assert hub_unreachable("https://hub.invalid") is None
        # ... and when it does not answer, the line says so without its address
        monkeypatch.setenv("HTTPS_PROXY", f"http://user:pw@127.0.0.1:{closed_port}")
        refused = hub_unreachable("https://hub.invalid")
        assert refused is not None and "pw" not in refused and str(closed_port) not in refused
        assert refused.startswith("the proxy the environment names for the hub at hub.invalid:443")
        # a host NO_PROXY exempts is asked directly
        monkeypatch.setenv("HTTPS_PROXY", f"http://127.0.0.1:{open_port}")
        monkeypatch.setenv("NO_PROXY", "127.0.0.1")
        assert hub_unreachable(f"https://127.0.0.1:{closed_port}") == closed


def _one_long_line(path: Path, size: int) -> None:
    """One JSON line of ``size`` bytes, written sparse (a hole of NULs inside a string)."""
    with path.open("wb") as handle:
        handle.write(b'{"problem": "')
        handle.truncate(size)


def _deep_row(path: Path) -> None:
    depth = 100_000
    path.write_text('{"problem": "p", "answer": ' + "[" * depth + "]" * depth + "}\n")


def _long_row(path: Path) -> None:
    path.write_text(json.dumps({"problem": "p" * (5 << 20), "answer": "1"}) + "\n")


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda p: _one_long_line(p, 300_000_000), "is larger than the 256 MiB a data may be"),
        (_long_row, "line 1 is longer than 4 MiB"),
        (_deep_row, "line 1: JSON nested deeper than 64 levels"),
    ],
    ids=["300-mb-line", "5-mib-line", "100k-deep-row"],
)
def test_a_hostile_benchmark_file_is_one_line_and_exit_2(
    tmp_path: Path, make: Callable[[Path], None], message: str
) -> None:
    path = tmp_path / "math500.jsonl"
    make(path)
    result = transfer(
        "run",
        "--benchmarks",
        "math500",
        "--data-dir",
        str(tmp_path),
        "--base-url",
        "http://127.0.0.1:9/v1",  # never asked: the files are read first
        "--db",
        str(tmp_path / "x.sqlite"),
    )
    assert result.returncode == 2
    (line,) = result.stderr.strip().splitlines()
    assert line.startswith(f"strategic-arena: error: data file {path}")
    assert message in line
