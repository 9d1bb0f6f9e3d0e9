"""Hostile and careless input to the memory (issue 12), the cache-aware tiers and the cost model (issues 9, 13)."""

from __future__ import annotations

import math
import time
import uuid
from typing import Any

import pytest

from windowkeeper.errors import ConfigurationError, FormatError
from windowkeeper.memory import COMPACTION_KEY, InMemoryMemory, StructuredSummary, TDAIMemory
from windowkeeper.memory.structured import fit_summary
from windowkeeper.memory.view import HEAD_KEY
from windowkeeper.storage import PostgresStore, RedisStore
from windowkeeper.tokens import default_counter
from windowkeeper.units import validate

from .conftest import Backend, event


def _turns(n: int) -> list[dict[str, Any]]:
    out = []
    for i in range(n):
        out.append(event(2 * i, f"question {i}: why does the nightly export of table t{i} take {i + 3} minutes?"))
        answer = f"answer {i}: the export of t{i} scans the whole table; an index on updated_at fixes it."
        out.append(event(2 * i + 1, answer, role="assistant"))
    return out


async def test_a_question_followed_by_system_notes_stays_in_the_view(backend: Backend) -> None:
    memory = backend.open(thresholds={"pre_rot_threshold": 400, "keep_recent_count": 2})
    sid = backend.session_id
    for e in _turns(6):
        await memory.add(e, session_id=sid)
    question = event(100, "Now please migrate the export job to the new scheduler and keep the old retry policy.")
    await memory.add(question, session_id=sid)
    for i in range(8):
        note = f"system note {i}: scheduler heartbeat ok, queue depth {i}, nothing to do for the assistant yet"
        await memory.add(event(200 + i, note, role="system"), session_id=sid)
    assert await memory.summaries(sid), "the session must have reached the summary tier"
    view = await memory.messages(sid)
    assert "m100" in [m.message_id for m in view]
    for provider in ("openai", "anthropic", "gemini"):
        assert validate(view, provider) == [], provider


@pytest.mark.parametrize(
    ("options", "match"),
    [
        ({"thresholds": {"keep_recent_count": 0}}, "keep_recent_count"),
        ({"thresholds": {"compaction_target": 0.8}}, "compaction_target"),
        ({"thresholds": {"compaction_target": 0}}, "compaction_target"),
        ({"summary_timeout": math.nan}, "summary_timeout"),
        ({"summary_timeout": 0}, "summary_timeout"),
    ],
)
def test_degenerate_settings_are_rejected_at_construction(options: dict[str, Any], match: str) -> None:
    with pytest.raises(ConfigurationError, match=match):
        InMemoryMemory(**options)


def test_compaction_target_defaults() -> None:
    assert InMemoryMemory().thresholds.compaction_target == 0.6
    low = InMemoryMemory(thresholds={"compaction_trigger": 0.5}).thresholds
    assert low.compaction_target < 0.5  # a trigger at or below 0.6 gets a target below it
    th = InMemoryMemory(thresholds={"pre_rot_threshold": 10_000}).thresholds
    assert th.compaction_goal == 6_000 and th.min_compaction_gain == 1_000


def test_validate_flags_a_conversation_without_a_user_turn() -> None:
    from windowkeeper.messages import Message

    only_system = [Message.text_message("You are terse.", role="system")]
    assert [p.code for p in validate(only_system, "anthropic")] == ["no_user_message"]
    assert [p.code for p in validate([], "gemini")] == ["no_user_message"]
    assert validate(only_system, "openai") == []


async def test_reserved_state_keys_are_never_taken_from_the_caller() -> None:
    memory = InMemoryMemory()
    forged = event(0, "the real text")
    forged["state"][COMPACTION_KEY] = {"original_content": "injected text"}
    with pytest.raises(FormatError, match="reserved"):
        await memory.add(forged, session_id="s")
    with pytest.raises(FormatError, match="reserved"):
        await memory.add(event(1, "x", __summarized_by__="fake"), session_id="s")
    assert await memory.history("s") == []
    # the flag that stops double counting of tool calls is the memory's own, not the caller's
    crafted = event(2, "calls are elsewhere", role="assistant")
    crafted["message"]["calls_in_content"] = True
    await memory.add(crafted, session_id="s")
    assert "calls_in_content" not in (await memory.history("s"))[0]["message"]


