"""Configuration, hooks, Message round-trips and structured summarizers (in-memory store: behaviour, not IO)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import pytest

from windowkeeper.blocks import TextBlock, ToolCallBlock, ToolResultBlock
from windowkeeper.errors import ConfigurationError, FormatError, ProviderError
from windowkeeper.llm.scripted import ScriptedClient
from windowkeeper.memory import (
    COMPACTION_KEY,
    BaseMemory,
    InMemoryMemory,
    StructuredLLMSummarizer,
    StructuredSummary,
    make_gist,
)
from windowkeeper.memory.structured import parse_structured_json, summarize_structured
from windowkeeper.messages import Message

from .conftest import event


@pytest.mark.parametrize(
    ("thresholds", "key"),
    [
        ({"compaction_trigger": 0}, "compaction_trigger"),
        ({"summarization_trigger": 1.5}, "summarization_trigger"),
        ({"compaction_trigger": 0.9, "summarization_trigger": 0.9}, "compaction_trigger"),
        ({"pre_rot_threshold": 0}, "pre_rot_threshold"),
        ({"keep_recent_count": -1}, "keep_recent_count"),
        ({"pre_rot": 10}, "pre_rot"),
        ({"summarization_target": 0.85}, "summarization_target"),
        ({"summarization_target": 0}, "summarization_target"),
    ],
)
def test_bad_thresholds_name_the_key(thresholds: dict[str, Any], key: str) -> None:
    with pytest.raises(ConfigurationError, match=key):
        InMemoryMemory(thresholds=thresholds)


def test_defaults_and_partial_thresholds() -> None:
    memory = InMemoryMemory(thresholds={"pre_rot_threshold": 100_000})
    th = memory.thresholds
    assert (th.pre_rot_threshold, th.compaction_trigger, th.summarization_trigger, th.keep_recent_count) == (
        100_000,
        0.8,
        0.95,
        10,
    )
    assert th.compaction_limit == 80_000 and th.summarization_limit == 95_000
    assert InMemoryMemory().thresholds.pre_rot_threshold == 150_000
    assert th.summarization_target is None and th.summarization_goal is None  # summaries keep the newest 10
    assert InMemoryMemory().enable_context_management is True


async def test_bad_events_fail_before_storing() -> None:
    memory = InMemoryMemory()
    with pytest.raises(FormatError, match=r"message\.role"):
        await memory.add({"message": {"role": "robot", "content": "x"}}, session_id="s")
    with pytest.raises(FormatError, match=r"message\.content"):
        await memory.add({"message": {"role": "user", "content": ["x"]}}, session_id="s")
    assert await memory.history("s") == []


async def test_manual_mode_and_duplicate_ids() -> None:
    memory = InMemoryMemory(
        enable_context_management=False, thresholds={"pre_rot_threshold": 50, "keep_recent_count": 2}
    )
    for i in range(6):
        text = f"a fairly long message number {i} about the flaky retry loop"
        assert await memory.add(event(i, text), session_id="s") is None
    same = event(0, "a fairly long message number 0 about the flaky retry loop")
    assert await memory.add(same, session_id="s") is None  # the same event again (a retry): ignored
    with pytest.raises(FormatError, match="already holds a different event with id 'm0'"):
        await memory.add(event(0, "different"), session_id="s")  # a different event: never silently dropped
    view = await memory.list("s")
    assert [e["message"]["id"] for e in view] == [f"m{i}" for i in range(6)]
    assert all(COMPACTION_KEY not in e["state"] for e in view)
    report = await memory.manage_context("s")
    assert report.tier in ("compaction", "summarization")
    assert report.tokens_after < report.tokens_before


async def test_messages_round_trip_and_pending_calls_are_never_compacted() -> None:
    memory = InMemoryMemory(
        enable_context_management=False,
        thresholds={
            "pre_rot_threshold": 120,
            "compaction_trigger": 0.5,
            "summarization_trigger": 1.0,
            "keep_recent_count": 1,
        },
    )
    call = ToolCallBlock(id="c1", name="edit_file", args={"path": "src/app/db.py", "new": "pool_size = 50"})
    msgs = [
        Message.text_message("Please fix the timeout in the database layer, it fails after 30 s", message_id="u1"),
        Message(message_id="a1", role="assistant", content=[TextBlock(text="Editing the pool settings now."), call]),
        Message.tool_message(
            [ToolResultBlock(call_id="c1", output="patched src/app/db.py: 1 line changed")], message_id="t1"
        ),
        Message(
            message_id="a2",
            role="assistant",
            content=[
                ToolCallBlock(id="c2", name="run_tests", args={"path": "tests/test_db.py"}),
                ToolCallBlock(id="c3", name="run_tests", args={"path": "tests/test_pool.py"}),
            ],
        ),
        # one of two parallel calls answered: the unit is still pending, and only this result is "recent"
        Message.tool_message([ToolResultBlock(call_id="c2", output="4 passed")], message_id="t2"),
    ]
    for m in msgs:
        await memory.add(m, session_id="s")
    view = await memory.list("s")
    assert view[1]["message"]["tool_calls"] == [{"id": "c1", "name": "edit_file", "arguments": dict(call.args)}]
    assert view[2]["message"]["tool_call_id"] == "c1"
    report = await memory.manage_context("s")
    assert report.tier in ("compaction", "summarization") and report.compacted_ids
    assert "a2" not in report.compacted_ids + report.summarized_ids  # the pending call stays whole
    assert set(report.compacted_ids) <= {"u1", "a1", "t1"}
    restored = await memory.history_messages("s")
    assert [m.model_dump() for m in restored] == [m.model_dump() for m in msgs]
    live = await memory.messages("s")
    assert live[-1].model_dump() == msgs[-1].model_dump()
    kept = [m.message_id for m in live if not str(m.message_id).startswith("summary:")]
    assert kept == [i for i in ["u1", "a1", "t1", "a2", "t2"] if i not in report.summarized_ids]


async def test_decompress_restores_and_pins() -> None:
    memory = InMemoryMemory(
        enable_context_management=False,
        thresholds={
            "pre_rot_threshold": 40,
            "compaction_trigger": 0.5,
            "summarization_trigger": 1.0,
            "keep_recent_count": 1,
            "min_compaction_gain": 1,
        },
    )
    text = "I need help implementing a user authentication system with JWT tokens, password hashing and roles"
    await memory.add(event(0, text, userGoal="implement auth"), session_id="s")
    await memory.add(event(1, "ok, starting with the password hashing module and its tests"), session_id="s")
    await memory.manage_context("s")
    compacted = (await memory.list("s"))[0]
    assert compacted["message"]["content"] == "[COMPACTED: I need help implementing a user authentication system]"
    info = compacted["state"][COMPACTION_KEY]
    assert info["original_content"] == text and info["strategy"] == "gist" and info["tokens_saved"] > 0
    datetime.fromisoformat(info["compacted_at"])
    restored = await memory.restore("m0", session_id="s")
    assert restored["message"]["content"] == text and restored["state"] == {"userGoal": "implement auth"}
    again = await memory.manage_context("s")
    assert "m0" not in again.compacted_ids  # restored events are pinned
    with pytest.raises(LookupError, match="nope"):
        await memory.decompress("nope", session_id="s")


def test_gist_is_deterministic_and_short() -> None:
    assert make_gist("Our production database is timing out after 30 seconds, affecting users", "user") == (
        "Our production database is timing out after 30"
    )
    chinese = "数据库在生产环境中三十秒后超时\uff0c影响了一千二百个用户"
    assert make_gist(chinese, "user") == "数据库在生产环境中三十秒后超时"
    assert make_gist("", "assistant") == "assistant message"


class CodeAwareMemory(BaseMemory[Any]):
    """The reference's customization pattern: config dict, bound summarizer method, overridden hooks."""

    def __init__(self, config: dict[str, Any] | None = None) -> None:
        super().__init__({**(config or {}), "summarizer": self._custom_summarizer})
        self.stored: list[str] = []
        self.cleared: list[int] = []

    async def _compact_event(self, event: dict[str, Any]) -> None:
        if "```" in event["message"]["content"]:
            event["state"]["__compaction__"] = {
                "original_content": event["message"]["content"],
                "compacted_at": datetime.now().isoformat(),
                "tokens_saved": 0,
                "strategy": "code_compression",
            }
            event["message"]["content"] = "[COMPACTED: Code discussion]"
        else:
            await super()._compact_event(event)

    async def _custom_summarizer(self, events: list[dict[str, Any]]) -> dict[str, Any]:
        return {
            "count": len(events),
            "time_range": {"start": events[0]["message"]["timestamp"], "end": events[-1]["message"]["timestamp"]},
            "timestamp": datetime.now(),
            "user_goal": "custom goal",
        }

    async def _store_summary(self, session_id: str, summary: StructuredSummary) -> None:
        self.stored.append(summary.id)
        await super()._store_summary(session_id, summary)

    async def _clear_summarized_events(self, session_id: str, keep_recent_count: int) -> None:
        self.cleared.append(keep_recent_count)
        await super()._clear_summarized_events(session_id, keep_recent_count)


