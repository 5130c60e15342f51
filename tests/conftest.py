"""Shared fixtures and options for the test suite."""

from __future__ import annotations

import hashlib
import itertools

import pytest

from tests.pg import pg_server, pg_url  # noqa: F401  (a PostgreSQL server for the store tests)


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--update-golden",
        action="store_true",
        default=False,
        help="rewrite tests/golden/ prompt files instead of comparing against them",
    )


@pytest.fixture
def update_golden(request: pytest.FixtureRequest) -> bool:
    return bool(request.config.getoption("--update-golden"))


@pytest.fixture(autouse=True)
def _secret_seeds_fixed_per_test(
    request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Runs without ``--seed`` draw their root seed from the OS; in a test they draw from the test.

    ``eval`` without ``--seed`` plays deals nobody can predict (``seeding.secret_seed``). In
    the suite that would make every such test a different game each time, and an assertion
    about what the games showed could fail now and then. Here each test draws its own fixed
    sequence, derived from its id, so it replays exactly in any order and on any worker, and
    two draws in one test still differ. Tests of the secret seed itself call
    ``seeding.secret_seed`` directly or patch the store's draw themselves.
    """
    draws = itertools.count()

    def drawn() -> int:
        key = f"{request.node.nodeid}#{next(draws)}".encode()
        return int.from_bytes(hashlib.sha256(key).digest()[:8], "big") >> 1  # 63 bits, as the OS's

    monkeypatch.setattr("strategic_arena.arena.store.secret_seed", drawn)
