"""The memory's stored record layout (issue 13): text stored once, reloads that decode no event text and skip the
archived originals, and sessions written in the previous layout still loading as they were."""

from __future__ import annotations

import json
import pickle
from typing import Any

import pytest

from windowkeeper.blocks import TextBlock, ToolCallBlock, ToolResultBlock
from windowkeeper.errors import FormatError, StorageError
from windowkeeper.memory import base as memory_base
from windowkeeper.memory.events import SOURCE_TEXT_KEY, pack_source
from windowkeeper.memory.view import HEAD_KEY, TOKENS_KEY, peek
from windowkeeper.messages import Message
from windowkeeper.storage import InMemoryStore, Record, SessionStore
from windowkeeper.tokens import default_counter

from .conftest import Backend

THRESHOLDS = {"pre_rot_threshold": 1400, "keep_recent_count": 4}


def _messages(turns: int) -> list[Message]:
    """A tool-using conversation: user text, an assistant call with reasoning text, the tool's long result, a reply."""
    out: list[Message] = []
    for i in range(turns):
        call = f"call_{i}"
        question = f"question {i}: why is the export of t{i} slow?"
        out.append(Message.text_message(question, role="user", message_id=f"u{i}"))
        out.append(
            Message(
                message_id=f"a{i}",
                role="assistant",
                content=[
                    TextBlock(text=f"Reading the plan of t{i}."),
                    ToolCallBlock(id=call, name="explain", args={"t": i}),
                ],
            )
        )
        rows = "\n".join(f'Seq Scan on t{i}  (cost=0.00..{r}.00 rows={r * 7} width=64) "ünï"' for r in range(30))
        out.append(Message(message_id=f"r{i}", role="tool", content=[ToolResultBlock(call_id=call, output=rows)]))
        answer = f"answer {i}: t{i} needs an index on updated_at."
        out.append(Message.text_message(answer, role="assistant", message_id=f"b{i}"))
    return out


def _dumps(messages: list[Message]) -> list[dict[str, Any]]:
    return [m.model_dump(mode="json") for m in messages]


def _old_event_doc(event: dict[str, Any], source: dict[str, Any] | None) -> dict[str, Any]:
    """How `BaseMemory.add` laid out an event doc before this change: event first, the whole source, token count
    last (added by `with_tokens`)."""
    return {"type": "event", "event": event, "summary_id": None, "pinned": False, "source": source}


async def test_a_message_text_is_stored_once_and_given_back_exactly(backend: Backend) -> None:
    memory = backend.open(thresholds=THRESHOLDS)
    sid = backend.session_id
    added = _messages(8)
    for message in added:
        await memory.add(message, session_id=sid)
    assert await memory.summaries(sid)  # the tiers ran: compaction, archives and a summary are all exercised
    records = await memory.store.list_records(memory.namespace, sid)
    packed = [r for r in records if r.doc.get(SOURCE_TEXT_KEY)]
    assert packed, "tool results and plain texts keep their text only in the event"
    for record in records:
        if record.key == "e:r7":  # the newest tool result: live and uncompacted, its text appears once
            assert json.dumps(record.doc, ensure_ascii=False).count("Seq Scan on t7  (cost=0.00..29.00") == 1
    assert _dumps(await memory.history_messages(sid)) == _dumps(added)
    assert [e["message"]["id"] for e in await memory.history(sid)] == [m.message_id for m in added]
    reopened = backend.open(thresholds=THRESHOLDS)
    assert _dumps(await reopened.messages(sid)) == _dumps(await memory.messages(sid))
    assert await reopened.tokens(sid) == await memory.tokens(sid)
    assert await reopened.add(added[-1], session_id=sid) is None  # a retried add is recognised through the packing
    changed = Message.text_message("a different answer", role="assistant", message_id="b7")
    with pytest.raises(FormatError, match="different event"):
        await reopened.add(changed, session_id=sid)