async def test_subclass_hooks_work_like_the_reference() -> None:
    memory = CodeAwareMemory({"thresholds": {"pre_rot_threshold": 200, "keep_recent_count": 2}})
    code = "Here is the fix:\n```python\npool = create_pool(size=50, timeout=30)\n```\nThat should do it."
    await memory.add(event(0, code), session_id="s")
    report = await memory.add(event(1, "Sounds good, the timeout is gone on staging."), session_id="s")
    assert report is not None
    assert (await memory.list("s"))[0]["message"]["content"] in (code, "[COMPACTED: Code discussion]")
    for i in range(2, 30):
        await memory.add(event(i, f"step {i}: re-ran the load test with 1200 users and 50 connections"), session_id="s")
    assert memory.stored and memory.cleared == [2] * len(memory.cleared)
    summaries = await memory.summaries("s", include_inactive=True)
    assert [s.id for s in summaries] == memory.stored
    assert all(s.user_goal == "custom goal" for s in summaries)
    history = await memory.history("s")
    assert history[0]["message"]["content"] == code
    assert history[0]["state"]["__summarized_by__"] == summaries[0].id
    assert summaries[0].time_range.start is not None and summaries[0].count == len(summaries[0].covered_ids)


def test_extractive_structured_summary_of_the_reference_session() -> None:
    events = [
        event(
            0,
            "Our production database is timing out after 30 seconds, affecting 1200 users",
            issue="db_timeout",
            severity="critical",
            environment="production",
        ),
        {
            "message": {
                "id": "m1",
                "role": "assistant",
                "content": "Decided to increase the pool size from 10 to 50.",
                "tool_calls": [{"id": "c1", "function": {"name": "edit_file", "arguments": '{"path": "database.py"}'}}],
            },
            "state": {},
        },
        {
            "message": {
                "id": "m2",
                "role": "tool",
                "content": "TimeoutError: connection timeout after 30s",
                "tool_call_id": "c1",
            },
            "state": {},
        },
        event(
            3,
            "I updated user_service.py and added connection retry logic. Let's implement a circuit breaker.",
            role="assistant",
        ),
    ]
    summary = summarize_structured(events)
    assert summary.count == 4 and summary.covered_ids == ["m0", "m1", "m2", "m3"]
    assert summary.user_goal == "Our production database is timing out after 30 seconds, affecting 1200 users"
    assert summary.modified_files == ["database.py", "user_service.py"]
    assert "increase the pool size from 10 to 50." in " ".join(summary.key_decisions)
    assert "Let's implement a circuit breaker." in summary.key_decisions
    assert summary.last_step == "I updated user_service.py and added connection retry logic."
    ctx = summary.critical_context
    assert ctx["environment"] == "production" and ctx["severity"] == "critical"
    assert "TimeoutError: connection timeout after 30s" in ctx["errors"]
    assert {"30 seconds", "1200 users", "30s"} <= set(ctx["measurements"])


