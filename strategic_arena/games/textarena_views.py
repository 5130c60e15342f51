"""TextArena's conversation wrappers, converting only the messages new since the last call.

TextArena's ``LLMObservationWrapper`` and ``GameMessagesObservationWrapper`` keep every message
a seat was sent and, at each ``get_observation``, format them all again into one string: a game
of ``n`` moves formats ``O(n^2)`` messages (in Pig Dice, 70% of TextArena's own time). The
subclasses here give the same string by formatting only the messages filed since the seat's
previous call and appending them to the text kept from it. :func:`convert_incrementally` makes
the wrappers of one TextArena env such subclasses (their ``__class__`` is swapped: state,
``isinstance`` and everything else stay TextArena's).

What the text kept is trusted for, and checked: the seat's message list is the same list,
only extended (TextArena only ever extends it); with ``LLMObservationWrapper`` the role names
are the same as when the kept text was made (compared at every call: TextArena looks them up
afresh each time); and every message is a ``str`` (anything else is formatted TextArena's way,
afresh, at every call). Otherwise the whole text is made again, as TextArena makes it.

Imported only when a TextArena game starts (it imports TextArena).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from textarena.core import GAME_ID, ObservationType
from textarena.wrappers.ObservationWrappers.llm_observation_wrapper import (
    GameMessagesObservationWrapper,
    LLMObservationWrapper,
)

Message = tuple[int, Any, Any]
"""What TextArena files for a seat: ``(sender id, message, observation type)``."""

Kept = tuple[list[Message], int, str, Any]
"""A seat's kept text: its message list, how many of them the text holds, the text, and what
the text's formatting depended on (the role names, or ``None``)."""

#: The observation types ``GameMessagesObservationWrapper`` leaves out.
_HIDDEN_TYPES = (ObservationType.PLAYER_ACTION, ObservationType.GAME_ADMIN)


def _extend(
    wrapper: Any,
    player_id: int,
    context: Any,
    line: Callable[[Message, Any], str],
) -> str | None:
    """The seat's text: the kept one plus ``line`` of each message new since; ``None``: give up.

    ``context`` is what ``line`` formats with (compared with the kept text's); ``None`` is
    returned when a message is not a ``str`` (the caller makes the text TextArena's way).
    """
    messages: list[Message] | None = wrapper.full_observations.get(player_id)
    if messages is None:
        return ""
    kept_texts: dict[int, Kept] = wrapper.__dict__.setdefault("_kept_texts", {})
    kept = kept_texts.get(player_id)
    done, text = 0, ""
    if kept is not None and kept[0] is messages and kept[1] <= len(messages) and kept[3] == context:
        done, text = kept[1], kept[2]
    parts = [text]
    for message in messages[done:]:
        if type(message[1]) is not str:
            kept_texts.pop(player_id, None)
            return None
        parts.append(line(message, context))
    text = "".join(parts)
    kept_texts[player_id] = (messages, len(messages), text, context)
    return text


def _conversation_line(message: Message, roles: dict[Any, Any]) -> str:
    """One message as ``LLMObservationWrapper`` writes it: a new line, ``[sender] message``."""
    sender_id, text, _ = message
    sender = "GAME" if sender_id == GAME_ID else roles.get(sender_id, f"Player {sender_id}")
    return f"\n[{sender}] {text}"


def _game_message_line(message: Message, _context: Any) -> str:
    """One message as ``GameMessagesObservationWrapper`` writes it (players' moves left out)."""
    _, text, observation_type = message
    return "" if observation_type in _HIDDEN_TYPES else f"\n {text}"


class IncrementalLLMObservationWrapper(LLMObservationWrapper):
    """``LLMObservationWrapper``'s text, made from the new messages only (see the module doc)."""

    def _convert_obs_to_str(self, player_id: int) -> Any:
        roles = getattr(getattr(self.env, "state", None), "role_mapping", None)
        if not isinstance(roles, dict):
            return super()._convert_obs_to_str(player_id)
        # A snapshot: the kept text is reused only while the role names are these.
        text = _extend(self, player_id, dict(roles), _conversation_line)
        return super()._convert_obs_to_str(player_id) if text is None else text


class IncrementalGameMessagesObservationWrapper(GameMessagesObservationWrapper):
    """``GameMessagesObservationWrapper``'s text, made from the new messages only."""

    def _convert_obs_to_str(self, player_id: int) -> Any:
        text = _extend(self, player_id, None, _game_message_line)
        return super()._convert_obs_to_str(player_id) if text is None else text


#: TextArena's wrapper class -> the subclass that converts incrementally.
INCREMENTAL: dict[type, type] = {
    LLMObservationWrapper: IncrementalLLMObservationWrapper,
    GameMessagesObservationWrapper: IncrementalGameMessagesObservationWrapper,
}


def convert_incrementally(env: Any) -> None:
    """Make each of ``env``'s wrappers that has an incremental subclass an instance of it.

    Only instances of exactly TextArena's class are changed (a subclass of it may format
    otherwise); the wrapper chain is followed through each wrapper's ``env``.
    """
    layer = env
    while layer is not None:
        incremental = INCREMENTAL.get(type(layer))
        if incremental is not None:
            layer.__class__ = incremental
        layer = vars(layer).get("env") if hasattr(layer, "__dict__") else None
