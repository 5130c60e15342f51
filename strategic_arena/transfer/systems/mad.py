"""MAD, the competitive system: two debaters and a moderator (Liang et al., 2023), as MASLab.

Roles: ``affirmative`` and ``negative`` debaters, a ``moderator`` who decides after each round,
and a ``judge`` who decides when the moderator never did. One sample:

1. the affirmative answers the task; the negative is shown that answer and told it disagrees;
   the moderator reads both and replies in JSON whether one answer is preferred, and which
   (``debate_answer``);
2. while no answer is preferred, up to ``rounds`` rounds in all: each debater is shown the
   other's latest answer ("Do you agree with my perspective?") and the moderator judges again;
3. no answer after the last round: the judge (the moderator's instructions) is shown both
   debaters' first answers, lists the candidates, then gives the final ``debate_answer``.

The final answer is the moderator's (or judge's) ``debate_answer``; checked like a
single-agent reply, put in a box first when it holds none. The moderator's reply is endpoint
text, read as JSON through :func:`strategic_arena.door.json_data.decode` (the object between
its first ``{`` and last ``}``, code fences dropped): an unreadable one is "no preference",
and an unreadable judge's reply is checked as it stands. The prompts' wording is MASLab's
``methods/mad/mad_prompt.py`` (the MAD paper's), with the task (:func:`.task_text`) as the
debate topic; docs/transfer.md says what differs from MASLab.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from strategic_arena.door import Refused
from strategic_arena.door.json_data import decode
from strategic_arena.transfer.systems.conversation import (
    Conversation,
    ConversationSystem,
    Messages,
)

__all__ = ["MAD_ROLES", "Mad", "verdict"]

#: MAD's roles.
MAD_ROLES = ("affirmative", "negative", "moderator", "judge")

PLAYER_META = (
    "You are a debater. Hello and welcome to the debate. It's not necessary to fully agree "
    "with each other's perspectives, as our objective is to find the correct answer.\n"
    "The debate topic is stated as follows:\n{topic}"
)
MODERATOR_META = (
    "You are a moderator. There will be two debaters involved in a debate. They will present "
    'their answers and discuss their perspectives on the following topic: "{topic}"\n'
    "At the end of each round, you will evaluate answers and decide which is correct."
)
NEGATIVE = "{answer}\n\nYou disagree with my answer. Provide your answer and reasons."
DEBATE = "{answer}\n\nDo you agree with my perspective? Please provide your reasons and answer."
MODERATOR = (
    "Now the {round} round of debate for both sides has ended.\n\nAffirmative side arguing:\n"
    "{affirmative}\n\nNegative side arguing: {negative}\n\nYou, as the moderator, will evaluate "
    "both sides' answers and determine if there is a clear preference for an answer candidate. "
    "If so, please summarize your reasons for supporting affirmative/negative side and give the "
    "final answer that you think is correct, and the debate will conclude. If not, the debate "
    "will continue to the next round. Now please output your answer in json format, with the "
    'format as follows: {{"Whether there is a preference": "Yes or No", "Supported Side": '
    '"Affirmative or Negative", "Reason": "", "debate_answer": ""}}. Please strictly output in '
    "JSON format, do not output irrelevant content."
)
JUDGE_CANDIDATES = (
    "Affirmative side arguing: {affirmative}\n\nNegative side arguing: {negative}\n\n"
    "Now, what answer candidates do we have? Present them without reasons."
)
JUDGE_FINAL = (
    "Therefore, {topic}\nPlease summarize your reasons and give the final answer that you think "
    "is correct. Now please output your answer in json format, with the format as follows: "
    '{{"Reason": "", "debate_answer": ""}}. Please strictly output in JSON format, do not '
    "output irrelevant content."
)
ORDINALS = ("first", "second", "third", "fourth", "fifth", "sixth", "seventh", "eighth")

_FENCE = re.compile(r"```(?:json)?")


def ordinal(number: int) -> str:
    """``first``, ``second``... (``11th`` past the list)."""
    return ORDINALS[number - 1] if 1 <= number <= len(ORDINALS) else f"{number}th"


def verdict(reply: str) -> str | None:
    """The ``debate_answer`` of a moderator's or judge's JSON reply; ``None``: none given."""
    text = _FENCE.sub("", reply)
    start, end = text.find("{"), text.rfind("}")
    if start < 0 or end <= start:
        return None
    try:
        value: Any = decode(text[start : end + 1], "moderator reply", max_depth=8)
    except Refused:
        return None
    answer = value.get("debate_answer") if isinstance(value, dict) else None
    if isinstance(answer, bool) or not isinstance(answer, str | int | float):
        return None
    return str(answer).strip() or None


@dataclass
class Agent:
    """One role's memory: its system message, then the turns it was told and replied."""

    role: str
    messages: Messages = field(default_factory=list)

    async def say(self, conversation: Conversation, told: str) -> str:
        """Tell the role ``told``; its reply, remembered."""
        self.messages.append({"role": "user", "content": told})
        reply = await conversation.ask(self.role, list(self.messages))
        self.messages.append({"role": "assistant", "content": reply})
        return reply


def agent(role: str, system: str) -> Agent:
    """A role whose memory starts with ``system``."""
    return Agent(role, [{"role": "system", "content": system}])


@dataclass(frozen=True)
class Mad(ConversationSystem):
    """The MAD system (``rounds``: the most debate rounds; MASLab: 3)."""

    name: str = "mad"

    async def play(self, conversation: Conversation, topic: str) -> str:
        """The debate of one sample; the final answer's text."""
        affirmative = agent("affirmative", PLAYER_META.format(topic=topic))
        negative = agent("negative", PLAYER_META.format(topic=topic))
        moderator = agent("moderator", MODERATOR_META.format(topic=topic))
        first_affirmative = await affirmative.say(conversation, topic)
        first_negative = await negative.say(conversation, NEGATIVE.format(answer=first_affirmative))
        said = (first_affirmative, first_negative)
        for number in range(1, self.rounds + 1):
            if number > 1:
                rebuttal = await affirmative.say(conversation, DEBATE.format(answer=said[1]))
                reply = await negative.say(conversation, DEBATE.format(answer=rebuttal))
                said = (rebuttal, reply)
            judged = await moderator.say(
                conversation,
                MODERATOR.format(round=ordinal(number), affirmative=said[0], negative=said[1]),
            )
            if (answer := verdict(judged)) is not None:
                return self.boxed(conversation, answer)
        judge = agent("judge", MODERATOR_META.format(topic=topic))
        await judge.say(
            conversation,
            JUDGE_CANDIDATES.format(affirmative=first_affirmative, negative=first_negative),
        )
        final = await judge.say(conversation, JUDGE_FINAL.format(topic=topic))
        answer = verdict(final)
        return final if answer is None else self.boxed(conversation, answer)

    @staticmethod
    def boxed(conversation: Conversation, answer: str) -> str:
        """``answer`` as a checked reply: as it stands if it gives an answer, else boxed."""
        return answer if conversation.readable(answer) is not None else f"\\boxed{{{answer}}}"
