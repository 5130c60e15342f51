"""Opponents: solvers and bots that play the curated games as ``strategic_arena`` players.

This package depends on the core (``strategic_arena``); the core never imports it at import
time. Its numba kernels, MCTS, CFR, perfect-play solvers and the Hanabi partner arrive with the
opponents work (extra ``[solvers]``).
"""
