"""Recall on the three-tier memory: what it compacts or summarizes away comes back for a user message asking for it."""

from __future__ import annotations

from pathlib import Path

import pytest

from recall_chat import FACT, QUESTION, ask_in_graph, tool_step, turn_text, word
from windowkeeper import AgentState, Message
from windowkeeper.context.recall import RECALL_HEADER, Recall, is_recall
from windowkeeper.memory import InMemoryMemory, MemoryContextManager, SQLiteMemory, context_manager
from windowkeeper.state import ExecMeta
from windowkeeper.tools import recall_tool
from windowkeeper.units import validate

THRESHOLDS = {"pre_rot_threshold": 1500, "keep_recent_count": 6}


async def chat(manager: MemoryContextManager, turns: int, state: AgentState | None = None) -> AgentState:
    state = state if state is not None else AgentState()
    if not state.context:
        state.context = [Message.text_message("You are helpful.", role="system", message_id="sys")]
    for turn in range(turns):
        state.context = [*state.context, Message.text_message(turn_text(turn), message_id=f"u{turn}")]
        state = await manager.atrim_context(state)
        for provider in ("openai", "anthropic"):
            assert validate(state.context, provider) == [], (turn, provider)
        reply = Message.text_message(f"Answer {turn}: noted.", role="assistant", message_id=f"a{turn}")
        state.context = [*state.context, reply]
    return state


async def ask(manager: MemoryContextManager, state: AgentState, message_id: str = "q") -> AgentState:
    state.context = [*state.context, Message.text_message(QUESTION, message_id=message_id)]
    return await manager.atrim_context(state)


async def test_what_the_memory_summarized_away_comes_back_verbatim_for_the_question() -> None:
    manager = MemoryContextManager(InMemoryMemory(thresholds=THRESHOLDS), recall=True)
    state = await chat(manager, 60)
    assert await manager.memory.summaries("default"), "60 turns at a 1,500-token threshold reach the summary tier"
    assert not any(FACT in m.text() for m in state.context)
    state = await ask(manager, state)
    recall = state.context[-2]
    assert is_recall(recall) and recall.message_id == "recall:q" and recall.role == "user"
    assert recall.text().startswith(RECALL_HEADER) and FACT in recall.text()
    assert "--- message #1, turn 1, user, " in recall.text()
    assert state.context[-1].message_id == "q"
    for provider in ("openai", "anthropic", "gemini"):
        assert validate(state.context, provider) == []
    # the recall message fits what the memory's view leaves of its budget
    tokens = await manager.memory.tokens("default")
    assert tokens + manager.memory.counter.count_message(recall) <= THRESHOLDS["pre_rot_threshold"]
    # never written to the memory as if the user had said it
    history = await manager.memory.history_messages("default")
    assert not any(is_recall(m) or RECALL_HEADER in m.text() for m in history)
    assert [m.message_id for m in history][-1] == "q"


async def test_recall_is_off_by_default() -> None:
    manager = MemoryContextManager(InMemoryMemory(thresholds=THRESHOLDS))
    assert manager.recall is None
    state = await ask(manager, await chat(manager, 60))
    assert not any(is_recall(m) for m in state.context)


async def test_the_recall_message_is_byte_identical_through_the_turns_tool_steps() -> None:
    manager = MemoryContextManager(InMemoryMemory(thresholds=THRESHOLDS), recall=True)
    state = await ask(manager, await chat(manager, 60))
    first = next(m for m in state.context if m.message_id == "recall:q")
    for step in range(12):  # enough tool output to make the memory compact during the turn
        state.context = [*state.context, *tool_step(step)]
        state = await manager.atrim_context(state)
        recalls = [m for m in state.context if m.message_id == "recall:q"]
        assert len(recalls) == 1 and recalls[0] is first
        assert state.context[state.context.index(first) + 1].message_id == "q"
        for provider in ("openai", "anthropic"):
            assert validate(state.context, provider) == []
    # what the memory compacted during those steps is indexed from the originals, not the gists
    assert manager.recall is not None
    hits = manager.recall.search("default", "row 0 row 0")
    assert hits and "[COMPACTED" not in hits[0].passage.text


async def test_recall_messages_age_out_and_stay_out_of_the_memory() -> None:
    manager = MemoryContextManager(InMemoryMemory(thresholds=THRESHOLDS), recall=True)
    state = await ask(manager, await chat(manager, 60))
    assert state.context[-2].message_id == "recall:q"
    state.context = [*state.context, Message.text_message("Noted.", role="assistant", message_id="aq")]
    for turn in range(100, 160):
        state.context = [*state.context, Message.text_message(turn_text(turn), message_id=f"u{turn}")]
        state = await manager.atrim_context(state)
        for i, message in enumerate(state.context):
            if is_recall(message):
                assert state.context[i + 1].message_id == message.metadata["serves"]
        state.context = [*state.context, Message.text_message("ok", role="assistant", message_id=f"a{turn}")]
    assert not any(m.message_id == "recall:q" for m in state.context)
    history = await manager.memory.history_messages("default")
    assert not any(is_recall(m) for m in history)


