"""The trainer's old addresses of the episode and rewards still import, with a warning."""

import importlib
import inspect
import sys

import pytest

import strategic_arena.rl.episode as episode
import strategic_arena.rl.rewards as rewards


@pytest.mark.parametrize(
    ("old", "new"),
    [("strategic_arena.train.rewards", rewards), ("strategic_arena.train.episode", episode)],
)
def test_old_address_warns_and_reexports_the_same_objects(old, new, monkeypatch):
    monkeypatch.delitem(sys.modules, old, raising=False)
    with pytest.warns(DeprecationWarning, match=new.__name__):
        module = importlib.import_module(old)
    public = {
        name
        for name, value in vars(new).items()
        if not name.startswith("_")
        and not inspect.ismodule(value)
        and getattr(value, "__module__", new.__name__) == new.__name__
    }
    assert set(module.__all__) == public
    for name in module.__all__:
        assert getattr(module, name) is getattr(new, name)
