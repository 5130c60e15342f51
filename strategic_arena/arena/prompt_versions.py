"""Prompt versions in stored games: find the results that pool games of different prompts.

Every game stores, per seat, the prompt version that seat read (``{"name", "digest"}``: the
prompt set and the digest of the files the game reads, :mod:`strategic_arena.prompt_files`).
A user's prompt set is part of the model player's name, so its games never pool with the
package's; but the package's own prompts change between releases, and a store that holds games
of one player and game from before and after an edit would average two different prompts under
one row. :func:`prompt_mixes` finds every such row, so the report and the leaderboard can say so
loudly (they do not split the row: a mix is something to fix, by reporting the runs apart).

Seats that read no prompt (solvers, bots) and games stored before the store kept prompts have
no record; a player with both recorded and unrecorded games is a mix too ("unrecorded").
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from strategic_arena.arena.records import StoredGame
from strategic_arena.door.printable import printable_line

#: The label of a seat with no stored prompt record.
UNRECORDED = "unrecorded"


@dataclass(frozen=True)
class PromptMix:
    """One player in one game whose scored games read more than one prompt version.

    Attributes:
        player: the player's name.
        env_id: the game.
        versions: ``(label, games)`` per version, most games first; a label is
            ``name@digest12`` (or ``unrecorded``).
    """

    player: str
    env_id: str
    versions: tuple[tuple[str, int], ...]

    def describe(self) -> str:
        """One line, escaped for a terminal: which versions, how many games of each."""
        listing = ", ".join(f"{printable_line(label)} ({n} games)" for label, n in self.versions)
        return (
            f"{printable_line(self.player)} on {self.env_id} pools {len(self.versions)} prompt "
            f"versions: {listing}; report the runs apart (--run) to compare them"
        )


def version_label(record: Mapping[str, str] | None) -> str:
    """``name@digest12`` of a stored prompt record, or :data:`UNRECORDED`."""
    if not record:
        return UNRECORDED
    return f"{record.get('name', '?')}@{str(record.get('digest', ''))[:12]}"


def prompt_mixes(games: Iterable[StoredGame]) -> list[PromptMix]:
    """Every (player, game) whose ``games`` read more than one prompt version, sorted.

    A player that never reads a prompt (no seat of it has a record) is never a mix.
    """
    seen: dict[tuple[str, str], Counter[str]] = defaultdict(Counter)
    for game in games:
        records = tuple(game.prompts) + (None,) * (len(game.players) - len(game.prompts))
        for player in dict.fromkeys(game.players):
            labels = {
                version_label(records[seat])
                for seat, name in enumerate(game.players)
                if name == player
            }
            for label in labels:
                seen[(player, game.env_id)][label] += 1
    mixes = []
    for (player, env_id), counts in sorted(seen.items()):
        if len(counts) > 1:
            versions = tuple(sorted(counts.items(), key=lambda item: (-item[1], item[0])))
            mixes.append(PromptMix(player, env_id, versions))
    return mixes