async def test_a_reopened_session_rebuilds_recall_from_the_stored_history(tmp_path: Path) -> None:
    path = tmp_path / "memory.db"
    first = MemoryContextManager(SQLiteMemory(path, thresholds=THRESHOLDS))
    state = await chat(first, 60)
    await first.aclose()
    again = MemoryContextManager(SQLiteMemory(path, thresholds=THRESHOLDS), recall=Recall())
    state = await ask(again, state)
    recall = state.context[-2]
    assert is_recall(recall) and FACT in recall.text()
    assert "--- message #1, turn 1, user, " in recall.text()  # positions come from the whole history
    await again.aclose()


async def test_recall_through_a_graph_run_with_the_recall_tool() -> None:
    manager = MemoryContextManager(InMemoryMemory(thresholds=THRESHOLDS), recall=True)
    client = await ask_in_graph(manager, 40, system_prompt="You are helpful.")
    sent = client.requests[-1].messages
    assert any(is_recall(m) and FACT in m.text() for m in sent)
    history = await manager.memory.history_messages("t")
    assert [m.role for m in history] == ["user", "assistant"] * 40  # every turn logged once, no recall message
    tool = recall_tool(manager, thread_id="t")
    assert FACT in await tool.ainvoke({"query": "staging database host"})


@pytest.mark.parametrize("value", ["yes", 1])
def test_a_bad_recall_value_is_refused(value: object) -> None:
    from windowkeeper import ConfigurationError

    with pytest.raises(ConfigurationError, match="recall must be"):
        MemoryContextManager(recall=value)  # type: ignore[arg-type]


async def test_recall_never_changes_what_the_memory_keeps() -> None:
    on = MemoryContextManager(InMemoryMemory(thresholds=THRESHOLDS), recall=True)
    off = MemoryContextManager(InMemoryMemory(thresholds=THRESHOLDS))
    states = [AgentState(), AgentState()]
    asked = 0
    for turn in range(90):
        said = Message.text_message(QUESTION if turn % 15 == 14 else turn_text(turn), message_id=f"u{turn}")
        reply = Message.text_message("ok", role="assistant", message_id=f"a{turn}")
        for i, manager in enumerate((on, off)):
            states[i].context = [*states[i].context, said]
            states[i] = await manager.atrim_context(states[i])
        with_recall, without = states
        assert [m.message_id for m in with_recall.context if not is_recall(m)] == [
            m.message_id for m in without.context
        ]
        assert with_recall.context_summary == without.context_summary
        asked += any(is_recall(m) for m in with_recall.context)
        for state in states:
            state.context = [*state.context, reply]
    assert asked


async def test_recall_state_is_kept_for_a_bounded_number_of_sessions(monkeypatch: pytest.MonkeyPatch) -> None:
    """A server sees many sessions: the oldest session's recall state goes, and its next call rebuilds it."""
    monkeypatch.setattr(context_manager, "MAX_RECALL_SESSIONS", 2)
    manager = MemoryContextManager(InMemoryMemory(thresholds=THRESHOLDS), recall=True)
    states = {}
    for sid in ("s1", "s2", "s3"):
        states[sid] = await chat(manager, 60, AgentState(execution_meta=ExecMeta(thread_id=sid)))
        assert len(manager._recall_tracks) <= 2
    assert list(manager._recall_tracks) == ["s2", "s3"]
    state = await ask(manager, states["s1"])  # evicted: rebuilt from the stored history
    recall = state.context[-2]
    assert is_recall(recall) and FACT in recall.text()
    assert list(manager._recall_tracks) == ["s3", "s1"]
    manager.forget("s3")
    assert list(manager._recall_tracks) == ["s1"]
    manager.forget()
    assert not manager._recall_tracks


async def test_recall_messages_of_earlier_turns_leave_together_when_the_view_outgrows_them() -> None:
    """When the growing view and its recall messages pass the budget, the prompt changes from the oldest recall
    message on: all of the earlier turns' go in that one change. Dropping only the oldest, one per call as the view
    went on growing, changed the prompt prefix on call after call (two-person chat at 2k: 67.3 -> 84.5% of calls
    prefix-stable, bench/README.md "Session 24")."""
    manager = MemoryContextManager(InMemoryMemory(thresholds=THRESHOLDS), recall=True)
    state = await chat(manager, 60)
    for n, turn in enumerate((5, 10, 15)):  # three questions, each about a different early turn
        text = f"Which recipe did I try with {word(turn + 1000)} and {word(turn + 2000)}?"
        state.context = [*state.context, Message.text_message(text, message_id=f"q{n}")]
        state = await manager.atrim_context(state)
        state.context = [*state.context, Message.text_message("Noted.", role="assistant", message_id=f"aq{n}")]
    before = [m.message_id for m in state.context if is_recall(m)]
    assert len(before) >= 2, "several recall messages stand in the view at once"
    dropped_alone = 0
    for turn in range(100, 160):
        memory_before = [m.message_id for m in state.context if not is_recall(m)]
        recalls_before = [m.message_id for m in state.context if is_recall(m)]
        state.context = [*state.context, Message.text_message(turn_text(turn), message_id=f"u{turn}")]
        state = await manager.atrim_context(state)
        memory_now = [m.message_id for m in state.context if not is_recall(m)]
        extended = memory_now[: len(memory_before)] == memory_before
        earlier = [r for r in recalls_before if r in {m.message_id for m in state.context}]
        if extended and 0 < len(earlier) < len(recalls_before):
            dropped_alone += 1
        state.context = [*state.context, Message.text_message("ok", role="assistant", message_id=f"a{turn}")]
    assert dropped_alone == 0
