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

from .._validate import check_int, check_positive_int
from ..errors import ConfigurationError
from ..messages import Message
from ..tokens import TokenCounter
from ._policy import oldest_kept_user, remove_completed_tool_sequences, split_system
from .base import BaseContextManager, S
from .metrics import thread_key
from .recall import Recall, is_recall, join_recall, newest_user, place_recall, split_recall

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

    def trim_context(self, state: S) -> S:
        before = self._begin_trim(state)
        context = list(state.context)
        selected = self.select(context)
        if self.recall is not None:
            selected = self._recall(thread_key(state), context, selected)
        if selected is not None:
            state.context = selected
        self._finish_trim(before, state)
        return state

    def _recall(self, key: str, context: list[Message], selected: list[Message] | None) -> list[Message] | None:
        """Index what the cut dropped, then place the recall message for a new user message (if it asks back)."""
        recall = self.recall
        assert recall is not None and self.recall_budget is not None
        recall.observe(key, context)
        view = context if selected is None else selected
        if selected is not None:
            kept = {m.message_id for m in selected}
            recall.left(key, [m for m in context if m.message_id not in kept])
        fitted = fit_and_place(recall, key, view, self.recall_budget)
        return fitted if fitted is not view else selected

    async def atrim_context(self, state: S) -> S:
        return self.trim_context(state)


def fit_recall(messages: list[Message], budget: int, counter: TokenCounter, *, extra: int = 0) -> list[Message]:
    """``messages`` without their oldest recall messages while they and ``extra`` tokens exceed ``budget``.

    For a manager whose trigger does not count recall messages (so recall never changes when it summarizes or
    cuts): a recall message is sized to the room left when it is placed, and as the view grows the older ones go
    first. Dropping one changes the prompt only from where it stood, near the end; a summary or cut it caused
    would change it from the start. The recall message of the newest user message (the turn being answered) goes
    last: only when the turn's own tool steps have grown the view past the budget with it. Costs nothing while the
    view holds no recall message.
    """
    recalls = [m for m in messages if is_recall(m)]
    if not recalls:
        return messages
    newest = newest_user(messages)
    serving = str(messages[newest].message_id) if newest is not None else None
    ordered = [m for m in recalls if m.metadata.get("serves") != serving]
    ordered += [m for m in recalls if m.metadata.get("serves") == serving]
    total = counter.count_messages(messages) + extra
    drop: set[int] = set()
    for message in ordered:
        if total <= budget:
            break
        drop.add(id(message))
        total -= counter.count_message(message)
    return [m for m in messages if id(m) not in drop] if drop else messages


def fit_and_place(
    recall: Recall, thread: str, messages: list[Message], budget: int, *, extra: int = 0
) -> list[Message]:
    """``messages`` fitted to ``budget`` (`fit_recall`) with the recall message for a new user message placed,
    sized to what they and ``extra`` tokens (a summary sent beside them) leave; ``messages`` itself when neither
    step changes it. The recall step of every manager whose trigger does not count recall messages."""
    counter = recall.counter
    fitted = fit_recall(messages, budget, counter, extra=extra)
    placed = place_recall(recall, thread, fitted, lambda: budget - counter.count_messages(fitted) - extra)
    return placed[0] if placed is not None else fitted


def make_recall(recall: object, counter: TokenCounter | None) -> Recall | None:
    """The `Recall` a manager's ``recall`` argument asks for: a new one for True, the given one, or None."""
    if isinstance(recall, Recall):
        return recall
    if not isinstance(recall, bool):
        raise ConfigurationError(f"recall must be True, False or a Recall instance, got {recall!r}")
    return Recall(counter) if recall else None


__all__ = ["MessageContextManager", "check_non_negative_int", "fit_and_place", "fit_recall", "make_recall"]
