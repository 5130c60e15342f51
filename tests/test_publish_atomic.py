"""`publish` replaces its files all at once: kill -9 at any moment and a full disk leave either
the old publication or the new one, whole, never a mix or a file cut short."""

from __future__ import annotations

import errno
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("trueskill")

from strategic_arena.arena.runner import Entrant, round_robin, run
from strategic_arena.arena.store import ResultsStore
from strategic_arena.cli import main
from strategic_arena.leaderboard import FILES, atomic, publish
from strategic_arena.ratings import TrueSkillSettings
from tests.disks import fill, tmpfs

ROOT = Path(__file__).resolve().parents[1]

Publication = dict[str, bytes]

#: One TrueSkill pass: quicker publishes (the kill loop runs twenty).
ONE_PASS = TrueSkillSettings(passes=1)


def snapshot(folder: Path) -> Publication:
    """The published files of ``folder`` as they are now (missing ones are absent)."""
    return {name: (folder / name).read_bytes() for name in FILES if (folder / name).exists()}


def leftovers(folder: Path) -> list[str]:
    """Temporary folders or files a write left behind."""
    found = [p.name for p in folder.parent.glob(f".{folder.name}.publish-*")]
    return found + [p.name for p in folder.glob(".*.tmp-*")] if folder.exists() else found


@pytest.fixture(scope="module")
def store_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two runs, so that two different publications exist: run "a" alone, and everything."""
    path = tmp_path_factory.mktemp("atomic") / "arena.db"
    entrants = [Entrant.opponent("random"), Entrant.opponent("mcts:simulations=5")]
    with ResultsStore(path) as store:
        for name, seed in (("a", 1), ("b", 2)):
            tasks = round_robin(entrants, ["tic_tac_toe-v0"], 4, seed=seed)
            assert run(store, name, tasks, seed=seed, concurrency=1, progress=False).complete
    return path


@pytest.fixture(scope="module")
def publications(store_path: Path, tmp_path_factory: pytest.TempPathFactory) -> list[Publication]:
    """What a finished publish writes: run "a" only, and every run (they differ)."""
    base = tmp_path_factory.mktemp("reference")
    old = snapshot(Path(publish(store_path, base / "old", ["a"], ONE_PASS)["index.html"]).parent)
    new = snapshot(Path(publish(store_path, base / "new", None, ONE_PASS)["index.html"]).parent)
    assert set(old) == set(new) == set(FILES) and old != new
    return [old, new]


def test_publish_keeps_the_other_files_of_its_folder(
    store_path: Path, publications: list[Publication], tmp_path: Path
) -> None:
    out = tmp_path / "site"
    out.mkdir()
    (out / "README.md").write_text("mine\n")
    (out / "ladder.db").write_bytes(b"not ours")
    os.symlink("README.md", out / "link")
    publish(store_path, out, ["a"], ONE_PASS)
    assert snapshot(out) == publications[0]
    publish(store_path, out, None, ONE_PASS)
    assert snapshot(out) == publications[1]
    assert (out / "README.md").read_text() == "mine\n"
    assert (out / "ladder.db").read_bytes() == b"not ours"
    assert os.readlink(out / "link") == "README.md"
    assert leftovers(out) == []


def test_a_folder_that_cannot_be_swapped_gets_each_file_replaced(
    publications: list[Publication], tmp_path: Path
) -> None:
    out = tmp_path / "site"
    (out / "sub").mkdir(parents=True)  # a sub-folder cannot be carried by a hard link
    (out / "sub" / "kept.txt").write_text("kept")
    assert atomic.write_all(out, publications[0]) == "per-file"
    assert snapshot(out) == publications[0]
    assert (out / "sub" / "kept.txt").read_text() == "kept" and leftovers(out) == []
    live = tmp_path / "live"
    live.mkdir()
    (live / "arena.db-wal").write_bytes(b"pages a writer has not checkpointed")
    assert atomic.write_all(live, publications[0]) == "per-file"  # never swapped away from it
    assert atomic.write_all(tmp_path / "fresh", publications[1]) == "swapped"
    assert snapshot(tmp_path / "fresh") == publications[1]


def command(store_path: Path, out: Path, everything: bool) -> list[str]:
    args = [sys.executable, "-m", "strategic_arena.cli", "publish", "--db", str(store_path)]
    args += ["--out", str(out), "--passes", "1"]  # one pass: a shorter run to kill
    return args + ([] if everything else ["--run", "a"])


#: A child that writes the publication in ``argv[2]`` (a folder of files) into ``argv[1]``
#: and sends itself SIGKILL just before its ``argv[3]``-th step (a write, flush, link, rename
#: or removal): a kill -9 at every point of the write, deterministically.
KILL_AT_STEP = """
import os, shutil, signal, sys
from pathlib import Path
from strategic_arena.leaderboard import atomic

