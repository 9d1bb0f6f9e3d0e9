"""`MessageContextManager`: keep the newest N user turns, free and deterministic (no model call).

Cutting right before a user message is always safe: a user message never sits inside a tool turn, so the kept
part has every tool call paired with its results and starts with a user turn, as every provider accepts.
"""

from __future__ import annotations

from .._validate import check_int, check_positive_int
from ..messages import Message
from ._policy import oldest_kept_user, remove_completed_tool_sequences, split_system
from .base import BaseContextManager, S


def check_non_negative_int(name: str, value: object, *, allow_none: bool = False) -> None:
    """Raise `ConfigurationError` naming ``name`` unless ``value`` is an int >= 0 (or None when allowed)."""
    if value is None and allow_none:
        return
    check_int(name, value, minimum=0, hint=" or None" if allow_none else "")


class MessageContextManager(BaseContextManager[S]):
    """Keep every system message plus the ``max_messages`` newest user messages and everything after them.

    When the context holds more than ``max_messages`` user messages, it becomes: all system messages (original
    order) followed by the messages from the ``max_messages``-th newest user message on. Otherwise it is left as
    it is. ``max_messages`` must be at least 1: 0 would keep only the system messages, a view with no user turn
    that Anthropic and Gemini reject, so it is refused at construction.

    ``remove_tool_msgs=True`` first removes finished tool sequences (the assistant call, its results and the
    assistant answer that used them), both when trimming and when not; a sequence still waiting for results or for
    its answer is kept whole. Removal never changes the user count, so it does not affect when trimming starts.
    """

    def __init__(self, max_messages: int = 10, remove_tool_msgs: bool = False) -> None:
        check_positive_int("max_messages", max_messages, hint=" (0 would drop every user turn)")
        self.max_messages = max_messages
        self.remove_tool_msgs = bool(remove_tool_msgs)

    def __repr__(self) -> str:
        return f"MessageContextManager(max_messages={self.max_messages}, remove_tool_msgs={self.remove_tool_msgs})"

    def select(self, messages: list[Message]) -> list[Message] | None:
        """The trimmed context for ``messages``, or None when it should stay unchanged."""
        working = remove_completed_tool_sequences(messages) if self.remove_tool_msgs else messages
        systems, others = split_system(working)
        cut = oldest_kept_user(others, self.max_messages)
        if cut is None:
            return working if len(working) != len(messages) else None
        return systems + others[cut:]

    def trim_context(self, state: S) -> S:
        before = self._begin_trim(state)
        selected = self.select(list(state.context))
        if selected is not None:
            state.context = selected
        self._finish_trim(before, state)
        return state

    async def atrim_context(self, state: S) -> S:
        return self.trim_context(state)


__all__ = ["MessageContextManager", "check_non_negative_int"]