async def test_a_decompressed_archived_message_comes_back_whole(backend: Backend) -> None:
    memory = backend.open(thresholds={"pre_rot_threshold": 2000, "keep_recent_count": 4})
    sid = backend.session_id
    added = _messages(10)
    for message in added:
        await memory.add(message, session_id=sid)
    record = await memory.store.get_record(memory.namespace, sid, "e:r0")
    assert record is not None and str(record.doc.get("archive", "")).startswith("o:")
    restored = await memory.decompress("r0", session_id=sid)
    assert restored["message"]["content"] == added[2].content[0].output  # type: ignore[union-attr]
    view = {m.message_id: m for m in await memory.messages(sid)}
    if "r0" in view:  # not summarized away meanwhile: the view sends the exact original again
        assert view["r0"].model_dump(mode="json") == added[2].model_dump(mode="json")
    assert _dumps(await memory.history_messages(sid)) == _dumps(added)


async def test_a_reopen_decodes_no_event_text_and_skips_archives(backend: Backend) -> None:
    memory = backend.open(thresholds=THRESHOLDS)
    sid = backend.session_id
    for message in _messages(8):
        await memory.add(message, session_id=sid)
    head = await memory.store.get_record(memory.namespace, sid, HEAD_KEY)
    assert head is not None
    every = await memory.store.list_records_since(memory.namespace, sid, head.doc["live_from"])
    assert any(r.key.startswith("o:") for r in every), "an archive was written inside the live range"
    read = await memory.store.list_records_since_skipping(memory.namespace, sid, head.doc["live_from"], "o:")
    assert [r.key for r in read] == [r.key for r in every if not r.key.startswith("o:")]

    reopened = backend.open(thresholds=THRESHOLDS)
    assert await reopened.tokens(sid) == await memory.tokens(sid)
    view = reopened._views[sid]
    kept = set(head.doc["keep"])
    lazy = [e for e in view.events if e.key not in kept]
    assert lazy and all(e.record.body is not None for e in lazy)  # token counts came from the leading fields
    assert _dumps(await reopened.messages(sid)) == _dumps(await memory.messages(sid))
    assert await reopened.list(sid) == await memory.list(sid)


@pytest.mark.parametrize("drop_tokens", [False, True])
async def test_sessions_written_in_the_previous_layout_still_load(
    backend: Backend, monkeypatch: pytest.MonkeyPatch, drop_tokens: bool
) -> None:
    """Records of the previous writer (event first, whole source, token count last or, older still, absent)
    load, reload, compact, decompress and give back history exactly; new adds mix in the new layout."""
    added = _messages(10)
    with monkeypatch.context() as patch:
        patch.setattr(memory_base, "_event_doc", _old_event_doc)
        old = backend.open(thresholds=THRESHOLDS)
        sid = backend.session_id
        for message in added[:24]:
            await old.add(message, session_id=sid)
        expected_view = _dumps(await old.messages(sid))
        expected_tokens = await old.tokens(sid)
    records = await old.store.list_records(old.namespace, sid)
    assert not any(SOURCE_TEXT_KEY in r.doc for r in records)
    assert any(r.key.startswith("o:") for r in records)
    if drop_tokens:  # the layout before token counts were stored: every live event is counted on load
        for record in records:
            if record.doc.get("type") == "event" and TOKENS_KEY in record.doc:
                doc = {k: v for k, v in record.doc.items() if k != TOKENS_KEY}
                await old.store.update_record(old.namespace, sid, record.key, doc, expected_version=record.version)
    before = {r.key: r.version for r in await old.store.list_records(old.namespace, sid)}

    reopened = backend.open(thresholds=THRESHOLDS)
    assert await reopened.tokens(sid) == expected_tokens
    assert _dumps(await reopened.messages(sid)) == expected_view
    assert _dumps(await reopened.history_messages(sid)) == _dumps(added[:24])
    assert await reopened.add(added[23], session_id=sid) is None  # an old record recognises its retried add
    for message in added[24:]:
        await reopened.add(message, session_id=sid)
    rewritten = [
        r
        for r in await reopened.store.list_records(reopened.namespace, sid)
        if r.key in before and r.version > before[r.key] and r.doc.get("type") == "event"
    ]
    assert rewritten, "the new adds compacted or summarized some events of the old layout"
    for record in rewritten:  # written again since: now in the new layout
        assert tuple(record.doc)[:4] == ("type", "summary_id", "pinned", TOKENS_KEY)
        if not record.doc["summary_id"]:  # a live one is read without decoding its text on the next reload
            body = json.dumps(record.doc, ensure_ascii=False, separators=(",", ":"))
            lazy = Record.stored(record.key, record.seq, record.version, body)
            assert peek(lazy, reopened.counter) == (True, record.doc[TOKENS_KEY]["n"]) and lazy.body is not None
    archived = [r for r in await reopened.store.list_records(reopened.namespace, sid) if r.doc.get("archive")]
    restored = await reopened.decompress(archived[0].key[2:], session_id=sid)
    assert "[COMPACTED" not in restored["message"]["content"]
    assert _dumps(await reopened.history_messages(sid)) == _dumps(added)
    again = backend.open(thresholds=THRESHOLDS)
    assert await again.tokens(sid) == await reopened.tokens(sid)
    assert _dumps(await again.messages(sid)) == _dumps(await reopened.messages(sid))