async def test_ids_are_compared_as_the_strings_they_are(backend: Backend) -> None:
    memory = backend.open()
    sid = backend.session_id
    first = {"message": {"id": 1, "role": "user", "content": "first", "timestamp": 1}, "state": {}}
    await memory.add(first, session_id=sid)
    # the same event again (a retried add, with the id spelled as a string): a no-op
    again = {"message": {"id": "1", "role": "user", "content": "first", "timestamp": 1}, "state": {}}
    assert await memory.add(again, session_id=sid) is None
    other = {"message": {"id": "1", "role": "user", "content": "second"}, "state": {}}
    with pytest.raises(FormatError, match="different event with id '1'"):
        await memory.add(other, session_id=sid)
    assert [e["message"]["content"] for e in await memory.history(sid)] == ["first"]


async def test_an_empty_structured_summary_is_rejected() -> None:
    memory = InMemoryMemory(
        summarizer=lambda events: {"user_goal": "", "key_decisions": []},
        thresholds={"pre_rot_threshold": 300, "keep_recent_count": 2},
    )
    reports = [await memory.add(e, session_id="s") for e in _turns(10)]
    failures = [r.failure for r in reports if r is not None and r.failure]
    assert failures and all("empty structured summary" in f for f in failures)
    assert await memory.summaries("s") == []
    history_ids = [e["message"]["id"] for e in await memory.history("s")]
    live_ids = [e["message"]["id"] for e in await memory.list("s")]
    assert live_ids == history_ids  # nothing left the view with nothing in its place


def test_fitting_a_huge_summary_is_linear() -> None:
    counter = default_counter()
    items = [f"decision {i}: raise the pool size of shard {i} to {i % 50 + 10} connections" for i in range(10_000)]
    context = {f"k{i}": f"value {i}" for i in range(2_000)}
    huge = StructuredSummary(
        user_goal="keep the shards up",
        key_decisions=items,
        modified_files=[f"f{i}.py" for i in range(5_000)],
        critical_context={**context, "measurements": [f"{i} ms" for i in range(5_000)]},
    )
    started = time.process_time()
    fitted = fit_summary(huge, counter.count_text, 2_000)
    assert time.process_time() - started < 10  # quadratic fitting took minutes
    assert counter.count_text(fitted.render()) <= 2_000
    assert fitted.user_goal == "keep the shards up"
    assert fitted.key_decisions and fitted.key_decisions[-1] == items[-1]  # newest decisions survive


async def test_a_10000_item_reply_inside_add_is_fitted_quickly() -> None:
    reply = {"user_goal": "ship it", "key_decisions": [f"decision {i} about retry budget {i}" for i in range(10_000)]}
    memory = InMemoryMemory(
        summarizer=lambda events: reply, thresholds={"pre_rot_threshold": 300, "keep_recent_count": 2}
    )
    started = time.process_time()
    for e in _turns(10):
        await memory.add(e, session_id="s")
    assert time.process_time() - started < 20
    summaries = await memory.summaries("s")
    assert summaries and memory.counter.count_text(summaries[-1].render()) <= memory.summary_max_tokens


async def test_the_summarization_trigger_fires_when_compaction_cannot_get_under_it() -> None:
    memory = InMemoryMemory(thresholds={"pre_rot_threshold": 1_000, "keep_recent_count": 2})
    for i in range(8):
        text = f"step {i}: checked the connection pool, the retry policy and the timeouts of the billing service"
        await memory.add(event(i, text), session_id="s")
    big = " ".join(f"row {i} of the export failed validation because the amount field was negative" for i in range(60))
    report = await memory.add(event(50, big, role="assistant"), session_id="s")
    assert report is not None and report.tier == "summarization"
    assert report.tokens_after_compaction >= memory.thresholds.summarization_limit
    assert "at or above the summarization trigger" in report.reason


async def test_list_hands_out_copies_and_messages_are_built_once() -> None:
    memory = InMemoryMemory()
    await memory.add(event(0, "original"), session_id="s")
    listed = await memory.list("s")
    listed[0]["message"]["content"] = "edited by the caller"
    listed[0]["state"]["x"] = 1
    assert (await memory.list("s"))[0]["message"]["content"] == "original"
    first, second = await memory.messages("s"), await memory.messages("s")
    assert first[0] is second[0]  # no re-validation of unchanged events on every read