async def test_llm_structured_summarizer_parses_fenced_json() -> None:
    reply = (
        'Here you go:\n```json\n{"userGoal": "Fix database timeouts", "last_step": "raised pool size",'
        ' "key_decisions": ["pool 10 -> 50"], "modified_files": ["database.py"],'
        ' "critical_context": {"environment": "production"}}\n```'
    )
    client = ScriptedClient([reply])
    summarizer = StructuredLLMSummarizer(client)
    events = [event(0, "db times out after 30 s"), event(1, "raised the pool size", role="assistant")]
    summary = await summarizer.summarize_structured(events)
    assert summary.user_goal == "Fix database timeouts" and summary.modified_files == ["database.py"]
    assert summary.count == 2 and summary.covered_ids == ["m0", "m1"]
    prompt = client.requests[0].messages[0].text()
    assert "db times out after 30 s" in prompt
    assert client.requests[0].system is not None and "modified_files" in client.requests[0].system

    with pytest.raises(ProviderError, match="no JSON object"):
        await StructuredLLMSummarizer(ScriptedClient(["sorry, I cannot"])).summarize_structured(events)
    assert parse_structured_json('{"a": 1}') == {"a": 1}


async def test_llm_summarizer_with_bad_reply_is_reported_and_changes_nothing() -> None:
    memory = InMemoryMemory(
        summarizer=StructuredLLMSummarizer(ScriptedClient(["not json at all"])),
        enable_context_management=False,
        thresholds={"pre_rot_threshold": 100, "keep_recent_count": 1},
    )
    for i in range(15):
        await memory.add(event(i, f"message {i} with enough words to need a summary eventually"), session_id="s")
    before = await memory.list("s")
    report = await memory.manage_context("s")
    assert report.failure is not None and "ProviderError" in report.failure
    assert await memory.list("s") == before


