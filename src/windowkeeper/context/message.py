"""`MessageContextManager`: keep the newest N user turns, free and deterministic (no model call).

Cutting right before a user message is always safe: a user message never sits inside a tool turn, so the kept
part has every tool call paired with its results and starts with a user turn, as every provider accepts.

With ``recall`` on (off by default: this is the reference's simple manager), what a cut drops is handed to a
`Recall` index, and a new user message that refers back gets a recall message right before it, filling what the
view leaves of ``recall_budget`` tokens. Recall messages are never counted as user turns; one stays in the view
while the user message it serves does and the view with it fits ``recall_budget`` (past that the oldest go first).
"""

from __future__ import annotations

import logging
from collections.abc import Generator

from .._validate import check_int, check_positive_int
from ..errors import ConfigurationError
from ..messages import Message
from ..tokens import TokenCounter
from ._policy import oldest_kept_user, remove_completed_tool_sequences, split_system
from ._recall_step import make_recall
from .base import BaseContextManager, S, SummaryRequest
from .recall import Recall, join_recall, split_recall

logger = logging.getLogger(__name__)


def check_non_negative_int(name: str, value: object, *, allow_none: bool = False) -> None:
    """Raise `ConfigurationError` naming ``name`` unless ``value`` is an int >= 0 (or None when allowed)."""
    if value is None and allow_none:
        return
    check_int(name, value, minimum=0, hint=" or None" if allow_none else "")


class MessageContextManager(BaseContextManager[S]):
    """Keep every system message plus the ``max_messages`` newest user messages and everything after them.

    When the context holds more than ``max_messages`` user messages, it becomes: all system messages (original
    order) followed by the messages from the ``max_messages``-th newest user message on. Otherwise it is left as
    it is. ``max_messages=0`` keeps no earlier user turn: the view is the system messages plus the turn in
    progress (the newest user message and what follows it), never the system messages alone, because a view with
    no user turn is rejected by Anthropic and Gemini and the model would not know what it is answering. A log line
    (INFO, once per manager) says so the first time it keeps that turn.

    ``remove_tool_msgs=True`` first removes finished tool sequences (the assistant call, its results and the
    assistant answer that used them), both when trimming and when not; a sequence still waiting for results or for
    its answer is kept whole. Removal never changes the user count, so it does not affect when trimming starts.

    ``recall=True`` (or a `Recall` to share) indexes what is dropped and places a recall message before a new
    user message that asks for it (see the module docstring). This manager keeps messages by count, so it has no
    token budget of its own: ``recall_budget`` (required with recall) is the token budget of the view plus its
    recall message, counted with ``counter`` (default: the recall's counter).
    """

    def __init__(
        self,
        max_messages: int = 10,
        remove_tool_msgs: bool = False,
        *,
        recall: bool | Recall = False,
        recall_budget: int | None = None,
        counter: TokenCounter | None = None,
    ) -> None:
        check_non_negative_int("max_messages", max_messages)
        self.max_messages = max_messages
        self._told_zero = False
        self.remove_tool_msgs = bool(remove_tool_msgs)
        self.recall: Recall | None = make_recall(recall, counter)
        if recall_budget is not None:
            check_positive_int("recall_budget", recall_budget, hint=" (tokens) or None")
        if self.recall is not None and recall_budget is None:
            raise ConfigurationError(
                "MessageContextManager(recall=True) needs recall_budget=<tokens>: it keeps messages by count, so "
                "recall needs the token budget of the view it fills (e.g. the model's prompt budget)",
            )
        self.recall_budget = recall_budget

    def __repr__(self) -> str:
        extra = f", recall_budget={self.recall_budget}" if self.recall is not None else ""
        return (
            f"MessageContextManager(max_messages={self.max_messages}, remove_tool_msgs={self.remove_tool_msgs}{extra})"
        )

    def select(self, messages: list[Message]) -> list[Message] | None:
        """The trimmed context for ``messages``, or None when it should stay unchanged.

        Recall messages are not user turns: they are left out of the count and kept before the user message they
        serve while it is kept.
        """
        history, recalls = split_recall(messages)
        working = remove_completed_tool_sequences(history) if self.remove_tool_msgs else history
        systems, others = split_system(working)
        cut = oldest_kept_user(others, max(self.max_messages, 1))
        if cut is not None and self.max_messages == 0 and not self._told_zero:
            self._told_zero = True
            logger.info(
                "MessageContextManager(max_messages=0) keeps the newest user turn (the request being answered): "
                "a view with no user message is invalid for Anthropic and Gemini"
            )
        if cut is None:
            return join_recall(working, recalls) if len(working) != len(history) else None
        return join_recall(systems + others[cut:], recalls)

    def plan(self, state: S) -> Generator[SummaryRequest, str | None, S]:
        """The planning core (`BaseContextManager`): a cut by count, no I/O, so it never yields."""
        yield from ()
        before = self._begin_trim(state)
        step = self.start_recall(state)
        selected = self.select(list(state.context))
        if selected is not None:
            state.context = selected
        if step is not None:
            step.finish(state)
        self._finish_trim(before, state)
        return state