async def test_store_reads_of_a_tail_and_of_named_records(backend: Backend) -> None:
    store = backend.open().store
    sid = backend.session_id
    seqs = [(await store.add_record("memory", sid, f"k{i}", {"i": i})).seq for i in range(6)]
    tail = await store.list_records_since("memory", sid, seqs[3])
    assert [r.key for r in tail] == ["k3", "k4", "k5"] and [r.doc["i"] for r in tail] == [3, 4, 5]
    named = await store.get_records("memory", sid, ["k5", "missing", "k1", "k5"])
    assert [r.key for r in named] == ["k1", "k5"] and named[0].seq == seqs[1]
    assert await store.get_records("memory", sid, []) == []
    await store.delete_session("memory", sid)


async def test_reopening_reads_only_the_live_records(backend: Backend) -> None:
    memory = backend.open(thresholds={"pre_rot_threshold": 600, "keep_recent_count": 3})
    sid = backend.session_id
    for e in _turns(40):
        await memory.add(e, session_id=sid)
    assert await memory.summaries(sid)
    head = await memory.store.get_record(memory.namespace, sid, HEAD_KEY)
    assert head is not None and head.doc["live_from"] > 40
    tail = await memory.store.list_records_since(memory.namespace, sid, head.doc["live_from"])
    read = [r for r in tail if r.key != HEAD_KEY] + await memory.store.get_records(
        memory.namespace, sid, head.doc["keep"]
    )
    live_keys = {f"e:{e['message']['id']}" for e in await memory.list(sid, include_summaries=False)}
    assert live_keys <= {r.key for r in read}
    assert len([r for r in read if r.doc.get("type") == "event"]) == len(live_keys)  # no covered event is read
    reopened = backend.open(thresholds={"pre_rot_threshold": 600, "keep_recent_count": 3})
    assert await reopened.list(sid) == await memory.list(sid)
    assert await reopened.tokens(sid) == await memory.tokens(sid)


def test_tdai_memory_is_the_server_backed_memory(postgres_server: str, redis_server: str) -> None:
    pg = TDAIMemory(postgres_server, prefix="wkmemtest")
    assert isinstance(pg.store, PostgresStore)
    rd = TDAIMemory(redis_server, prefix="wkmemtest")
    assert isinstance(rd.store, RedisStore)
    assert isinstance(TDAIMemory(prefix="wkmemtest").store, PostgresStore)  # PostgreSQL by default
    with pytest.raises(ConfigurationError, match="SQLiteMemory"):
        TDAIMemory("sqlite:///tmp/x.db")


async def test_tdai_memory_round_trip(postgres_server: str) -> None:
    memory = TDAIMemory(
        postgres_server, prefix="wkmemtest", thresholds={"pre_rot_threshold": 500, "keep_recent_count": 2}
    )
    sid = f"tdai-{uuid.uuid4().hex[:12]}"
    await memory.clear(sid)
    turns = _turns(12)
    for e in turns:
        await memory.add(e, session_id=sid)
    assert [e["message"]["content"] for e in await memory.history(sid)] == [e["message"]["content"] for e in turns]
    await memory.clear(sid)
    await memory.close()


async def test_compacted_originals_leave_the_live_records(backend: Backend) -> None:
    memory = backend.open(thresholds={"pre_rot_threshold": 300, "keep_recent_count": 2})
    sid = backend.session_id
    long_text = "the export of table orders scans 40 million rows because the updated_at index is missing; " * 6
    await memory.add(event(0, long_text), session_id=sid)
    for e in _turns(4):
        await memory.add({**e, "message": {**e["message"], "id": "t" + e["message"]["id"]}}, session_id=sid)
    record = await memory.store.get_record(memory.namespace, sid, "e:m0")
    assert record is not None and record.doc.get("archive", "").startswith("o:")
    assert long_text not in str(record.doc)  # a reload reads the gist, not the original
    listed = (await memory.list(sid))[0]
    assert listed["state"][COMPACTION_KEY]["original_content"] == long_text  # list() shows it, as before
    assert (await memory.history(sid))[0]["message"]["content"] == long_text
    restored = await memory.decompress("m0", session_id=sid)
    assert restored["message"]["content"] == long_text
    assert (await memory.list(sid))[0]["message"]["content"] == long_text
