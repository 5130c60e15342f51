"""The one seed derivation: pinned values (stored arena runs resume on them), stable everywhere."""

from __future__ import annotations

import subprocess
import sys

from strategic_arena.arena import runner
from strategic_arena.seeding import derive_seed


def test_known_values_never_change() -> None:
    # Computed with the arena runner's scheme before it moved here; the committed ladder and
    # every stored run were seeded with it, so a change would replay other games on resume.
    assert derive_seed(123, "kuhn_poker-v0", 7) == 4266719756994332805
    assert derive_seed(0) == 4082515956461234366
    assert derive_seed(2**40 + 5, "x/y/3", 1) == 3879514107667154771


def test_stable_across_processes() -> None:
    here = derive_seed(123, "kuhn_poker-v0", 7)
    code = (
        "from strategic_arena.seeding import derive_seed; "
        "print(derive_seed(123, 'kuhn_poker-v0', 7))"
    )
    there = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert int(there.stdout) == here


def test_every_part_matters_and_the_range_is_63_bits() -> None:
    seeds = {
        derive_seed(123, "kuhn_poker-v0", 7),
        derive_seed(124, "kuhn_poker-v0", 7),
        derive_seed(123, "kuhn_poker-v0", 8),
        derive_seed(123, 7, "kuhn_poker-v0"),
        derive_seed(123, "leduc_holdem-v0", 7),
    }
    assert len(seeds) == 5
    assert all(0 <= seed < 2**63 for seed in seeds)


def test_the_runner_uses_it() -> None:
    assert runner.derive_seed is derive_seed
