"""`DocumentedEstimate`: the reference's documented token estimate, one token per four characters, as a counter.

`SummaryContextManager`'s triggers and bounds are specified in the reference documentation on this estimate (the
text of each message plus the string form of its tool calls, four characters a token, rounded down once over the
whole list), so they fire where the reference says they do. It is a `TokenCounter` like the exact ones, so the
estimate is computed in one place and every code path that uses it says which counter it measures with.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from ..messages import Message


def _chars(message: Message) -> int:
    """Characters the estimate sees in a message: its text, plus the string form of its tool calls."""
    chars = len(message.text())
    calls = message.tools_calls or [{"id": c.id, "name": c.name, "args": c.args} for c in message.tool_call_blocks()]
    if calls:
        chars += len(str(calls))
    return chars


class DocumentedEstimate:
    """One token per `chars_per_token` characters, rounded down; a list is rounded once over its total."""

    name = "documented:chars/4"
    chars_per_token = 4

    def count_text(self, text: str) -> int:
        return len(text) // self.chars_per_token if text else 0

    def count_message(self, message: Message) -> int:
        return _chars(message) // self.chars_per_token

    def count_messages(self, messages: Sequence[Message] | Iterable[Message]) -> int:
        return sum(_chars(message) for message in messages) // self.chars_per_token


DOCUMENTED_ESTIMATE = DocumentedEstimate()
"""The shared instance (it holds no state)."""
