"""A compaction gives up the recall messages of earlier turns that cost more than the turn they served before it
cuts any of the conversation; smaller ones (an agent's turn of tool output) stay and age out with their turn."""

from __future__ import annotations

from windowkeeper import Message
from windowkeeper.context._compaction import Limits, Segment, without_old_recall
from windowkeeper.prompt.recall import MARK_KEY, RECALL_MARK


def limits(low: int) -> Limits:
    return Limits(
        low=low,
        high=2 * low,
        other_tokens=0,
        keep_tool_results=1,
        clear_min_tokens=100,
        keep_replies=1,
        reply_min_tokens=None,
        max_summary_tokens=100,
        summary_budget=100,
        chat_summary_budget=100,
        summary_mode="append",
        summary_instructions=None,
        summarize=False,
    )


def unit(kind: str, name: str, tokens: int, *, recall: bool = False) -> Segment:
    role = "assistant" if kind == "assistant" else "user"
    message = Message.text_message(name, role=role, message_id=name)
    if recall:
        message = message.model_copy(update={"metadata": {MARK_KEY: RECALL_MARK}})
    return Segment(kind, (message,), (tokens,))  # type: ignore[arg-type]


def names(segs: list[Segment]) -> list[str]:
    return [str(m.message_id) for s in segs for m in s.messages]


def chat() -> list[Segment]:
    return [
        unit("user", "u0", 10),
        unit("assistant", "a0", 10),
        unit("user", "r1", 500, recall=True),
        unit("user", "u1", 10),
        unit("assistant", "a1", 10),
        unit("user", "r2", 15, recall=True),
        unit("user", "u2", 10),
        unit("assistant", "a2", 10),
        unit("user", "r3", 500, recall=True),
        unit("user", "u3", 10),
    ]


def test_a_recall_message_larger_than_its_turn_goes_first_the_newest_turns_stays() -> None:
    segs = chat()
    kept = without_old_recall(segs, limits(100), 0)
    # r1 (500 tokens for a 20-token turn) goes; r2 is smaller than its turn; r3 serves the newest user message
    assert names(kept) == ["u0", "a0", "u1", "a1", "r2", "u2", "a2", "r3", "u3"]


def test_nothing_goes_under_the_low_watermark_or_without_recall() -> None:
    segs = chat()
    assert without_old_recall(segs, limits(10_000), 0) is segs
    plain = [s for s in segs if names([s])[0][0] != "r"]
    assert without_old_recall(plain, limits(1), 0) is plain


def test_an_agent_turn_keeps_its_recall_message() -> None:
    segs = [
        unit("user", "u0", 10),
        unit("user", "r1", 400, recall=True),
        unit("user", "u1", 10),
        unit("tool_turn", "t1", 3_000),
        unit("assistant", "a1", 20),
        unit("user", "u2", 10),
    ]
    assert without_old_recall(segs, limits(100), 0) is segs


def test_in_a_chat_of_short_turns_a_cut_keeps_the_conversation_not_old_recall() -> None:
    """Two people chatting (`testing.dialoguegen`), recall on: after every compaction the recall messages of
    earlier turns hold at most a small share of the view; before, they held most of what a cut kept."""
    from windowkeeper import AgentState
    from windowkeeper.context import TokenBudgetContextManager
    from windowkeeper.context.recall import is_recall
    from windowkeeper.testing.dialoguegen import generate_dialogue
    from windowkeeper.tokens import default_counter

    counter = default_counter()
    manager: TokenBudgetContextManager[AgentState] = TokenBudgetContextManager(6_000, 1_000, counter=counter)
    state = AgentState()
    compactions = 0
    for message in generate_dialogue(30_000, seed=3, counter=counter).messages:
        state.context = [*state.context, message]
        state = manager.trim_context(state)
        metrics = manager.last_metrics
        if metrics is None or metrics.tokens_saved <= 0:
            continue
        compactions += 1
        users = [i for i, m in enumerate(state.context) if m.role == "user" and not is_recall(m)]
        older = [m for m in state.context[: users[-1] - 1] if is_recall(m)] if users else []
        view = sum(counter.count_message(m) for m in state.context)
        assert sum(counter.count_message(m) for m in older) <= view // 4
    assert compactions > 3
