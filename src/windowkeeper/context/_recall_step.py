"""Recall as one step of a trim: the one place every manager, the memory and `Window` wire the recall index.

A manager with recall does the same few things around its own cut, whatever the cut is: note the messages that
arrived (`Recall.observe`), hand over the originals of what left the view (`Recall.left`), and place the recall
message for a new user message that refers back, in the room its budget leaves (`place_recall`). A thread it
never saw (a new process continuing it, `Window` after a restart) is seeded the same way from the thread's
history; a forgotten thread's index goes with it. `RecallStep` is those operations for one thread, written once:

- the managers whose trigger does not count recall (message, summary, and any strategy written as a planning
  core) start it before cutting (`BaseContextManager.start_recall`, which observes the view) and `finish` it on
  the state they made: what left is handed over, the recall messages are fitted to ``budget`` (`fit_recall`) and
  the new one placed;
- the token-budget manager counts recall in its own budget, so it calls the step's parts from its core where its
  running totals say (`observe` what arrived, `hand_over` what a compaction took out, `place` for a new turn);
- the memory's manager keeps the recall messages beside the memory's view, so it calls the same parts and uses
  `continues` to tell whether the memory changed the view's prefix.

The handover of a thread (`seed`, `forget_threads`) is called by `BaseContextManager.import_thread` and `forget`,
so `Window._reseed` reaches recall only through the manager's contract.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

from ..errors import ConfigurationError
from ..messages import Message, same_message
from ..prompt.recall import is_recall
from ..state import AgentState
from ..tokens import TokenCounter
from .pointers import is_offloaded
from .recall import Recall, newest_user, place_recall


class RecallStep:
    """The recall work of one thread around one trim (see the module docstring).

    ``context`` is the view the trim starts from: when given it is observed now, and `finish` hands over what of
    it is gone from the trimmed state. ``budget`` is the tokens the view and its recall messages may take (used
    by `finish`; a manager that places with `place` gives the room itself).
    """

    __slots__ = ("budget", "context", "key", "recall")

    def __init__(
        self, recall: Recall, key: str, context: list[Message] | None = None, budget: int | None = None
    ) -> None:
        self.recall = recall
        self.key = key
        self.context = context if context is not None else []
        self.budget = budget
        if context is not None:
            recall.observe(key, context)

    # -- the parts ----------------------------------------------------------------------------------------------

    def observe(self, messages: Iterable[Message]) -> None:
        """Note where the messages that arrived were said (their position and user turn)."""
        self.recall.observe(self.key, messages)

    def left(self, messages: Iterable[Message]) -> None:
        """Hand over ``messages`` (originals) that left the view, to be indexed."""
        self.recall.left(self.key, messages)

    def hand_over(
        self,
        before: Sequence[Message],
        after: Sequence[Message],
        *,
        restore: Callable[[Message], Message] | None = None,
        unread: int = 0,
    ) -> None:
        """Hand over what a cut took out of the view: the messages of ``before`` missing from ``after``.

        With ``restore`` (a manager that replaces bodies with pointers) each is handed over as its original, and
        the originals of the pointers in ``after`` go too. ``before[:unread]`` is what a plan dropped without
        reading it: it goes as one reference (recall indexes it newest first over later calls), so a first call
        on a long history does not look at each of its messages here.
        """
        if unread:
            self.left(before[:unread])
            before = before[unread:]
        kept = {m.message_id for m in after}
        if restore is None:
            self.left([m for m in before if m.message_id not in kept])
            return
        gone = [restore(m) for m in before if m.message_id not in kept]
        gone.extend(restore(m) for m in after if is_offloaded(m))
        self.left(gone)

    def served(self) -> str | None:
        """Id of the user message the thread's recall was last decided for."""
        return self.recall.served(self.key)

    def place(
        self, messages: Sequence[Message], room: int | Callable[[], int], *, seen: Sequence[Message] | None = None
    ) -> tuple[list[Message], int, int] | None:
        """``messages`` with the recall message for their newest user message placed in ``room`` tokens
        (`place_recall`: decided once per user message, ``seen`` as there); None when nothing is placed."""
        return place_recall(self.recall, self.key, messages, room, seen=seen)

    def fit_and_place(self, messages: list[Message], budget: int, *, extra: int = 0) -> list[Message]:
        """``messages`` fitted to ``budget`` (`fit_recall`) with the recall message for a new user message placed,
        sized to what they and ``extra`` tokens (a summary sent beside them) leave; ``messages`` itself when neither
        step changes it."""
        counter = self.recall.counter
        fitted = fit_recall(messages, budget, counter, extra=extra)
        placed = self.place(fitted, lambda: budget - counter.count_messages(fitted) - extra)
        return placed[0] if placed is not None else fitted

    # -- the whole step, for a manager whose trigger does not count recall ------------------------------------

    def finish(self, state: AgentState, *, extra: int = 0) -> None:
        """Hand over what left ``state.context`` since the step started, then fit and place its recall messages
        in ``budget`` beside ``extra`` tokens (a summary sent with the view)."""
        if self.budget is None:
            raise ConfigurationError("RecallStep.finish needs the step's budget (tokens of the view and its recall)")
        self.hand_over(self.context, state.context)
        view = list(state.context)
        placed = self.fit_and_place(view, self.budget, extra=extra)
        if placed is not view:
            state.context = placed

    # -- a thread handed over -----------------------------------------------------------------------------------

    def seed(
        self,
        history: Sequence[Message],
        in_view: Callable[[Message], bool],
        *,
        originals: Iterable[Message] = (),
        served: Message | None = None,
    ) -> None:
        """Take over a thread this process never indexed: ``history`` (the whole thread, in order) is observed,
        what of it ``in_view`` says is no longer in the view goes to the index with ``originals`` (of pointers the
        view holds), and ``served`` (the user turn recall had decided for) is marked decided again, so a question
        about an early turn is answered as before the handover."""
        self.observe(history)
        gone = [m for m in history if not in_view(m)]
        gone.extend(originals)
        self.left(gone)
        if served is not None:
            self.recall.build(self.key, served, 0)  # room 0: marks the turn as decided, builds nothing


def continues(messages: Sequence[Message], prefix: Sequence[Message]) -> bool:
    """Whether ``messages`` starts with ``prefix`` (the same objects, or equal copies after a reload): while a view
    only grows, the recall messages placed in it stay where they are."""
    return len(messages) >= len(prefix) and all(map(same_message, messages, prefix))


def forget_threads(recall: Recall, threads: Iterable[str]) -> None:
    """Drop what ``recall`` keeps of ``threads`` (a deleted thread must not stay searchable), in one pass."""
    gone = list(threads)
    if gone:
        recall.forget(*gone)


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


def make_recall(recall: object, counter: TokenCounter | None) -> Recall | None:
    """The `Recall` a manager's ``recall`` argument asks for: a new one for True, the given one, or None."""
    if isinstance(recall, Recall):
        return recall
    if not isinstance(recall, bool):
        raise ConfigurationError(f"recall must be True, False or a Recall instance, got {recall!r}")
    return Recall(counter) if recall else None
