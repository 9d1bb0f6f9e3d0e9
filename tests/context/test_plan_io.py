"""A planning core may yield the awaitable of any real I/O (a store read or write), not only a `SummaryRequest`.

`Stored` below keeps its thread's notes in an async store: it reads them by yielding the store's coroutine, the
way ``await`` would, and is sent the result or has the store's exception thrown in. It writes no trim method; the
base drives it sync and async. `MemoryContextManager` is written the same way (its store work is the one awaitable
its core yields), so its sync form, async form and graph runs come from the base too.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Generator
from typing import Any

import pytest

from windowkeeper import AgentState, Message
from windowkeeper.context import BaseContextManager, SummaryRequest
from windowkeeper.context.base import PlanStep
from windowkeeper.graph import END, Agent, StateGraph
from windowkeeper.llm import ScriptedClient
from windowkeeper.memory import InMemoryMemory, MemoryContextManager
from windowkeeper.state import ExecMeta


class NoteStore:
    """An async store of one note per thread; ``broken`` makes every read fail."""

    def __init__(self, broken: bool = False) -> None:
        self.notes: dict[str, str] = {}
        self.broken = broken
        self.reads = 0

    async def read(self, thread: str) -> str | None:
        await asyncio.sleep(0)  # a real suspension: the driver must run this on a loop
        self.reads += 1
        if self.broken:
            raise OSError(f"store unavailable while reading {thread!r}")
        return self.notes.get(thread)

    async def write(self, thread: str, note: str) -> None:
        await asyncio.sleep(0)
        self.notes[thread] = note


def count_summary(messages: list[Message], previous_summary: str | None = None) -> str:
    return f"{len(messages)} earlier" + (f" after {previous_summary}" if previous_summary else "")


class Stored(BaseContextManager[AgentState]):
    """Keep the newest ``keep`` messages; what leaves is summarized and the summary stored in the note store,
    whose note becomes the state's summary. A failed store read counts as no note (``tolerant``) or propagates."""

    def __init__(self, store: NoteStore, *, keep: int = 2, tolerant: bool = True) -> None:
        self.store, self.keep, self.tolerant = store, keep, tolerant
        self.summarizer = count_summary

    def plan(self, state: AgentState) -> Generator[PlanStep, Any, AgentState]:
        before = self._begin_trim(state)
        thread = state.execution_meta.thread_id or "default"
        try:
            note: str | None = yield self.store.read(thread)
        except OSError:
            if not self.tolerant:
                raise
            note = None
        made = 0
        if len(state.context) > self.keep:
            dropped, state.context = state.context[: -self.keep], state.context[-self.keep :]
            text = yield SummaryRequest(dropped, note, 100)
            if text is not None:
                yield self.store.write(thread, text)
                note, made = text, 1
        state.context_summary = note
        self._finish_trim(before, state, summaries_made=made)
        return state


def _state(n: int, thread: str = "t") -> AgentState:
    context = [Message.text_message(f"message {i}", message_id=f"m{i}") for i in range(n)]
    return AgentState(context=context, execution_meta=ExecMeta(thread_id=thread))


def test_a_core_yielding_store_io_works_sync_and_async() -> None:
    sync_store, async_store = NoteStore(), NoteStore()
    sync_manager, async_manager = Stored(sync_store), Stored(async_store)
    for _ in range(2):
        sync_out = sync_manager.trim_context(_state(5))
        async_out = asyncio.run(async_manager.atrim_context(_state(5)))
    for out, store in ((sync_out, sync_store), (async_out, async_store)):
        assert [m.message_id for m in out.context] == ["m3", "m4"]
        assert out.context_summary == "3 earlier after 3 earlier"
        assert store.notes == {"t": "3 earlier after 3 earlier"} and store.reads == 2
    assert sync_manager.last_metrics is not None and sync_manager.last_metrics.summaries_made == 1


def test_a_store_error_is_thrown_into_the_core_both_ways() -> None:
    out = Stored(NoteStore(broken=True)).trim_context(_state(5))
    assert out.context_summary == "3 earlier"  # the core caught the read's error and went on without a note
    out = asyncio.run(Stored(NoteStore(broken=True)).atrim_context(_state(5)))
    assert out.context_summary == "3 earlier"
    with pytest.raises(OSError, match="store unavailable while reading 't'"):
        Stored(NoteStore(broken=True), tolerant=False).trim_context(_state(5))
    with pytest.raises(OSError, match="store unavailable while reading 't'"):
        asyncio.run(Stored(NoteStore(broken=True), tolerant=False).atrim_context(_state(5)))


def test_the_sync_form_refuses_inside_a_running_loop_before_any_store_call() -> None:
    async def inside() -> None:
        store = NoteStore()
        with pytest.raises(RuntimeError, match=r"Stored\.trim_context\(\).*await manager\.atrim_context\(state\)"):
            Stored(store).trim_context(_state(5))
        assert store.reads == 0
        memory = InMemoryMemory()
        with pytest.raises(
            RuntimeError,
            match=r"MemoryContextManager\.trim_context\(\) \(it needs its memory's store\) was called from inside "
            r"a running event loop.*use `await manager\.atrim_context\(state\)` instead",
        ):
            MemoryContextManager(memory).trim_context(_state(5))
        assert await memory.messages("t") == []  # refused before anything was added

    asyncio.run(inside())


THRESHOLDS = {"pre_rot_threshold": 300, "keep_recent_count": 2}


def _turn(i: int) -> Message:
    text = f"Turn {i}: shard {i} failed after {i * 40} rows; retry it with batch size {i * 5} and log the row ids."
    return Message.text_message(text, message_id=f"u{i}")


def _graph(manager: MemoryContextManager, client: ScriptedClient) -> Any:
    graph = StateGraph(context_manager=manager)
    graph.add_node("MAIN", Agent(client=client, trim_context=True))
    graph.add_edge("MAIN", END)
    graph.set_entry_point("MAIN")
    return graph.compile()


def _untimed(system: str | None) -> str | None:
    """The system text without the summary's event timestamps (each run adds its events at its own time)."""
    return None if system is None else re.sub(r"\d{4}-\d\d-\d\dT[\d:.+]+", "<time>", system)


def test_the_memory_manager_in_the_graph_sync_and_async_sends_the_same_requests() -> None:
    replies = [f"Reply {i}: shard {i} re-ran with the smaller batch and passed." for i in range(12)]
    sync_client, async_client = ScriptedClient(list(replies)), ScriptedClient(list(replies))
    sync_app = _graph(MemoryContextManager(thresholds=THRESHOLDS), sync_client)
    async_app = _graph(MemoryContextManager(thresholds=THRESHOLDS), async_client)

    async def run_async() -> None:
        for i in range(12):
            await async_app.ainvoke({"messages": [_turn(i)]}, config={"thread_id": "p"})

    for i in range(12):
        sync_app.invoke({"messages": [_turn(i)]}, config={"thread_id": "p"})
    asyncio.run(run_async())
    sent = [[(m.role, m.text()) for m in r.messages] for r in sync_client.requests]
    assert sent == [[(m.role, m.text()) for m in r.messages] for r in async_client.requests]
    assert [_untimed(r.system) for r in sync_client.requests] == [_untimed(r.system) for r in async_client.requests]
    assert len(sent[-1]) < 2 * 12  # the memory's tiers did trim the view
    assert sync_client.requests[-1].system is not None  # its summary rides in the system zone
