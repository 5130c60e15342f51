"""Numba kernels: game rules as small pure functions over fixed-dtype state arrays.

One module per game (plus `rng`, a fast bounded random integer shared by the search); each
documents its state encoding. Action ids and chance outcomes are
OpenSpiel's, so a kernel state replays any OpenSpiel history (``state_from_history``).
"""
