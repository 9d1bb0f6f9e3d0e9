"""Delta checkpoints: a step writes its new messages and references; what the log does not hold exactly is inline."""

from __future__ import annotations

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
