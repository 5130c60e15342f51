"""The CLI's commands: each one's name, its line in ``--help`` and the module that builds it.

``strategic-arena --help`` needs nothing but this table. The module named for a command (its
``add_parsers`` registers it, and its siblings) is imported only when that command is named,
so the CLI starts without OpenSpiel, numpy or pydantic, and a command's own ``--help`` imports
what its parser needs, not what every other command needs.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Command:
    """One subcommand of ``strategic-arena``.

    Attributes:
        name: what is typed (``eval``).
        help: its line in ``strategic-arena --help``.
        module: the module whose ``add_parsers(sub)`` registers it with its arguments.
    """

    name: str
    help: str
    module: str


def _in(module: str, *commands: tuple[str, str]) -> tuple[Command, ...]:
    """The commands ``module`` registers, in the order it registers them."""
    return tuple(Command(name, text, f"strategic_arena.cli.{module}") for name, text in commands)


#: Every command, in the order ``--help`` lists them.
COMMANDS: tuple[Command, ...] = (
    *_in(
        "play",
        (
            "envs",
            "list the curated environment ids (menu games and free-text TextArena games), or "
            "show everything the spec of one says",
        ),
        ("play", "play one seeded game and print every prompt and move"),
        ("demo", "one seeded game between random players, every prompt shown (make demo)"),
    ),
    *_in(
        "opponents",
        ("opponents", "list the opponent specs, their games and parameters"),
        ("serve", "serve an opponent as an OpenAI-compatible chat endpoint"),
        ("solve", "regenerate the shipped equilibrium policies and print their exploitability"),
    ),
    *_in(
        "arena_parsers",
        ("eval", "evaluate a model endpoint against solvers, store every move, print the report"),
        ("report", "recompute and print the metrics of a results store"),
        ("replay", "replay a stored game exactly and print its moves"),
    ),
    *_in(
        "runs",
        ("runs", "list the runs of a results store; list a run's games; rename or delete a run"),
    ),
    *_in(
        "rank",
        (
            "rank",
            "rank players at a game with adaptive match-making: only the games that settle it",
        ),
    ),
    *_in(
        "grade",
        ("grade", "grade stored moves against exact solvers and measure poker exploitability"),
    ),
    *_in(
        "leaderboard",
        (
            "publish",
            "write LEADERBOARD.md, leaderboard.json and index.html from a results database",
        ),
        ("ladder", "play the baseline ladder (solvers against each other) and publish it"),
    ),
    *_in("train", ("train", "self-play RL of a language model on the games (extra [train])")),
    *_in(
        "serve_model",
        (
            "serve-model",
            "print (and with --run, start) the vLLM command that serves a model for eval",
        ),
    ),
    *_in(
        "transfer",
        (
            "transfer",
            "reasoning benchmarks (MATH500, AIME, GPQA...) as MARSHAL and SPIRAL measure them",
        ),
    ),
    *_in("verifier", ("verifier", "MAPoRL's learned verifier (extra [train])")),
)

#: Each command's line in ``--help``, by name (the modules register their commands with it).
HELP: dict[str, str] = {command.name: command.help for command in COMMANDS}
