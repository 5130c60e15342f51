"""What each move of a MindGames game did: a finished game replayed through TextArena's referee.

In2AI's rewards (:mod:`strategic_arena.rl.mindgames`) need more than TextArena's win/loss: which
guesses followed a Codenames clue and what each revealed, which Colonel Blotto round a move
belongs to and who won it, what a three-player IPD round paid each seat. A finished game is
replayed here from its seed and its moves (as the store keeps them) through TextArena's own env,
reading the referee's state after every move; nothing of the rules is re-implemented, and a game
read back from the store gives the same facts as when it was played.

One function per game, each returning a :class:`GameFacts`: one :class:`MoveFacts` per move sent
to TextArena (in order) and the game's totals.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from strategic_arena.games import get_spec
from strategic_arena.games.textarena import TextArenaSpec, TextArenaState

#: TextArena 0.7.4's Codenames patterns: a clue ``[word N]``, a guess ``[word]``.
_CLUE = re.compile(r"\[(\w+)\s+(\d+)\]")
_GUESS = re.compile(r"\[(\w+)\]")
#: Its three-player IPD's decision token.
_DECISION = re.compile(r"\[\s*(\d+)\s+(cooperate|defect)\s*\]", re.I)


@dataclass(frozen=True)
class MoveFacts:
    """What one move did (the fields a game does not use keep their defaults).

    Attributes:
        seat: who moved.
        kind: Codenames ``"clue"`` / ``"guess"``; Blotto ``"allocation"``; IPD ``"chat"`` /
            ``"decision"``.
        outcome: Codenames: a clue ``"clue"``, ``"substring"`` (the clue is, or holds, a board
            word) or ``"unparsed"``; a guess ``"team"``, ``"neutral"``, ``"opponent"``,
            ``"assassin"``, ``"duplicate"``, ``"off_board"``, ``"pass"`` or ``"unparsed"``.
            IPD decision: ``"decision"`` or ``"unparsed"`` (no token TextArena reads). Blotto:
            ``"allocation"``, or ``"unparsed"`` / ``"invalid"`` when TextArena refused it.
        number: a Codenames clue's declared count N.
        remaining: a Codenames clue's team words still hidden when it was given.
        round: the Blotto or IPD round the move belongs to (1-based).
        round_winner: Blotto: the seat that won the move's round, ``-1`` for a tie, ``None``
            when the round never resolved (the game ended before both allocations).
        round_gain: IPD: what the round paid the mover (``None``: it never resolved).
    """

    seat: int
    kind: str
    outcome: str = ""
    number: int = 0
    remaining: int = 0
    round: int = 0
    round_winner: int | None = None
    round_gain: float | None = None


@dataclass(frozen=True)
class GameFacts:
    """A replayed game: its moves' facts and its totals.

    Attributes:
        moves: one entry per move sent to TextArena, in order.
        revealed: Codenames: team words revealed per team (0 red, 1 blue); Blotto: rounds
            won per seat; IPD: each seat's score.
        goals: Codenames: each team's word count (9, 8).
        num_rounds: Blotto and IPD: the rounds the match lasts at most.
        temptation: IPD: the temptation payoff T.
    """

    moves: tuple[MoveFacts, ...]
    revealed: tuple[float, ...]
    goals: tuple[int, ...] = ()
    num_rounds: int = 0
    temptation: float = 0.0


def _replay(
    env_id: str, seed: int, moves: Sequence[tuple[int, str]], read: Callable[..., None]
) -> TextArenaState:
    """Play ``moves`` on a fresh game of ``env_id`` seeded ``seed``; ``read(state, seat, move)``.

    ``read`` is called before each move (with the referee's state as it was) and once more
    after the last move with ``seat`` -1.
    """
    spec = get_spec(env_id)
    if not isinstance(spec, TextArenaSpec):
        raise ValueError(f"{env_id} is not a TextArena game")
    state: TextArenaState = spec.game.new_initial_state()
    state.start(seed)
    for seat, move in moves:
        if state.is_terminal():
            raise ValueError(f"{env_id} seed {seed}: a move after the end of the game")
        if state.current_player() != seat:
            raise ValueError(
                f"{env_id} seed {seed}: seat {seat} moved where TextArena expected seat "
                f"{state.current_player()}"
            )
        read(state, seat, move)
        state.apply_action(move)
    read(state, -1, "")
    return state


def codenames_facts(env_id: str, seed: int, moves: Sequence[tuple[int, str]]) -> GameFacts:
    """The facts of a Codenames game (seats 0, 2 spymasters; 1, 3 operatives; red = 0, 1)."""
    facts: list[MoveFacts] = []
    board: dict[str, str] = {}

    def read(state: TextArenaState, seat: int, move: str) -> None:
        board.update(state.referee_env().board)
        guessed = set(state.referee_view().game_state["guessed_words"])
        if seat < 0:
            return
        team = "R" if seat < 2 else "B"
        if seat in (0, 2):
            clue = _CLUE.search(move)
            hidden = sum(1 for w, t in board.items() if t == team and w not in guessed)
            if clue is None:
                facts.append(MoveFacts(seat, "clue", "unparsed", remaining=hidden))
                return
            word, number = clue.group(1), int(clue.group(2))
            cheat = any(word in w or w in word for w in board)
            outcome = "substring" if cheat else "clue"
            facts.append(MoveFacts(seat, "clue", outcome, number=number, remaining=hidden))
            return
        guess = _GUESS.search(move)
        if guess is None:
            facts.append(MoveFacts(seat, "guess", "unparsed"))
            return
        word = guess.group(1).lower()
        if word == "pass":
            outcome = "pass"
        elif word not in board:
            outcome = "off_board"
        elif word in guessed:
            outcome = "duplicate"
        else:
            kind = board[word]
            outcome = {"A": "assassin", "N": "neutral", team: "team"}.get(kind, "opponent")
        facts.append(MoveFacts(seat, "guess", outcome))

    _replay(env_id, seed, moves, read)
    # Appendix A counts the team words each team's own operative found.
    revealed = tuple(
        float(sum(1 for m in facts if m.outcome == "team" and m.seat == operative))
        for operative in (1, 3)
    )
    goals = tuple(sum(1 for t in board.values() if t == team) for team in ("R", "B"))
    return GameFacts(tuple(facts), revealed, goals=goals)


def blotto_facts(env_id: str, seed: int, moves: Sequence[tuple[int, str]]) -> GameFacts:
    """The facts of a Colonel Blotto game: each allocation's round and that round's winner.

    An allocation TextArena refused is ``"unparsed"`` (its parser read no allocation) or
    ``"invalid"`` (it broke a rule: units that do not add up to the total), with no round
    result; the seat's retry, if TextArena grants one, is the round's allocation.
    """
    pending: list[tuple[int, int]] = []  # (index into facts, round) of allocations unresolved
    facts: list[MoveFacts] = []
    scores: list[int] = [0, 0]
    last: list[tuple[int, int, int]] = []  # (index into facts, seat, round) of the last move

    def read(state: TextArenaState, seat: int, move: str) -> None:
        game = state.referee_view().game_state
        now = [int(game["scores"][0]), int(game["scores"][1])]
        current = int(game["current_round"])
        if last:  # did TextArena take the previous move? (it resolved the round, or it stands)
            index, mover, round_ = last.pop()
            taken = current > round_ or game["player_states"][mover]["allocation_complete"]
            if not taken:
                facts[index] = replace(facts[index], outcome=refused[index])
                pending.remove((index, round_))
        if pending and current > pending[0][1]:  # the previous move resolved its round
            winner = 0 if now[0] > scores[0] else 1 if now[1] > scores[1] else -1
            for index, _ in pending:
                facts[index] = replace(facts[index], round_winner=winner)
            pending.clear()
        scores[:] = now
        if seat >= 0:
            parsed = state.referee_env()._parse_allocation_input(move) is not None
            refused[len(facts)] = "invalid" if parsed else "unparsed"
            facts.append(MoveFacts(seat, "allocation", "allocation", round=current))
            pending.append((len(facts) - 1, current))
            last.append((len(facts) - 1, seat, current))

    refused: dict[int, str] = {}  # what each move is if TextArena refuses it
    state = _replay(env_id, seed, moves, read)
    game = state.referee_view().game_state
    spec = get_spec(env_id)
    assert isinstance(spec, TextArenaSpec)
    num_rounds = int(spec.params.get("num_rounds", 0))
    revealed = (float(game["scores"][0]), float(game["scores"][1]))
    return GameFacts(tuple(facts), revealed, num_rounds=num_rounds)


def ipd_facts(env_id: str, seed: int, moves: Sequence[tuple[int, str]]) -> GameFacts:
    """The facts of a three-player IPD game: each move's round, phase and the round's gain."""
    facts: list[MoveFacts] = []
    open_round: list[int] = []  # indices into facts of the current round's moves
    scores: list[float] = []

    def read(state: TextArenaState, seat: int, move: str) -> None:
        game = state.referee_view().game_state
        now = [float(game["scores"][p]) for p in sorted(game["scores"])]
        if not scores:
            scores.extend(now)
        if now != scores:  # the last move resolved the round
            for index in open_round:
                seat_ = facts[index].seat
                facts[index] = replace(facts[index], round_gain=now[seat_] - scores[seat_])
            open_round.clear()
            scores[:] = now
        if seat < 0:
            return
        phase = "chat" if game["phase"] == "conversation" else "decision"
        outcome = "chat"
        if phase == "decision":
            outcome = "decision" if _DECISION.search(move) else "unparsed"
        facts.append(MoveFacts(seat, phase, outcome, round=int(game["round"])))
        open_round.append(len(facts) - 1)

    state = _replay(env_id, seed, moves, read)
    game = state.referee_view().game_state
    spec = get_spec(env_id)
    assert isinstance(spec, TextArenaSpec)
    revealed = tuple(float(game["scores"][p]) for p in sorted(game["scores"]))
    return GameFacts(
        tuple(facts),
        revealed,
        num_rounds=int(spec.params.get("num_rounds", 5)),
        temptation=float(spec.params.get("defect_reward", 5)),
    )
