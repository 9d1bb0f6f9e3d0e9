"""Fingerprints travel with stored messages, so a view read back in another process is recognised without hashing.

Also: the budget manager counts what arrives once, without fingerprinting it, and its counts stay exact.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from windowkeeper.blocks import TextBlock, ToolCallBlock, ToolResultBlock
from windowkeeper.context.budget import TokenBudgetContextManager
from windowkeeper.graph import SQLiteCheckpointer
from windowkeeper.messages import Message
from windowkeeper.state import AgentState, ExecMeta
from windowkeeper.storage.base import decode_message, encode_message
from windowkeeper.storage.sqlite import SQLiteStore
from windowkeeper.tokens import TiktokenCounter, counting_once


def memo(message: Message) -> str | None:
    private = message.__pydantic_private__
    assert private is not None
    value = private.get("_fingerprint")
    assert value is None or isinstance(value, str)
    return value


def turn(i: int) -> list[Message]:
    output = "\n".join(f"row {k} of result {i}: value_{i}_{k}" for k in range(40))
    return [
        Message.text_message(f"look at item {i}", message_id=f"u{i}", timestamp=0.0),
        Message(role="assistant", message_id=f"c{i}", content=[ToolCallBlock(id=f"call_{i}", name="read", args={})]),
        Message.tool_message([ToolResultBlock(call_id=f"call_{i}", name="read", output=output)], message_id=f"r{i}"),
    ]


def test_a_stored_message_comes_back_with_its_fingerprint_and_an_edit_clears_it() -> None:
    message = Message.text_message("héllo", message_id="m1", raw={"_fp": "x" * 40})
    body = encode_message("t", message)
    loaded = decode_message("t", body, 0)
    assert loaded == message and memo(loaded) == message.fingerprint()
    assert memo(decode_message("t", body.encode("utf-8"), 0)) == message.fingerprint()
    loaded.content = [TextBlock(text="changed")]
    assert memo(loaded) is None and loaded.fingerprint() != message.fingerprint()


def test_rows_without_a_fingerprint_or_edited_outside_load_and_are_hashed_afresh() -> None:
    message = Message.text_message("old row", message_id="m1")
    old = decode_message("t", message.model_dump_json(), 0)  # written before fingerprints were stored
    assert old.model_dump() == message.model_dump() and memo(old) is None
    assert old.fingerprint() == message.fingerprint()
    tampered = encode_message("t", message).replace("old row", "new row")
    loaded = decode_message("t", tampered, 0)
    assert loaded.text() == "new row" and memo(loaded) is None
    assert loaded.fingerprint() == Message.text_message("new row", message_id="m1").fingerprint()


async def test_a_sqlite_log_written_before_fingerprints_still_loads(tmp_path: Path) -> None:
    path = tmp_path / "log.db"
    messages = turn(0)
    store = SQLiteStore(path)
    await store.append_messages("t", messages)
    await store.close()
    raw = sqlite3.connect(path)
    rows = raw.execute("SELECT message_key, body FROM wk_messages").fetchall()
    assert rows and all('"_fp":"' in body for _, body in rows)
    for key, body in rows:  # strip the stamps: what a log written by an earlier version holds
        raw.execute("UPDATE wk_messages SET body = ? WHERE message_key = ?", (body[: body.index(',"_fp"')] + "}", key))
    raw.commit()
    raw.close()
    reopened = SQLiteStore(path)
    loaded = await reopened.load_messages("t")
    await reopened.close()
    assert [m.model_dump() for m in loaded] == [m.model_dump() for m in messages]
    assert all(memo(m) is None for m in loaded)


async def test_a_view_reloaded_by_a_new_checkpointer_is_recognised_without_hashing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "threads.db"
    counter = TiktokenCounter()
    manager: TokenBudgetContextManager[AgentState] = TokenBudgetContextManager(
        3000, 500, counter=counter, keep_tool_results=1, recall=False
    )
    state = AgentState(execution_meta=ExecMeta(thread_id="t"))
    for i in range(12):
        saver = SQLiteCheckpointer(path)
        state = await saver.aget_state("t") or state
        new = turn(i)
        state.context = [*state.context, *new]
        state = await manager.atrim_context(state)
        await saver.aput("t", state, new)
        await saver.aclose()
    assert any("cleared" in str(m.metadata) for m in state.context)  # pointers are stored inline
    hashed: list[str] = []
    original = Message.fingerprint

    def counting(self: Message) -> str:
        if memo(self) is None:
            hashed.append(str(self.message_id))
        return original(self)

    for i in (12, 13):  # each turn read back by a new checkpointer, as after a restart
        saver = SQLiteCheckpointer(path)
        reloaded = await saver.aget_state("t")
        assert reloaded is not None and all(memo(m) is not None for m in reloaded.context)
        monkeypatch.setattr(Message, "fingerprint", counting)
        new = turn(i)
        reloaded.context = [*reloaded.context, *new]
        result = await manager.atrim_context(reloaded)
        assert hashed == []  # neither the reloaded view nor the new messages were hashed to recognise them
        metrics = manager.last_metrics
        assert metrics is not None and (metrics.prefix_stable or metrics.tokens_saved > 0)
        monkeypatch.undo()
        # the running count is the exact count of the view
        assert metrics.zones["recent"] == counter.count_messages(result.context)
        await saver.aput("t", result, new)
        await saver.aclose()


def test_count_message_once_is_count_message_without_hashing() -> None:
    counter = TiktokenCounter()
    fresh = turn(0)
    once = counting_once(counter)
    assert [once(m) for m in fresh] == [TiktokenCounter().count_message(m) for m in turn(0)]
    assert all(memo(m) is None for m in fresh) and counter.cache_size == 0
    counted = turn(1)
    assert [counter.count_message(m) for m in counted] == [once(m) for m in counted]  # memo path when hashed

    class Custom(TiktokenCounter):
        def count_message(self, message: Message) -> int:
            return 7

    assert counting_once(Custom())(fresh[0]) == 7  # an overriding counter keeps its own pricing
