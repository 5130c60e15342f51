"""AutoGen, the cooperative system: an assistant and a user proxy (Wu et al., 2024), as MASLab.

Roles: the ``assistant`` (AutoGen's AssistantAgent system message, without code execution)
and the ``user_proxy`` (an LLM with no system message that sees the conversation from the
user's side). One sample:

1. the assistant answers the task; if its reply holds ``TERMINATE`` that reply is final;
2. else, up to ``rounds`` assistant replies in all: the user proxy answers the assistant's
   reply (a ``TERMINATE`` in it makes that assistant reply final), and the assistant answers
   the user proxy (a ``TERMINATE`` in it makes it final);
3. after the last round, the assistant's last reply is final.

The final reply is checked like a single-agent reply (its last box, or its letter). The
wording of the assistant's system message is MASLab's ``methods/autogen/prompt.py``
(``ASSISTANT_AGENT_SYSTEM_MESSAGE``, itself AutoGen's, less its code-execution part); the task
is :func:`.task_text`. Why this is not the ``autogen-agentchat`` package, and what differs from
MASLab, is in docs/transfer.md.
"""

from __future__ import annotations

from dataclasses import dataclass

from strategic_arena.transfer.systems.conversation import (
    Conversation,
    ConversationSystem,
    Messages,
)

__all__ = ["AUTOGEN_ROLES", "TERMINATE", "AutoGen"]

#: AutoGen's roles.
AUTOGEN_ROLES = ("assistant", "user_proxy")

#: The word that ends the conversation.
TERMINATE = "TERMINATE"

ASSISTANT_SYSTEM = """You are a helpful AI assistant.
Solve tasks using your language skills.
You should not write any code and should solve the problem using your language skills as far as you can.
Solve the task step by step if you need to. If a plan is not provided, explain your plan first.
When you find an answer, verify the answer carefully. Include verifiable evidence in your response if possible.
In every response, please conclude with the current final answer in a specific format at the end(like "The final answer is" with the final answer in the box at the end) to ensure the answer is available even if the conversation is interrupted.
Reply "TERMINATE" in the end when everything is done."""  # noqa: E501  (MASLab's wording, kept whole)


@dataclass(frozen=True)
class AutoGen(ConversationSystem):
    """The AutoGen two-agent system (``rounds``: the most assistant replies; MASLab: 3)."""

    name: str = "autogen"

    async def play(self, conversation: Conversation, task: str) -> str:
        """The conversation of one sample; the final assistant reply."""
        system: Messages = [{"role": "system", "content": ASSISTANT_SYSTEM}]
        assistant_view: Messages = [{"role": "user", "content": task}]
        proxy_view: Messages = [{"role": "assistant", "content": task}]
        reply = await conversation.ask("assistant", system + assistant_view)
        for _ in range(self.rounds - 1):
            if TERMINATE in reply:
                return reply
            proxy_view.append({"role": "user", "content": reply})
            assistant_view.append({"role": "assistant", "content": reply})
            feedback = await conversation.ask("user_proxy", list(proxy_view))
            if TERMINATE in feedback:
                return reply
            proxy_view.append({"role": "assistant", "content": feedback})
            assistant_view.append({"role": "user", "content": feedback})
            reply = await conversation.ask("assistant", system + assistant_view)
        return reply
