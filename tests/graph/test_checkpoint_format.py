"""Delta checkpoints: a step writes its new messages and references; what the log does not hold exactly is inline."""

from __future__ import annotations

from windowkeeper.blocks import TextBlock
from windowkeeper.graph.checkpointer import Checkpointer
from windowkeeper.messages import Message
from windowkeeper.state import AgentState
from windowkeeper.storage.memory import InMemoryStore


def text(mid: str) -> Message:
    return Message.text_message(f"message {mid}", message_id=mid, timestamp=1.0)


async def test_a_copy_with_other_metadata_is_stored_inline_and_loads_back() -> None:
    store = InMemoryStore()
    writer = Checkpointer(store, owns_store=False)
    first = [text("a"), text("b")]
    state = AgentState(context=list(first))
    await writer.aput("t", state, first)
    state.context = [first[0], first[1].model_copy(update={"metadata": {"pinned": True}})]
    await writer.aput("t", state, [])
    raw = await store.get_state("t")
    assert raw is not None and raw["context"][0] == [0, 1, '"a"', '"a"'] and "m" in raw["context"][1]
    loaded = await Checkpointer(store, owns_store=False).aget_state("t")
    assert loaded is not None and loaded.context[1].metadata == {"pinned": True}


async def test_a_growing_view_writes_one_run_and_reloads_its_own_objects() -> None:
    store = InMemoryStore()
    saver = Checkpointer(store, owns_store=False)
    state = AgentState()
    for i in range(20):
        new = [text(f"m{i}")]
        state.context = [*state.context, *new]
        await saver.aput("t", state, new)
    raw = await store.get_state("t")
    assert raw is not None and raw["context"] == [[0, 20, '"m0"', '"m19"']]
    again = await saver.aget_state("t")
    assert again is not None and all(a is b for a, b in zip(again.context, state.context, strict=True))
    other = await Checkpointer(store, owns_store=False).aget_state("t")
    assert other is not None and [m.model_dump() for m in other.context] == [m.model_dump() for m in state.context]


async def test_a_restarted_reader_stores_the_view_it_read_as_runs_hashing_nothing(monkeypatch: object) -> None:
    import windowkeeper.graph.checkpoint_format as fmt

    store = InMemoryStore()
    first = [text(f"m{i}") for i in range(6)]
    await Checkpointer(store, owns_store=False).aput("t", AgentState(context=list(first)), first)
    hashed: list[str] = []
    real = fmt.body_hash

    def counting(message: Message) -> str:
        hashed.append(str(message.message_id))
        return real(message)

    monkeypatch.setattr(fmt, "body_hash", counting)  # type: ignore[attr-defined]
    restarted = Checkpointer(store, owns_store=False)
    state = await restarted.aget_state("t")
    assert state is not None
    new = [text("m6")]
    state.context = [*state.context[2:], *new]  # a manager cut the first two, a turn added one
    await restarted.aput("t", state, new)
    raw = await store.get_state("t")
    assert raw is not None and raw["context"] == [[2, 5, '"m2"', '"m6"']]
    assert hashed == []  # what was read and what was appended are the logged copies: nothing to compare


async def test_a_message_read_back_then_edited_in_place_is_stored_inline() -> None:
    store = InMemoryStore()
    first = [text("a"), text("b")]
    await Checkpointer(store, owns_store=False).aput("t", AgentState(context=list(first)), first)
    restarted = Checkpointer(store, owns_store=False)
    state = await restarted.aget_state("t")
    assert state is not None
    state.context[1].content = [TextBlock(text="message b, corrected")]
    state.context = list(state.context)
    await restarted.aput("t", state, [])
    raw = await store.get_state("t")
    assert raw is not None and raw["context"][0] == [0, 1, '"a"', '"a"'] and "m" in raw["context"][1]
    loaded = await Checkpointer(store, owns_store=False).aget_state("t")
    assert loaded is not None and loaded.context[1].text() == "message b, corrected"


async def restarted_thread(n: int) -> tuple[InMemoryStore, Checkpointer, AgentState]:
    """A thread of ``n`` messages written by one checkpointer and read back by a new one on the same store."""
    store = InMemoryStore()
    first = [text(f"m{i}") for i in range(n)]
    await Checkpointer(store, owns_store=False).aput("t", AgentState(context=list(first)), first)
    restarted = Checkpointer(store, owns_store=False)
    state = await restarted.aget_state("t")
    assert state is not None
    return store, restarted, state


async def test_a_restarted_read_keys_its_runs_only_when_a_put_looks_beyond_what_it_appends() -> None:
    store, restarted, state = await restarted_thread(6)
    index = restarted._logs.peek("t")
    assert index is not None and index.deferred and not index.read
    new = [text("m6")]
    state.context = [*state.context, *new]  # the view grew by a turn: only the new message is looked up
    await restarted.aput("t", state, new)
    assert index.deferred and list(index.read) == ['"m6"']
    state.context = [*state.context[3:]]  # a manager cut the view: every message of it is looked up
    await restarted.aput("t", state, [])
    assert not index.deferred and index.read['"m6"'][0] == 6 and index.read['"m0"'][0] == 0
    raw = await store.get_state("t")
    assert raw is not None and raw["context"] == [[3, 4, '"m3"', '"m6"']]
    loaded = await Checkpointer(store, owns_store=False).aget_state("t")
    assert loaded is not None and [m.model_dump() for m in loaded.context] == [m.model_dump() for m in state.context]


async def test_a_message_read_back_and_appended_again_is_judged_with_the_runs_read() -> None:
    store, restarted, state = await restarted_thread(4)
    again, new = state.context[1], text("m4")
    state.context = [*state.context, new]
    await restarted.aput("t", state, [again, new])  # the log holds m1 already: only m4 lands, at position 4
    index = restarted._logs.peek("t")
    assert index is not None and not index.deferred and index.read['"m4"'][0] == 4
    raw = await store.get_state("t")
    assert raw is not None and raw["context"] == [[0, 5, '"m0"', '"m4"']]
