"""Numba kernels: game rules as small pure functions over fixed-dtype state arrays.

One module per game; each documents its state encoding. Action ids and chance outcomes are
OpenSpiel's, so a kernel state replays any OpenSpiel history (``state_from_history``).
"""