class CountOnlyMemory(BaseMemory[Any]):
    """The reference's own custom memory: its summarizer returns only count, time range and timestamp, and its
    storage hooks log and defer to the base class."""

    def __init__(self, config: dict[str, Any] | None = None) -> None:
        super().__init__({**(config or {}), "summarizer": self._count_only})
        self.hook_calls: list[tuple[str, str]] = []

    async def _count_only(self, events: list[dict[str, Any]]) -> dict[str, Any]:
        span = {"start": events[0]["message"]["timestamp"], "end": events[-1]["message"]["timestamp"]}
        return {"count": len(events), "time_range": span, "timestamp": datetime.now()}

    async def _store_summary(self, session_id: str, summary: StructuredSummary) -> None:
        self.hook_calls.append(("store", session_id))
        await super()._store_summary(session_id, summary)

    async def _clear_summarized_events(self, session_id: str, keep_recent_count: int) -> None:
        self.hook_calls.append(("clear", session_id))
        await super()._clear_summarized_events(session_id, keep_recent_count)


def _shard_events(n: int) -> list[dict[str, Any]]:
    return [
        event(i, f"message {i}: the pool on shard {i} times out after {i + 30} seconds for 1200 users")
        for i in range(n)
    ]


@pytest.mark.parametrize("as_subclass", [False, True])
async def test_the_references_count_only_summary_replaces_events_and_reaches_the_hooks(as_subclass: bool) -> None:
    thresholds = {"pre_rot_threshold": 1000, "compaction_trigger": 0.8, "summarization_trigger": 0.95}
    memory: BaseMemory[Any]
    if as_subclass:
        memory = CountOnlyMemory({"thresholds": thresholds})
    else:

        async def count_only(events: list[dict[str, Any]]) -> dict[str, Any]:
            span = {"start": events[0]["message"]["timestamp"], "end": events[-1]["message"]["timestamp"]}
            return {"count": len(events), "time_range": span, "timestamp": datetime.now()}

        memory = BaseMemory(summarizer=count_only, thresholds=thresholds)
    peak = 0
    for e in _shard_events(80):
        report = await memory.add(e, session_id="s")
        assert report is not None and report.failure is None
        peak = max(peak, await memory.tokens("s"))
    assert peak < 1000
    summaries = await memory.summaries("s", include_inactive=True)
    assert summaries and all(s.is_empty() for s in summaries)  # no content field: the shape alone
    first = summaries[0]
    assert first.count == len(first.covered_ids) and first.time_range.start is not None
    assert (await memory.list("s"))[0]["message"]["content"].startswith(f"[Summary of {summaries[-1].count} earlier")
    if isinstance(memory, CountOnlyMemory):
        assert memory.hook_calls == [("store", "s"), ("clear", "s")] * len(summaries)