def test_packing_replaces_only_an_exact_copy_of_the_text() -> None:
    two = Message(message_id="x", role="assistant", content=[TextBlock(text="a"), TextBlock(text="b")])
    event = {"message": {"content": "a\nb"}, "state": {}}
    doc: dict[str, Any] = {"event": event, "source": two.model_dump(mode="json")}
    pack_source(doc)
    assert SOURCE_TEXT_KEY not in doc and doc["source"] == two.model_dump(mode="json")  # no single copy: kept whole
    one = Message.text_message("same", role="user", message_id="y").model_dump(mode="json")
    doc = {"event": {"message": {"content": "same"}, "state": {}}, "source": one}
    pack_source(doc)
    assert doc[SOURCE_TEXT_KEY] == [0, "text"] and doc["source"]["content"][0]["text"] is None
    assert one["content"][0]["text"] == "same"  # the caller's dump is not edited


def test_peek_reads_the_leading_fields_and_falls_back_to_the_doc() -> None:
    counter = default_counter()
    name = counter.name
    fast = '{"type":"event","summary_id":null,"pinned":false,"tokens":{"counter":"' + name + '","n":17},"event":'
    lazy = Record.stored("e:1", 3, 1, fast + "{BROKEN")
    assert peek(lazy, counter) == (True, 17) and lazy.body is not None  # answered without decoding
    covered_body = '{"type":"event","summary_id":"abc","pinned":false,"tokens":{"counter":"x","n":1}}'
    covered = Record.stored("e:2", 4, 2, covered_body)
    assert peek(covered, counter) == (False, None)
    other = Record.stored("e:3", 5, 1, fast.replace(name, "another-counter") + '{"message":{}}}')
    assert peek(other, counter) == (True, None)  # another counter's count: recounted by the caller
    old = {"type": "event", "event": {}, "summary_id": None, "pinned": False, "tokens": {"counter": name, "n": 9}}
    assert peek(Record.stored("e:4", 6, 1, json.dumps(old)), counter) == (True, 9)
    with pytest.raises(StorageError, match=r"e:1.*not valid JSON"):
        _ = lazy.doc


def test_a_lazily_decoded_record_behaves_like_a_decoded_one() -> None:
    doc = {"type": "event", "n": [1, 2, {"ü": None}]}
    eager, lazy = Record("k", 2, 3, doc), Record.stored("k", 2, 3, json.dumps(doc))
    assert eager == lazy and repr(eager) == repr(lazy) and lazy.body is None  # compared by decoding
    assert pickle.loads(pickle.dumps(Record.stored("k", 2, 3, json.dumps(doc)))) == eager
    with pytest.raises(AttributeError, match="immutable"):
        eager.version = 4  # type: ignore[misc]
    with pytest.raises(TypeError):
        hash(eager)


async def test_the_default_skipping_read_filters_any_store() -> None:
    store = InMemoryStore()
    for key in ("e:1", "o:1", "e:2", "o:2", "s:1"):
        await store.add_record("ns", "s", key, {"k": key})
    default = await SessionStore.list_records_since_skipping(store, "ns", "s", 2, "o:")
    built_in = await store.list_records_since_skipping("ns", "s", 2, "o:")
    assert [r.key for r in default] == [r.key for r in built_in] == ["e:2", "s:1"]
    assert default == built_in
