"""Recall in the reference's simple managers: `MessageContextManager` and `SummaryContextManager` (off by default)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from recall_chat import FACT, QUESTION, ask_in_graph, tool_step, turn_text
from windowkeeper import AgentState, ConfigurationError, Message, ToolResultBlock
from windowkeeper.context import MessageContextManager, SummaryContextManager, TokenBudgetContextManager
from windowkeeper.context._recall_step import fit_recall
from windowkeeper.context.base import BaseContextManager
from windowkeeper.context.recall import (
    RECALL_HEADER,
    Recall,
    is_recall,
    join_recall,
    newest_user,
    place_recall,
    split_recall,
)
from windowkeeper.tools import recall_tool
from windowkeeper.units import validate

Manager = MessageContextManager[AgentState] | SummaryContextManager[AgentState]
AnyManager = BaseContextManager[AgentState]


def chat(manager: AnyManager, turns: int) -> AgentState:
    """A chat driven the way an agent does it: trim with each new user message, then append the reply."""
    state = AgentState()
    state.context = [Message.text_message("You are helpful.", role="system", message_id="sys")]
    for turn in range(turns):
        state.context = [*state.context, Message.text_message(turn_text(turn), message_id=f"u{turn}")]
        state = manager.trim_context(state)
        assert all(validate(state.context, p) == [] for p in ("openai", "anthropic")), turn
        reply = Message.text_message(f"Answer {turn}: noted.", role="assistant", message_id=f"a{turn}")
        state.context = [*state.context, reply]
    return state


def ask(manager: AnyManager, state: AgentState, text: str = QUESTION, message_id: str = "q") -> AgentState:
    state.context = [*state.context, Message.text_message(text, message_id=message_id)]
    return manager.trim_context(state)


def message_manager(recall: bool) -> Manager:
    if recall:
        return MessageContextManager(max_messages=4, recall=True, recall_budget=1500)
    return MessageContextManager(max_messages=4)


def summary_manager(recall: bool) -> Manager:
    return SummaryContextManager(model="extractive", max_messages=None, token_budget=1200, keep_recent=6, recall=recall)


MANAGERS: dict[str, Callable[[bool], Manager]] = {"message": message_manager, "summary": summary_manager}


@pytest.mark.parametrize("kind", MANAGERS)
def test_a_fact_that_left_the_view_comes_back_when_the_user_asks_for_it(kind: str) -> None:
    manager = MANAGERS[kind](True)
    state = chat(manager, 60)
    assert not any(FACT in m.text() for m in state.context)
    state = ask(manager, state)
    recall = state.context[-2]
    assert is_recall(recall) and recall.role == "user" and recall.message_id == "recall:q"
    assert recall.text().startswith(RECALL_HEADER)
    assert "--- message #1, turn 1, user, " in recall.text() and FACT in recall.text()
    assert state.context[-1].message_id == "q"
    for provider in ("openai", "anthropic", "gemini"):
        assert validate(state.context, provider) == []
    # the recall message fits the room the budget leaves
    assert manager.recall is not None
    budget = 1500 if kind == "message" else 1200
    summary = manager.recall.counter.count_text(state.context_summary) if state.context_summary else 0
    assert manager.recall.counter.count_messages(state.context) + summary <= budget


@pytest.mark.parametrize("kind", MANAGERS)
def test_recall_is_off_by_default(kind: str) -> None:
    manager = MANAGERS[kind](False)
    assert manager.recall is None
    state = ask(manager, chat(manager, 60))
    assert not any(is_recall(m) for m in state.context)
    assert not any(FACT in m.text() for m in state.context)
    default: Manager = (
        MessageContextManager() if kind == "message" else SummaryContextManager(model="extractive", token_budget=900)
    )
    assert default.recall is None


@pytest.mark.parametrize("kind", MANAGERS)
def test_recall_stays_byte_identical_through_the_turns_tool_steps(kind: str) -> None:
    manager = MANAGERS[kind](True)
    state = ask(manager, chat(manager, 60))
    first = next(m for m in state.context if m.message_id == "recall:q")
    assert manager.recall is not None
    counter = manager.recall.counter
    budget = 1500 if kind == "message" else 1200
    kept_through = 0
    gone_at: int | None = None
    for step in range(10):
        state.context = [*state.context, *tool_step(step)]
        state = manager.trim_context(state)
        recalls = [m for m in state.context if m.message_id == "recall:q"]
        summary = counter.count_text(state.context_summary) if state.context_summary else 0
        if recalls:
            assert kept_through == step  # once gone, it is not placed again for the same turn
            kept_through += 1
            assert len(recalls) == 1 and recalls[0] is first  # the same object: byte for byte, never rebuilt
            assert state.context[state.context.index(first) + 1].message_id == "q"
        else:  # the turn's own steps outgrew the budget beside it: it goes last, and the budget holds
            if gone_at is None:
                gone_at = step
                assert counter.count_messages(state.context) + summary + counter.count_message(first) > budget
            elif kind == "summary":  # the turn itself is summarized (its opener kept): the recall stays gone
                assert counter.count_messages(state.context) + summary <= budget
        for provider in ("openai", "anthropic"):
            assert validate(state.context, provider) == []
    assert kept_through >= 2
    # the next user turn does not repeat what the earlier recall message still shows
    state.context = [*state.context, Message.text_message("Thanks. Done for today.", message_id="q2")]
    state = manager.trim_context(state)
    assert sum(FACT in m.text() for m in state.context if is_recall(m)) <= 1


@pytest.mark.parametrize("kind", MANAGERS)
def test_recall_messages_are_neither_user_turns_nor_summarized(kind: str) -> None:
    manager = MANAGERS[kind](True)
    state = ask(manager, chat(manager, 60))
    recall = state.context[-2]
    assert is_recall(recall)
    # more turns: the recall message ages out with the turn it was made for, and is never summarized or indexed
    for turn in range(100, 180):
        state.context = [*state.context, Message.text_message(turn_text(turn), message_id=f"u{turn}")]
        state = manager.trim_context(state)
        for i, message in enumerate(state.context):
            if is_recall(message):
                assert state.context[i + 1].message_id == message.metadata["serves"]
        state.context = [*state.context, Message.text_message("ok", role="assistant", message_id=f"a{turn}")]
    assert recall not in state.context
    assert RECALL_HEADER not in (state.context_summary or "")
    assert manager.recall is not None
    assert all(not h.passage.message_id.startswith("recall:") for h in manager.recall.search("default", "staging"))
    if isinstance(manager, MessageContextManager):
        # four user turns are kept, whatever number of recall messages stand among them
        assert sum(m.role == "user" and not is_recall(m) for m in state.context) == 4


def test_select_does_not_count_recall_messages_as_user_turns() -> None:
    manager: MessageContextManager[AgentState] = MessageContextManager(max_messages=2)
    users = [Message.text_message(f"q{i}", message_id=f"u{i}") for i in range(3)]
    recall = Message.text_message(
        "recalled", message_id="recall:u2", metadata={"windowkeeper": "recall", "serves": "u2"}
    )
    context = [users[0], users[1], recall, users[2]]
    assert manager.select(context) == [users[1], recall, users[2]]
    assert manager.select([users[1], recall, users[2]]) is None


def test_shared_placement_helpers() -> None:
    recall = Recall()
    gone = [Message.text_message(turn_text(turn), message_id=f"old{turn}") for turn in range(6)]
    recall.observe("t", gone)
    recall.left("t", gone)
    user = Message.text_message(QUESTION, message_id="q")
    tool = Message.tool_message([ToolResultBlock(call_id="x", output="y")])
    assert newest_user([user, tool]) == 0 and newest_user([tool]) is None
    calls = []

    def room() -> int:
        calls.append(1)
        return 500

    placed = place_recall(recall, "t", [user], room)
    assert placed is not None
    messages, at, tokens = placed
    assert at == 0 and messages[1] is user and FACT in messages[0].text() and tokens > 0
    assert place_recall(recall, "t", messages, room) is None  # decided once per user message
    assert len(calls) == 1  # the room is computed only when a search is due
    history, recalls = split_recall(messages)
    assert history == [user] and recalls == {"q": messages[0]}
    assert join_recall(history, recalls) == messages
    assert join_recall([], recalls) == []


def test_configuration_errors_name_the_fix() -> None:
    with pytest.raises(ConfigurationError, match="recall_budget"):
        MessageContextManager(recall=True)
    with pytest.raises(ConfigurationError, match="token_budget= or recall_budget"):
        SummaryContextManager(model="extractive", max_messages=10, recall=True)
    with pytest.raises(ConfigurationError, match="recall must be"):
        MessageContextManager(recall="yes", recall_budget=100)  # type: ignore[arg-type]
    shared = Recall()
    assert MessageContextManager(recall=shared, recall_budget=100).recall is shared
    summary = SummaryContextManager(model="extractive", max_messages=10, recall=True, recall_budget=800)
    assert summary.recall_budget == 800


async def test_summary_manager_with_recall_serves_the_recall_tool_in_a_graph() -> None:
    manager: SummaryContextManager[AgentState] = SummaryContextManager(
        model="extractive", max_messages=None, token_budget=900, keep_recent=4, recall=True
    )
    # recall fills the room the view and the summary leave of the budget: the question comes 36 turns into a
    # ~40-turn summary cycle (the view is summarized when it reaches the budget, so just before that there is none)
    client = await ask_in_graph(manager, 76)
    sent = client.requests[-1].messages
    assert not any(FACT in m.text() for m in client.requests[-2].messages)
    assert any(is_recall(m) and FACT in m.text() for m in sent)
    tool = recall_tool(manager, thread_id="t")
    assert FACT in await tool.ainvoke({"query": "staging database host"})


def test_budget_manager_placement_is_unchanged_by_the_shared_helper() -> None:
    manager: TokenBudgetContextManager[AgentState] = TokenBudgetContextManager(max_tokens=2500, reserve_tokens=500)
    state = ask(manager, chat(manager, 120))
    assert state.context[-2].message_id == "recall:q" and FACT in state.context[-2].text()
    metrics = manager.last_metrics
    assert metrics is not None and metrics.tokens_after <= manager.budget


@pytest.mark.parametrize("kind", MANAGERS)
def test_recall_never_changes_what_is_kept_or_summarized(kind: str) -> None:
    """The manager's own decisions do not see recall: with it on, the view less its recall messages and the summary
    are those of the manager without recall, turn for turn (recall only adds)."""
    on, off = MANAGERS[kind](True), MANAGERS[kind](False)
    states = [AgentState(), AgentState()]
    asked = 0
    for turn in range(120):
        said = Message.text_message(QUESTION if turn % 15 == 14 else turn_text(turn), message_id=f"u{turn}")
        reply = Message.text_message("ok", role="assistant", message_id=f"a{turn}")
        for i, manager in enumerate((on, off)):
            state = states[i]
            state.context = [*state.context, said]
            states[i] = manager.trim_context(state)
        with_recall, without = states
        assert [m for m in with_recall.context if not is_recall(m)] == without.context
        assert with_recall.context_summary == without.context_summary
        asked += any(is_recall(m) for m in with_recall.context)
        for state in states:
            state.context = [*state.context, reply]
    assert asked


def test_fit_recall_drops_the_oldest_recall_messages_first_and_the_current_turns_last() -> None:
    counter = Recall().counter

    def recalled(serves: str, words: int) -> Message:
        text = " ".join(["passage"] * words)
        return Message.text_message(
            text, message_id=f"recall:{serves}", metadata={"windowkeeper": "recall", "serves": serves}
        )

    view = [
        recalled("u1", 200),
        Message.text_message("first", message_id="u1"),
        recalled("u2", 200),
        Message.text_message("second", message_id="u2"),
        recalled("u3", 200),
        Message.text_message("third", message_id="u3"),
    ]
    whole = counter.count_messages(view)
    assert fit_recall(view, whole, counter) is view  # fits: unchanged, the same list
    one = counter.count_message(view[0])
    assert [m.message_id for m in fit_recall(view, whole - one, counter)] == [
        "u1",
        "recall:u2",
        "u2",
        "recall:u3",
        "u3",
    ]
    three = counter.count_messages([view[1], view[3], view[4], view[5]])
    kept = fit_recall(view, three, counter)
    assert [m.message_id for m in kept] == ["u1", "u2", "recall:u3", "u3"]  # the turn being answered keeps its own
    # ... until the view cannot hold it either: then it goes too, and the budget holds
    assert [m.message_id for m in fit_recall(view, 10, counter)] == ["u1", "u2", "u3"]
    assert fit_recall(view, whole, counter, extra=one) == view[1:]
