"""Recall as one step of a trim, for every manager whose trigger does not count recall messages.

A manager with recall does three things around its own cut: index the view it starts from (`Recall.observe`),
hand over what the cut dropped (`Recall.left`), and place the recall message for a new user message that refers
back, in the room the view leaves of the recall budget (`fit_and_place`). `RecallStep` is those three, written
once: a strategy starts it before cutting (`BaseContextManager.start_recall`) and finishes it on the state it
made. The token-budget manager counts recall in its own budget and places it in its core instead.
"""

from __future__ import annotations

from ..errors import ConfigurationError
from ..messages import Message
from ..prompt.recall import is_recall
from ..state import AgentState
from ..tokens import TokenCounter
from .recall import Recall, newest_user, place_recall


class RecallStep:
    """The recall work around one trim of one thread (see the module docstring)."""

    __slots__ = ("budget", "context", "key", "recall")

    def __init__(self, recall: Recall, key: str, context: list[Message], budget: int) -> None:
        self.recall = recall
        self.key = key
        self.context = context
        self.budget = budget
        recall.observe(key, context)

    def finish(self, state: AgentState, *, extra: int = 0) -> None:
        """Hand over what left ``state.context`` since the step started, then fit and place its recall messages
        in ``budget`` beside ``extra`` tokens (a summary sent with the view)."""
        kept = {m.message_id for m in state.context}
        self.recall.left(self.key, [m for m in self.context if m.message_id not in kept])
        view = list(state.context)
        placed = fit_and_place(self.recall, self.key, view, self.budget, extra=extra)
        if placed is not view:
            state.context = placed


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
    step changes it."""
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
