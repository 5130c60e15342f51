"""Published leaderboards: ``LEADERBOARD.md``, ``leaderboard.json`` and a static ``index.html``.

:func:`publish` reads a results store and writes, into one folder:

* ``leaderboard.json`` -- the data (:func:`build`), with a schema version; its layout is
  ``leaderboard.schema.json`` (JSON Schema 2020-12), written beside it;
* ``LEADERBOARD.md`` -- tables per game and overall (:mod:`.markdown`);
* ``index.html`` -- one offline page with a tab per game, sortable tables and SVG charts
  (:mod:`.html`), and a Replays tab that steps through a sample of the games move by move;
* ``replays.json`` -- that sample, board by board (:mod:`.replays`), also embedded in the page.

The pages render the same data, and the data depend only on the games stored (ratings
are order-independent, floats rounded, no timestamps), so publishing the same store twice
writes identical files. :mod:`.ladder` plays the baseline ladder that ships in
``leaderboards/``; the ``publish`` and ``ladder`` commands are in :mod:`.cli`.
"""

from __future__ import annotations

import contextlib
import json
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from strategic_arena.arena.costs import Price
from strategic_arena.arena.store import ResultsStore
from strategic_arena.door import is_postgres, shown
from strategic_arena.grading.export import export_runs
from strategic_arena.leaderboard import html, markdown
from strategic_arena.leaderboard.atomic import write_all
from strategic_arena.leaderboard.data import MAX_LEFT_OUT, SCHEMA_VERSION, build, schema
from strategic_arena.leaderboard.replays import GAMES_PER_PAIR, build_replays, no_replays
from strategic_arena.ratings import TrueSkillSettings

__all__ = ["FILES", "SCHEMA_VERSION", "PublishError", "build", "publish", "schema", "write"]

#: The files :func:`publish` writes.
FILES = (
    "LEADERBOARD.md",
    "leaderboard.json",
    "leaderboard.schema.json",
    "replays.json",
    "index.html",
)


class PublishError(OSError):
    """The files could not be written (a full disk, no permission); the old ones are intact."""


def write(
    data: dict[str, Any], out: str | Path, replays: dict[str, Any] | None = None
) -> dict[str, Path]:
    """Write the published files of ``data`` (from :func:`build`) into folder ``out``.

    ``replays`` (from :func:`~.replays.build_replays`; none when ``None``) go into
    ``replays.json`` and the page's Replays tab.

    All at once (:mod:`.atomic`): a reader, or a crash at any moment, sees every new file or
    every old one, never a mix or a file cut short. Other files in ``out`` are kept.

    Returns:
        The path of each file written, by file name.

    Raises:
        PublishError: nothing was replaced (its message names the folder and the cause).
    """
    folder = Path(out)
    replays = replays or no_replays()
    contents = {
        "LEADERBOARD.md": markdown.render(data),
        "leaderboard.json": json.dumps(data, indent=2, ensure_ascii=False) + "\n",
        "leaderboard.schema.json": json.dumps(schema(), indent=2) + "\n",
        # Compact: the boards of every step add up; one game per line keeps diffs readable.
        "replays.json": _replays_json(replays),
        "index.html": html.render(data, replays),
    }
    try:
        write_all(folder, {name: text.encode("utf-8") for name, text in contents.items()})
    except OSError as error:
        cause = error.strerror or str(error)
        raise PublishError(
            error.errno,
            f"cannot write the leaderboard into {folder}: {cause} (nothing there was changed)",
        ) from error
    return {name: folder / name for name in contents}


def _replays_json(replays: dict[str, Any]) -> str:
    """``replays.json``: compact, one replayed game per line."""
    games = [
        json.dumps(game, ensure_ascii=False, separators=(",", ":")) for game in replays["games"]
    ]
    head = json.dumps({k: v for k, v in replays.items() if k != "games"}, ensure_ascii=False)
    body = ",\n".join(games)
    return head[:-1] + ', "games": [\n' + body + ("\n" if games else "") + "]}\n"


def publish(
    db: str | Path | Sequence[str | Path],
    out: str | Path,
    run_names: Sequence[str] | None = None,
    settings: TrueSkillSettings | None = None,
    *,
    max_left_out: float = MAX_LEFT_OUT,
    title: str | None = None,
    description: str | None = None,
    replays_per_pair: int = GAMES_PER_PAIR,
    prices: Mapping[str, Price] | None = None,
) -> dict[str, Path]:
    """Build the leaderboard of the results database ``db`` and write it into ``out``.

    Args:
        db: an existing results database (a SQLite file or a ``postgresql://`` URL), or
            several: their runs are published as one leaderboard (copied together first,
            :func:`~strategic_arena.grading.export.export_runs`; a run name in two stores
            must be the same run, whose games are then pooled).
        out: the folder to write (created if missing).
        run_names: runs to include (all when ``None``).
        settings: TrueSkill parameters (defaults when ``None``).
        max_left_out: the largest share of a player's games its own server failures may leave
            unscored for it to be ranked (see :func:`build`).
        title: the pages' title (default "Leaderboards").
        description: a paragraph under the title (plain text, shown as written).
        prices: money per million tokens by player, for the players' cost column.
        replays_per_pair: games replayed in the page per pair of players in each game
            (:func:`~.replays.sample`; 0: no Replays tab).

    Raises:
        FileNotFoundError: ``db`` does not exist (publishing never creates a database).
    """
    stores = [db] if isinstance(db, (str, Path)) else list(db)
    for one in stores:
        if not is_postgres(one) and not Path(one).is_file():
            raise FileNotFoundError(f"no results database at {one}")
    source = ", ".join(shown(one) if is_postgres(one) else Path(one).name for one in stores)
    with contextlib.ExitStack() as cleanup:
        where = stores[0]
        if len(stores) > 1:  # one store holding every store's runs, then published as one
            folder = cleanup.enter_context(tempfile.TemporaryDirectory(prefix="publish-"))
            where = Path(folder) / "pooled.db"
            for one in stores:
                export_runs(one, where)
        with ResultsStore.for_reading(where) as store:
            data = build(
                store,
                run_names,
                settings=settings,
                source=source,
                max_left_out=max_left_out,
                title=title,
                description=description,
                prices=prices,
            )
            replays = build_replays(store, run_names, per_pair=replays_per_pair)
    return write(data, out, replays)
