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


def _kept_text(wrapper: Any, player_id: int, messages: list[Message], context: Any) -> Kept:
    """The seat's kept text if it can be extended (same list, only grown, same ``context``).

    Otherwise an empty one: the whole text is made again from the first message.
    """
    kept: Kept | None = wrapper.__dict__.get("_kept_texts", {}).get(player_id)
    if (
        kept is not None
        and kept[0] is messages
        and kept[1] <= len(messages)
        and (kept[3] is context or kept[3] == context)
    ):
        return kept
    return (messages, 0, "", context)


def _keep(wrapper: Any, player_id: int, kept: Kept) -> str:
    """Keep ``kept`` for the seat's next call; its text."""
    wrapper.__dict__.setdefault("_kept_texts", {})[player_id] = kept
    return kept[2]


class IncrementalLLMObservationWrapper(LLMObservationWrapper):
    """``LLMObservationWrapper``'s text, made from the new messages only (see the module doc)."""

    def _convert_obs_to_str(self, player_id: int) -> Any:
        messages: list[Message] | None = self.full_observations.get(player_id)
        if messages is None:
            return ""
        roles = getattr(getattr(self.env, "state", None), "role_mapping", None)
        if not isinstance(roles, dict):
            return super()._convert_obs_to_str(player_id)
        _, done, text, names = _kept_text(self, player_id, messages, roles)
        if names is roles:  # a snapshot: the kept text is reused only while the names are these
            names = dict(roles)
        parts = [text]
        for sender_id, message, _ in messages[done:]:
            if type(message) is not str:  # formatted afresh at every call, as TextArena does
                return super()._convert_obs_to_str(player_id)
            sender = "GAME" if sender_id == GAME_ID else roles.get(sender_id, f"Player {sender_id}")
            parts.append(f"\n[{sender}] {message}")
        return _keep(self, player_id, (messages, len(messages), "".join(parts), names))


class IncrementalGameMessagesObservationWrapper(GameMessagesObservationWrapper):
    """``GameMessagesObservationWrapper``'s text, made from the new messages only."""

    def _convert_obs_to_str(self, player_id: int) -> Any:
        messages: list[Message] | None = self.full_observations.get(player_id)
        if messages is None:
            return ""
        _, done, text, _ = _kept_text(self, player_id, messages, None)
        parts = [text]
        for _, message, observation_type in messages[done:]:
            if observation_type not in _HIDDEN_TYPES:
                if type(message) is not str:
                    return super()._convert_obs_to_str(player_id)
                parts.append(f"\n {message}")
        return _keep(self, player_id, (messages, len(messages), "".join(parts), None))


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