class ManagesAfterEachAdd(CountOnlyMemory):
    """The reference example's ``add`` override: management off in the base, run by hand after each event."""

    async def add(self, event: Any, *, session_id: str | None = None) -> Any:  # type: ignore[override]
        await super().add(event, session_id=session_id)
        sid = event["state"].get("session_id", "default")
        return await self._manage_context(sid)


async def test_the_references_add_override_runs_management_by_hand() -> None:
    memory = ManagesAfterEachAdd({"thresholds": {"pre_rot_threshold": 1000}, "enable_context_management": False})
    for e in _shard_events(80):
        e["state"]["session_id"] = "s"
        report = await memory.add(e)
        assert report is not None and report.failure is None
        assert await memory.tokens("s") < 1000
    assert memory.hook_calls and memory.hook_calls[:2] == [("store", "s"), ("clear", "s")]


def _chat_turns(n: int) -> list[Message]:
    """Short turns of two people chatting, each with one fact: nothing for compaction to shorten much."""
    said: list[Message] = []
    for i in range(n):
        said.append(
            Message.text_message(f"Turn {i}: the parcel for flat {i} arrives on day {i % 28 + 1}.", message_id=f"u{i}")
        )
        said.append(Message.text_message(f"Noted, flat {i}.", role="assistant", message_id=f"a{i}"))
    return said


async def test_a_summarization_target_keeps_the_newest_turns_that_fit_under_it() -> None:
    thresholds = {"pre_rot_threshold": 2_000, "keep_recent_count": 4}
    plain = InMemoryMemory(thresholds=thresholds)
    targeted = InMemoryMemory(thresholds={**thresholds, "summarization_target": 0.6})
    goal = targeted.thresholds.summarization_goal
    assert goal == 1_200
    turns = _chat_turns(120)
    after_summary: dict[str, list[int]] = {"plain": [], "targeted": []}
    for message in turns:
        for name, memory in (("plain", plain), ("targeted", targeted)):
            report = await memory.add(message, session_id="s")
            assert report is not None and report.failure is None
            if report.tier == "summarization":
                after_summary[name].append(report.tokens_after)
    assert after_summary["plain"] and after_summary["targeted"]
    # with the target, a summary leaves the view at most at the target and keeps what fits under it (the newest
    # turns, whole, beside room for a summary of summary_max_tokens); without it, the newest 4 events only
    room = goal - targeted.summary_max_tokens
    assert all(room / 2 < tokens <= goal for tokens in after_summary["targeted"]), after_summary
    assert max(after_summary["plain"]) < min(after_summary["targeted"])
    view = await targeted.messages("s")
    live = [m for m in view if m.role != "system"]
    assert live[0].role == "user" and len(live) > thresholds["keep_recent_count"]
    assert [m.message_id for m in live] == [m.message_id for m in turns[-len(live) :]]
    # history is whole either way
    assert [m.message_id for m in await targeted.history_messages("s")] == [m.message_id for m in turns]
