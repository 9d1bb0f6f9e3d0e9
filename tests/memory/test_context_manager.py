"""The three-tier memory as the context manager of a real StateGraph + Agent run (ScriptedClient, SQLite file)."""

from __future__ import annotations

from pathlib import Path

import pytest

from windowkeeper import AgentState, ConfigurationError, Message
from windowkeeper.graph import Agent, StateGraph
from windowkeeper.llm import ScriptedClient
from windowkeeper.memory import InMemoryMemory, MemoryContextManager, SQLiteMemory
from windowkeeper.units import validate

THRESHOLDS = {"pre_rot_threshold": 900, "keep_recent_count": 4}


def _question(i: int) -> Message:
    text = (
        f"Turn {i}: the nightly import of shard {i} failed with ValueError in src/ingest/shard_{i}.py after "
        f"{i * 40} rows. We decided to retry it with a batch size of {i * 5} and log the offending row ids."
    )
    return Message.text_message(text, role="user", message_id=f"u{i}")


async def test_graph_runs_with_the_memory_as_its_context_manager(tmp_path: Path) -> None:
    memory = SQLiteMemory(tmp_path / "agent.db", thresholds=THRESHOLDS)
    manager = MemoryContextManager(memory)
    replies = [
        f"Reply {i}: I re-ran shard {i} with the smaller batch and it passed; {i * 40} rows imported."
        for i in range(30)
    ]
    client = ScriptedClient(replies)
    graph = StateGraph(context_manager=manager)
    graph.add_node("MAIN", Agent(client=client, trim_context=True, system_prompt="You fix data pipelines."))
    graph.set_entry_point("MAIN")
    app = graph.compile()

    for i in range(30):
        await app.ainvoke({"messages": [_question(i)]}, config={"thread_id": "pipeline"})

    assert len(client.requests) == 30
    for i, request in enumerate(client.requests):
        sent = request.messages
        for provider in ("openai", "anthropic"):
            assert validate(sent, provider) == [], (i, provider)
        assert sent[-1].message_id == f"u{i}"  # the newest user turn always reaches the model
        assert sum(m.role == "user" for m in sent) >= 1
    reports = [r for r in [memory.last_report("pipeline")] if r is not None]
    assert reports
    summaries = await memory.summaries("pipeline")
    assert summaries, "30 turns at a 900-token pre-rot threshold must reach the summary tier"
    last = client.requests[-1]
    assert last.system is not None and last.system.startswith("You fix data pipelines.")
    assert summaries[-1].render() in last.system  # the structured summary rides in the system zone
    assert all(not str(m.message_id).startswith("summary:") for m in last.messages)
    # every message of every turn is in the memory's history, in order, byte for byte
    history = await memory.history_messages("pipeline")
    expected = [f"{kind}{i}" for i in range(30) for kind in ("u", "a")]
    assert [m.role for m in history] == ["user", "assistant"] * 30
    assert [m.text() for m in history if m.role == "user"] == [_question(i).text() for i in range(30)]
    assert len(history) == len(expected)
    await manager.aclose()

    # a new process (a new memory on the same file) continues the thread where the view left off
    reopened = SQLiteMemory(tmp_path / "agent.db", thresholds=THRESHOLDS)
    assert [m.message_id for m in await reopened.messages("pipeline")][-1] == history[-1].message_id
    await reopened.close()


def test_sync_trim_context_puts_view_and_summary_into_the_state() -> None:
    manager = MemoryContextManager(thresholds={"pre_rot_threshold": 400, "keep_recent_count": 2})
    state = AgentState()
    for i in range(40):
        state.context.append(_question(i))
        state = manager.trim_context(state)
    ids = [str(m.message_id) for m in state.context]
    assert ids[-1] == "u39" and "u0" not in ids
    assert manager.memory.counter.count_messages(state.context) < manager.memory.thresholds.summarization_limit
    assert state.context_summary is not None and state.context_summary.startswith("[Summary of")
    assert manager.last_metrics is not None


def test_adapter_rejects_ambiguous_configuration() -> None:
    with pytest.raises(ConfigurationError, match="either a memory or options"):
        MemoryContextManager(InMemoryMemory(), thresholds={"pre_rot_threshold": 10})
    with pytest.raises(ConfigurationError, match="BaseMemory"):
        MemoryContextManager("memory.db")  # type: ignore[arg-type]