out, source, kill_at = Path(sys.argv[1]), Path(sys.argv[2]), int(sys.argv[3])
files = {path.name: path.read_bytes() for path in sorted(source.iterdir())}
steps = 0

def killing(step):
    def wrapped(*args, **kwargs):
        global steps
        steps += 1
        if steps == kill_at:
            os.kill(os.getpid(), signal.SIGKILL)
        return step(*args, **kwargs)
    return wrapped

for name in ("_write", "_fsync_path", "_exchange"):
    setattr(atomic, name, killing(getattr(atomic, name)))
os.link, os.rename, os.chmod = killing(os.link), killing(os.rename), killing(os.chmod)
shutil.rmtree = killing(shutil.rmtree)
atomic.write_all(out, files)
"""


def test_kill_9_at_every_step_of_a_write_leaves_one_whole_publication(
    publications: list[Publication], tmp_path: Path
) -> None:
    source = tmp_path / "new-files"
    source.mkdir()
    for name, data in publications[1].items():
        (source / name).write_bytes(data)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    outcomes = []
    for step in range(1, 40):
        out = tmp_path / f"site-{step}"
        atomic.write_all(out, publications[0])
        (out / "README.md").write_text("not ours\n")  # carried over by a hard link
        child = [sys.executable, "-c", KILL_AT_STEP, str(out), str(source), str(step)]
        done = subprocess.run(child, env=env, capture_output=True)
        state = snapshot(out)
        assert state in publications, f"killed at step {step}: mixed, cut or missing"
        assert (out / "README.md").read_text() == "not ours\n"
        outcomes.append(publications.index(state))
        if done.returncode == 0:  # no step left to kill at: the write finished
            break
        assert done.returncode == -9, done.stderr.decode()
    # Killed before the swap: old; after it: new; the last run finished.
    assert outcomes[0] == 0 and outcomes[-1] == 1 and outcomes == sorted(outcomes), outcomes
    assert len(outcomes) > 8  # four writes, their flushes, a link, the swap: all killed at
    atomic.write_all(tmp_path / "site-1", publications[1])  # cleans what the kills left
    assert leftovers(tmp_path / "site-1") == []


def test_kill_9_at_any_moment_leaves_one_whole_publication(
    store_path: Path, publications: list[Publication], tmp_path: Path
) -> None:
    out = tmp_path / "site"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    started = time.perf_counter()
    subprocess.run(command(store_path, out, False), env=env, check=True, capture_output=True)
    duration = time.perf_counter() - started  # only to spread the kills over a whole publish
    assert snapshot(out) == publications[0]
    kills = 20
    for i in range(kills):
        process = subprocess.Popen(
            command(store_path, out, i % 2 == 0), env=env, stdout=subprocess.DEVNULL
        )
        time.sleep(duration * (0.6 + 0.6 * i / kills))  # from mid-run to past the end
        process.kill()
        process.wait()
        state = snapshot(out)
        assert state in publications, f"kill {i}: {sorted(state)} is mixed, cut or missing"
    # The next publish removes what the killed ones left behind.
    subprocess.run(command(store_path, out, True), env=env, check=True, capture_output=True)
    assert snapshot(out) == publications[1] and leftovers(out) == []


def test_a_full_disk_leaves_the_old_publication_and_says_so_in_one_line(
    store_path: Path,
    publications: list[Publication],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    out = tmp_path / "site"
    publish(store_path, out, ["a"], ONE_PASS)
    write = atomic._write
    calls = []

    def full_after_two(path: Path, data: bytes) -> None:
        calls.append(path.name)
        if len(calls) > 2:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(path))
        write(path, data)

    monkeypatch.setattr(atomic, "_write", full_after_two)
    assert main(["publish", "--db", str(store_path), "--out", str(out), "--passes", "1"]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == (
        f"strategic-arena: error: cannot write the leaderboard into {out}: No space left on "
        "device (nothing there was changed)\n"
    )
    assert snapshot(out) == publications[0] and leftovers(out) == []


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A 2 MiB tmpfs (root on Linux only; skipped where it cannot be mounted)."""
    with tmpfs(tmp_path / "disk", "2m") as mount:
        yield mount


def test_a_really_full_disk_leaves_the_old_publication(
    store_path: Path,
    publications: list[Publication],
    small_disk: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    out = small_disk / "site"
    publish(store_path, out, ["a"], ONE_PASS)
    fill(small_disk)
    assert main(["publish", "--db", str(store_path), "--out", str(out), "--passes", "1"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "No space left on device" in err, err
    assert snapshot(out) == publications[0] and leftovers(out) == []
    (small_disk / "filler").unlink()
    assert main(["publish", "--db", str(store_path), "--out", str(out), "--passes", "1"]) == 0
    assert snapshot(out) == publications[1]
