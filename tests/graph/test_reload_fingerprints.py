"""Fingerprints travel with stored messages, so a view read back in another process is recognised without hashing.

Also: the budget manager counts what arrives once, without fingerprinting it, and its counts stay exact.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
from pathlib import Path

import pytest

from windowkeeper.blocks import TextBlock, ToolCallBlock, ToolResultBlock
from windowkeeper.context.budget import TokenBudgetContextManager
from windowkeeper.errors import StorageError
from windowkeeper.graph import SQLiteCheckpointer
from windowkeeper.messages import Message
from windowkeeper.state import AgentState, ExecMeta
from windowkeeper.storage.base import decode_message, decode_messages, encode_message
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


def first_stamp(message: Message) -> str:
    """A log row as versions before stamp 2 wrote it: ``,"_fp":"<fingerprint><blake2b check of the body>"}``."""
    body = message.model_dump_json()
    check = hashlib.blake2b(body.encode("utf-8"), digest_size=4).hexdigest()
    return f'{body[:-1]},"_fp":"{message.fingerprint()}{check}"}}'


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
    assert rows and all('"_f2":"' in body for _, body in rows)
    for key, body in rows:  # strip the stamps: what a log written by an earlier version holds
        raw.execute("UPDATE wk_messages SET body = ? WHERE message_key = ?", (body[: body.index(',"_f2"')] + "}", key))
    raw.commit()
    raw.close()
    reopened = SQLiteStore(path)
    loaded = await reopened.load_messages("t")
    await reopened.close()
    assert [m.model_dump() for m in loaded] == [m.model_dump() for m in messages]
    assert all(memo(m) is None for m in loaded)


def test_rows_with_the_first_stamp_still_read_with_their_fingerprint() -> None:
    """Rows written before stamp 2 (``"_fp"``, a blake2b check of the body) read back as they did: the same
    message, its stored fingerprint trusted when the check matches, hashed afresh when the body was edited."""
    message = Message.text_message("héllo 🌍", message_id="m1", raw={"n": 2**80, "_fp": "x"}, metadata={"k": [1.5]})
    old = first_stamp(message)
    assert '"_fp":"' in old and '"_f2"' not in old
    for row in (old, old.encode("utf-8")):
        loaded = decode_message("t", row, 0)
        assert loaded == message and memo(loaded) == message.fingerprint()
        assert loaded.raw == {"n": 2**80, "_fp": "x"} and type(loaded.raw["n"]) is int
        [batch] = decode_messages("t", [row])
        assert batch == message and memo(batch) == message.fingerprint()
    edited = decode_message("t", old.replace("héllo", "hallo"), 0)
    assert edited.text() == "hallo 🌍" and memo(edited) is None


def test_a_stamp_is_trusted_only_for_exactly_what_precedes_it() -> None:
    """Stamp 2's check covers the body and the fingerprint: editing either (or the check) leaves a message read
    from its text and fingerprinted afresh."""
    message = Message.text_message("old row", message_id="m1")
    body = encode_message("t", message)
    stamp = json.loads(body)["_f2"]
    fingerprint, check = stamp[:32], stamp[32:]
    other = "0" * 32 if fingerprint != "0" * 32 else "1" * 32
    for row in (
        body.replace(fingerprint, other),  # the fingerprint alone edited
        body.replace(check, "0" * 8 if check != "0" * 8 else "1" * 8),  # the check alone
        body.replace('"role":"user"', '"role": "user"'),  # the body, to the same message
    ):
        for stored in (row, row.encode("utf-8")):
            loaded = decode_message("t", stored, 0)
            assert loaded == message and memo(loaded) is None
            assert loaded.fingerprint() == message.fingerprint()


def test_a_batch_of_rows_reads_as_each_row_alone_and_names_the_position_of_a_bad_one() -> None:
    """`decode_messages` (every backend's log read) gives what `decode_message` gives row by row, for stamp 2,
    stamp 1, unstamped and edited rows mixed, text and bytes; a row that is not a message is named by its log
    position."""
    messages = [
        Message.text_message("plain", message_id="a"),
        Message(
            role="assistant",
            message_id=7,
            content=[ToolCallBlock(id="c1", name="read", args={"big": -(2**70), "ü": ["ß", None, True]})],
            metadata={"unknown": {"nested": [1, 2.5, "x"]}},
            raw={"provider_field": "值"},
        ),
        Message.tool_message([ToolResultBlock(call_id="c1", name="read", output={"rows": [2**64]})], message_id="r"),
    ]
    rows: list[str | bytes] = []
    for i, message in enumerate(messages * 3):
        body = encode_message("t", message)
        kind = i // len(messages)
        if kind == 1:
            body = first_stamp(message)
        elif kind == 2:
            body = message.model_dump_json()
        rows.append(body.encode("utf-8") if i % 2 else body)
    read = decode_messages("t", rows, 10)
    assert read == messages * 3
    assert [memo(m) for m in read] == [m.fingerprint() for m in messages] * 2 + [None] * 3
    assert [decode_message("t", row, 0) for row in rows] == read
    with pytest.raises(StorageError, match="#12 does not validate"):
        decode_messages("t", [*rows[:2], b'{"role":"nobody"}'], 10, origin="here")


async def test_a_sqlite_log_of_first_stamp_rows_resumes_a_thread(tmp_path: Path) -> None:
    """A log written by the version before stamp 2 resumes with the same view, fingerprints trusted, and new
    messages are appended after it with the new stamp."""
    path = tmp_path / "log.db"
    messages = [m for i in range(3) for m in turn(i)]
    saver = SQLiteCheckpointer(path)
    await saver.aput("t", AgentState(context=list(messages)), messages)
    await saver.aclose()
    raw = sqlite3.connect(path)
    for key, body in raw.execute("SELECT message_key, body FROM wk_messages").fetchall():
        message = decode_message("t", body, 0)
        raw.execute(
            "UPDATE wk_messages SET body = ? WHERE message_key = ?",
            (first_stamp(message), key),
        )
    raw.commit()
    raw.close()
    reopened = SQLiteCheckpointer(path)
    state = await reopened.aget_state("t")
    assert state is not None and state.context == messages
    assert [memo(m) for m in state.context] == [m.fingerprint() for m in messages]
    new = turn(3)
    state.context = [*state.context, *new]
    await reopened.aput("t", state, new)
    await reopened.aclose()
    again = SQLiteCheckpointer(path)
    resumed = await again.aget_state("t")
    await again.aclose()
    assert resumed is not None and resumed.context == [*messages, *new]
    with sqlite3.connect(path) as raw:
        stamps = [body[-50:-42] for (body,) in raw.execute("SELECT body FROM wk_messages ORDER BY seq")]
    assert stamps == [',"_fp":"'] * len(messages) + [',"_f2":"'] * 3


async def test_a_view_reloaded_by_a_new_checkpointer_is_recognised_without_hashing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "threads.db"
    counter = TiktokenCounter()
    manager: TokenBudgetContextManager[AgentState] = TokenBudgetContextManager(
        3000, 500, 0.9, 0.6, counter=counter, keep_tool_results=1, recall=False
    )  # watermarks at which neither reloaded turn clears a result (a pointer records its original's fingerprint)
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
