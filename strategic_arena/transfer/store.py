"""Where the transfer evaluation's answers live: a table of the results store, one row a sample.

Each (model, benchmark) pair is a run of the results store named ``transfer/<label>/<benchmark>``
(:func:`run_name`; ``...@mad`` or ``...@autogen`` when a multi-agent system answered), whose
settings are the benchmark's protocol, the file's SHA-256 and the model (and the system's):
resuming with other settings is refused by name (the store's own rule), so answers of two
protocols are never pooled. Its answers go to ``transfer_answers``, one row per sample, unique on
``(run_id, problem_id, sample)`` and written with ``ON CONFLICT DO NOTHING``: a sample has at
most one answer, whoever writes it twice (a resumed run, two processes). Each row is committed
when it is written, so a run killed (``kill -9``) loses only the answers still in flight, and
the next call asks only for the samples without one.

A request the endpoint failed after the backend's retries (an infrastructure error) stores
nothing: the sample is still open, and a rerun asks it again. A malformed or unreadable answer
is stored as a wrong one. Both back ends of the store (SQLite, PostgreSQL) hold the table.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import dataclass

from strategic_arena.arena.records import StoredRun
from strategic_arena.arena.store import (
    POSTGRES_TYPES,
    SQLITE_TYPES,
    ResultsStore,
    capped,
)

__all__ = [
    "RUN_PREFIX",
    "SYSTEM_MARK",
    "Answer",
    "answers",
    "delete_answers",
    "ensure_table",
    "run_name",
    "save_answer",
]

#: Every transfer run's name starts so.
RUN_PREFIX = "transfer/"

_TABLE = """
CREATE TABLE IF NOT EXISTS transfer_answers (
    id {id},
    run_id {int} NOT NULL REFERENCES runs(id),
    problem_id TEXT NOT NULL,
    sample {int} NOT NULL,
    correct {int} NOT NULL,
    extracted TEXT,
    response TEXT NOT NULL,
    reasoning TEXT,
    finish_reason TEXT,
    malformed TEXT,
    prompt_tokens {int} NOT NULL,
    completion_tokens {int} NOT NULL,
    latency_s {real} NOT NULL,
    finished {real} NOT NULL,
    UNIQUE (run_id, problem_id, sample)
)
"""

_COLUMNS = (
    "problem_id, sample, correct, extracted, response, reasoning, finish_reason, malformed, "
    "prompt_tokens, completion_tokens, latency_s"
)


@dataclass(frozen=True)
class Answer:
    """One sampled answer to one problem, checked.

    Attributes:
        problem_id: the problem's id in its file.
        sample: the sample's number (0 .. samples - 1).
        correct: whether it is right.
        extracted: the answer read from the reply (``None``: none could be read).
        response: the reply's text (stored cut to the store's ``max_response_chars``).
        reasoning: reasoning the server returned apart, if any.
        finish_reason: the server's (``length``: cut off by the budget).
        malformed: why the reply was no answer at all (a field of the wrong type), if so.
        prompt_tokens / completion_tokens: the server's counts.
        latency_s: seconds the request took, retries included.
    """

    problem_id: str
    sample: int
    correct: bool
    extracted: str | None
    response: str
    reasoning: str | None = None
    finish_reason: str | None = None
    malformed: str | None = None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_s: float = 0.0


#: Between a benchmark and a multi-agent system in a run's name.
SYSTEM_MARK = "@"


def run_name(label: str, benchmark: str, system: str = "single") -> str:
    """The store's run of one model (``label``) on one benchmark, in one system.

    The single agent's run is ``transfer/<label>/<benchmark>``; a multi-agent system's is
    ``transfer/<label>/<benchmark>@<system>``, so the two sit side by side under one label
    and a resumed run never mixes their answers.
    """
    suffix = "" if system == "single" else f"{SYSTEM_MARK}{system}"
    return f"{RUN_PREFIX}{label}/{benchmark}{suffix}"


def ensure_table(store: ResultsStore) -> None:
    """Create the answers table if the store lacks it (not on a read-only store)."""
    if store.readonly or "transfer_answers" in store.table_names():
        return
    types = POSTGRES_TYPES if store.shared else SQLITE_TYPES
    store.execute(_TABLE.format(**types))


def open_run(store: ResultsStore, name: str, seed: int, settings: dict[str, object]) -> StoredRun:
    """The run ``name`` (created if new), with the answers table; refused if settings differ.

    Settings are pinned by the first answer, not the first attempt: a run that holds no answer
    yet (an attempt whose every request failed, say with a token budget the server refused)
    takes the new settings. A refusal suggests another ``--label`` (the run's name part).
    """
    ensure_table(store)

    def empty(run: StoredRun) -> bool:
        return (
            store.execute("SELECT 1 FROM transfer_answers WHERE run_id = ? LIMIT 1", (run.id,))
            is None
        )

    with store.transaction():
        return store.open_run(name, seed, settings, rename="another --label", repin_if=empty)


def delete_answers(store: ResultsStore, run_id: int) -> None:
    """Delete every answer of ``run_id`` (deleting the run: ``strategic-arena runs --delete``)."""
    store.execute("DELETE FROM transfer_answers WHERE run_id = ?", (run_id,))


def answered(store: ResultsStore, run_id: int) -> set[tuple[str, int]]:
    """``(problem_id, sample)`` of every stored answer of ``run_id``."""
    rows = store.rows("SELECT problem_id, sample FROM transfer_answers WHERE run_id = ?", (run_id,))
    return {(str(problem), int(sample)) for problem, sample in rows}


def save_answer(store: ResultsStore, run_id: int, answer: Answer) -> bool:
    """Store ``answer`` unless its sample has one already; whether it was written."""
    cap = store.max_response_chars
    values = (
        run_id,
        answer.problem_id,
        answer.sample,
        int(answer.correct),
        None if answer.extracted is None else capped(answer.extracted, cap),
        capped(answer.response, cap),
        None if answer.reasoning is None else capped(answer.reasoning, cap),
        answer.finish_reason,
        answer.malformed,
        answer.prompt_tokens,
        answer.completion_tokens,
        answer.latency_s,
        time.time(),
    )
    row = store.execute(
        f"INSERT INTO transfer_answers (run_id, {_COLUMNS}, finished) "
        f"VALUES ({', '.join('?' * len(values))}) "
        "ON CONFLICT (run_id, problem_id, sample) DO NOTHING RETURNING id",
        values,
    )
    return row is not None


def answers(store: ResultsStore, run_ids: Iterable[int]) -> dict[int, list[Answer]]:
    """Every stored answer of each run, by run id, in problem then sample order."""
    found: dict[int, list[Answer]] = {}
    ids = list(run_ids)
    if not ids or "transfer_answers" not in store.table_names():
        return {run_id: [] for run_id in ids}
    rows = store.rows(
        f"SELECT run_id, {_COLUMNS} FROM transfer_answers WHERE run_id IN "
        f"({', '.join('?' * len(ids))}) ORDER BY run_id, problem_id, sample",
        ids,
    )
    for run_id, *fields in rows:
        problem, sample, correct, extracted, response, reasoning, finish, malformed = fields[:8]
        prompt_tokens, completion_tokens, latency = fields[8:]
        found.setdefault(int(run_id), []).append(
            Answer(
                str(problem),
                int(sample),
                bool(correct),
                extracted,
                str(response),
                reasoning,
                finish,
                malformed,
                int(prompt_tokens),
                int(completion_tokens),
                float(latency),
            )
        )
    return {run_id: found.get(run_id, []) for run_id in ids}
