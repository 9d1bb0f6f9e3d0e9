"""Offline demo: which messages MessageContextManager keeps when there are more user turns than allowed.

Run: python examples/trim_demo.py
"""

from typing import Literal

from windowkeeper.core.state import AgentState, Message, MessageContextManager

conversation: list[tuple[Literal["system", "user", "assistant"], str]] = [
    ("system", "You are terse."),
    ("user", "First question"),
    ("assistant", "First answer"),
    ("user", "Second question"),
    ("assistant", "Second answer"),
    ("user", "Third question"),
]
state = AgentState(context=[Message.text_message(text, role=role) for role, text in conversation])

# Two user turns allowed: the first question and its answer are dropped, the system prompt stays first.
manager = MessageContextManager(max_messages=2)
trimmed = manager.trim_context(state)

for message in trimmed.context:
    print(message.role, "|", message.text())
