"""SummaryContextManager with offline summarizers: triggers, the cut, fail-safety, sync/async, configuration."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from typing import Any

import pytest

from windowkeeper.blocks import ToolCallBlock, ToolResultBlock
from windowkeeper.context import SummaryContextManager, estimate_tokens
from windowkeeper.errors import ConfigurationError
from windowkeeper.messages import Message
from windowkeeper.state import AgentState
from windowkeeper.units import is_valid, validate


def msg(mid: str, role: str, text: str = "") -> Message:
    return Message.text_message(text or f"text of {mid}", role=role, message_id=mid)  # type: ignore[arg-type]


def call(mid: str, *ids: str) -> Message:
    return Message(message_id=mid, role="assistant", content=[ToolCallBlock(id=i, name="lookup") for i in ids])


def result(mid: str, *ids: str) -> Message:
    return Message.tool_message([ToolResultBlock(call_id=i, output=f"value {i}") for i in ids], message_id=mid)


class Recorder:
    """An async summarizer object that records what it was asked and answers with a fixed text."""

    def __init__(self, reply: str = "SUMMARY") -> None:
        self.reply = reply
        self.calls: list[dict[str, Any]] = []

    async def summarize(
        self,
        messages: Sequence[Message],
        *,
        previous_summary: str | None = None,
        max_tokens: int = 600,
        instructions: str | None = None,
    ) -> str:
        self.calls.append(
            {
                "ids": [m.message_id for m in messages],
                "previous": previous_summary,
                "max_tokens": max_tokens,
                "instructions": instructions,
            }
        )
        return self.reply


def ids(messages: Sequence[Message]) -> list[str | int]:
    return [m.message_id for m in messages]


def conversation(turns: int) -> list[Message]:
    out = [msg("sys", "system", "You are helpful.")]
    for i in range(turns):
        out += [msg(f"u{i}", "user"), msg(f"a{i}", "assistant")]
    return out


async def test_count_trigger_summarizes_older_messages_and_keeps_recent() -> None:
    rec = Recorder()
    mgr: SummaryContextManager[AgentState] = SummaryContextManager(
        summarizer=rec, max_messages=10, keep_recent=4, summary_system_prompt="Be brief.", max_summary_tokens=99
    )
    state = AgentState(context=conversation(6))  # 13 messages > 10
    out = await mgr.atrim_context(state)
    assert out is state
    assert ids(out.context) == ["sys", "u4", "a4", "u5", "a5"]
    assert out.context_summary == "SUMMARY"
    assert rec.calls == [
        {
            "ids": ["u0", "a0", "u1", "a1", "u2", "a2", "u3", "a3"],
            "previous": None,
            "max_tokens": 99,
            "instructions": "Be brief.",
        }
    ]
    assert mgr.last_metrics is not None and mgr.last_metrics.summaries_made == 1
    assert mgr.last_metrics.messages_before == 13 and mgr.last_metrics.messages_after == 5
    assert mgr.last_metrics.tokens_saved > 0


async def test_new_summary_is_appended_after_blank_line_and_the_old_one_not_resent() -> None:
    """Appending and folding in are never both done: the summarizer sees only the messages leaving the context."""
    rec = Recorder("NEW")
    mgr: SummaryContextManager[AgentState] = SummaryContextManager(summarizer=rec, max_messages=4, keep_recent=2)
    state = AgentState(context=conversation(3), context_summary="OLD")
    await mgr.atrim_context(state)
    assert state.context_summary == "OLD\n\nNEW"
    assert rec.calls[0]["previous"] is None
    assert ids(state.context) == ["sys", "u2", "a2"]


async def test_within_thresholds_or_both_none_never_summarizes() -> None:
    rec = Recorder()
    ctx = conversation(20)
    state = AgentState(context=list(ctx))
    await SummaryContextManager(summarizer=rec, max_messages=41, keep_recent=2).atrim_context(state)
    await SummaryContextManager(summarizer=rec, max_messages=None, token_budget=None, keep_recent=0).atrim_context(
        state
    )
    assert rec.calls == []
    assert state.context == ctx and state.context_summary is None


def test_estimate_is_four_chars_per_token_plus_tool_call_string() -> None:
    assert estimate_tokens([msg("x", "user", "a" * 40)]) == 10
    assert estimate_tokens([msg("x", "user", "a" * 3)]) == 0
    c = Message(
        message_id="c",
        role="assistant",
        tools_calls=[{"id": "k", "function": {"name": "f", "arguments": "{}"}}],
    )
    assert estimate_tokens([c]) == len(str(c.tools_calls)) // 4
    blocks = call("c2", "q")
    expected = len(str([{"id": "q", "name": "lookup", "args": {}}])) // 4
    assert estimate_tokens([blocks]) == expected
    assert estimate_tokens([result("r", "q")]) == len("value q") // 4


async def test_token_trigger() -> None:
    rec = Recorder()
    ctx = [msg("u0", "user", "x" * 400), msg("a0", "assistant", "y" * 400), msg("u1", "user", "z" * 8)]
    assert estimate_tokens(ctx) == 202
    kept = await SummaryContextManager(
        summarizer=rec, max_messages=None, token_budget=202, keep_recent=1
    ).atrim_context(AgentState(context=list(ctx)))
    assert rec.calls == [] and ids(kept.context) == ["u0", "a0", "u1"]
    out = await SummaryContextManager(summarizer=rec, max_messages=None, token_budget=201, keep_recent=1).atrim_context(
        AgentState(context=list(ctx))
    )
    assert ids(out.context) == ["u1"] and rec.calls[0]["ids"] == ["u0", "a0"]


async def test_nothing_older_than_keep_recent_leaves_state_unchanged() -> None:
    rec = Recorder()
    ctx = conversation(3)
    state = AgentState(context=list(ctx))
    await SummaryContextManager(summarizer=rec, max_messages=1, keep_recent=6).atrim_context(state)
    assert rec.calls == [] and state.context == ctx


@pytest.mark.parametrize("context", [[], [msg("sys", "system", "You are terse. " * 20)]])
async def test_a_budget_under_the_system_text_with_no_turn_leaves_the_state_as_it_is(context: list[Message]) -> None:
    # hypothesis found it: with nothing but system text over a one-token budget, the cut inside the newest turn
    # looked for a turn that was not there (IndexError)
    rec = Recorder()
    mgr: SummaryContextManager[AgentState] = SummaryContextManager(
        summarizer=rec, max_messages=None, token_budget=1, keep_recent=0
    )
    out = await mgr.atrim_context(AgentState(context=list(context)))
    assert rec.calls == [] and out.context == context and out.context_summary is None


async def test_cut_moves_back_to_a_user_message_and_keeps_tool_pairs() -> None:
    rec = Recorder()
    ctx = [
        msg("u0", "user"),
        msg("a0", "assistant"),
        msg("u1", "user"),
        call("c1", "x", "y"),
        result("r1", "x"),
        result("r2", "y"),
        msg("a1", "assistant"),
    ]
    mgr: SummaryContextManager[AgentState] = SummaryContextManager(summarizer=rec, max_messages=3, keep_recent=2)
    out = await mgr.atrim_context(AgentState(context=list(ctx)))
    # keep_recent=2 would start at r2 (splitting the call from its results); the kept part starts at u1 instead
    assert ids(out.context) == ["u1", "c1", "r1", "r2", "a1"]
    assert rec.calls[0]["ids"] == ["u0", "a0"]
    assert is_valid(out.context, "anthropic")


async def test_no_user_boundary_before_the_cut_means_no_summary() -> None:
    rec = Recorder()
    ctx = [msg("u0", "user"), call("c1", "x"), result("r1", "x"), msg("a1", "assistant"), msg("a2", "assistant")]
    state = AgentState(context=list(ctx))
    await SummaryContextManager(summarizer=rec, max_messages=2, keep_recent=1).atrim_context(state)
    assert rec.calls == [] and state.context == ctx


async def test_pending_call_is_never_summarized_even_with_keep_recent_zero() -> None:
    rec = Recorder()
    ctx = [msg("u0", "user"), msg("a0", "assistant"), msg("u1", "user"), call("c1", "x", "y"), result("r1", "x")]
    mgr: SummaryContextManager[AgentState] = SummaryContextManager(summarizer=rec, max_messages=2, keep_recent=0)
    out = await mgr.atrim_context(AgentState(context=list(ctx)))
    assert ids(out.context) == ["u1", "c1", "r1"]
    assert rec.calls[0]["ids"] == ["u0", "a0"]
    # with nothing pending, keep_recent=0 still keeps the newest user turn: a view without one is invalid for
    # Anthropic and Gemini, and the request being answered must stay in view (issue 12 item 3)
    plain = conversation(2)
    out2 = await mgr.atrim_context(AgentState(context=list(plain)))
    assert ids(out2.context) == ["sys", "u1", "a1"] and rec.calls[1]["ids"] == ["u0", "a0"]
    assert validate(out2.context, "anthropic") == []


async def test_remove_tool_msgs_strips_completed_sequences_before_counting_and_summarizing() -> None:
    rec = Recorder()
    ctx = [
        msg("u0", "user"),
        call("c0", "x"),
        result("r0", "x"),
        msg("a0", "assistant"),
        msg("u1", "user"),
        msg("a1", "assistant"),
    ]
    # 6 messages, only 3 once the tool sequence is gone: max_messages=4 does not fire
    state = AgentState(context=list(ctx))
    await SummaryContextManager(summarizer=rec, max_messages=4, keep_recent=1, remove_tool_msgs=True).atrim_context(
        state
    )
    assert rec.calls == [] and state.context == ctx
    await SummaryContextManager(summarizer=rec, max_messages=2, keep_recent=1, remove_tool_msgs=True).atrim_context(
        state
    )
    assert rec.calls[0]["ids"] == ["u0"]
    assert ids(state.context) == ["u1", "a1"]


@pytest.mark.parametrize("reply", ["", "   \n"])
async def test_empty_summary_leaves_state_unchanged(reply: str) -> None:
    ctx = conversation(5)
    state = AgentState(context=list(ctx), context_summary="keep me")
    mgr: SummaryContextManager[AgentState] = SummaryContextManager(
        summarizer=Recorder(reply), max_messages=2, keep_recent=2
    )
    await mgr.atrim_context(state)
    assert state.context == ctx and state.context_summary == "keep me"
    assert mgr.last_metrics is not None and mgr.last_metrics.summaries_made == 0


async def test_raising_summarizer_is_logged_and_leaves_state_unchanged(caplog: pytest.LogCaptureFixture) -> None:
    def boom(messages: list[Message], previous_summary: str | None) -> str:
        raise RuntimeError("provider exploded")

    ctx = conversation(5)
    state = AgentState(context=list(ctx))
    mgr: SummaryContextManager[AgentState] = SummaryContextManager(summarizer=boom, max_messages=2, keep_recent=2)
    with caplog.at_level(logging.WARNING, logger="windowkeeper.context.summary"):
        await mgr.atrim_context(state)
    assert state.context == ctx and state.context_summary is None
    records = [r for r in caplog.records if r.name == "windowkeeper.context.summary"]
    assert [r.getMessage() for r in records] == ["Summarisation LLM call failed"]
    assert records[0].exc_info is not None and "provider exploded" in str(records[0].exc_info[1])


async def test_slow_summarizer_times_out_and_leaves_state_unchanged(caplog: pytest.LogCaptureFixture) -> None:
    async def slow(messages: list[Message], previous_summary: str | None) -> str:
        await asyncio.sleep(5)
        return "too late"

    ctx = conversation(5)
    state = AgentState(context=list(ctx))
    mgr: SummaryContextManager[AgentState] = SummaryContextManager(
        summarizer=slow, max_messages=2, keep_recent=2, timeout=0.05
    )
    with caplog.at_level(logging.WARNING, logger="windowkeeper.context.summary"):
        await mgr.atrim_context(state)
    assert state.context == ctx
    assert "Summarisation LLM call failed" in [r.getMessage() for r in caplog.records]


async def test_sync_trim_inside_running_loop_raises_runtime_error() -> None:
    mgr: SummaryContextManager[AgentState] = SummaryContextManager(summarizer=Recorder(), max_messages=2)
    with pytest.raises(RuntimeError, match=r"await manager\.atrim_context\(state\)"):
        mgr.trim_context(AgentState(context=conversation(5)))


def sync_summary(messages: list[Message], previous_summary: str | None) -> str:
    return f"{len(messages)} messages; before: {previous_summary}"


def test_sync_and_async_give_identical_results() -> None:
    mgr: SummaryContextManager[AgentState] = SummaryContextManager(
        summarizer=sync_summary, max_messages=5, keep_recent=3
    )
    ctx = conversation(8)
    a = mgr.trim_context(AgentState(context=list(ctx), context_summary="S0"))
    b = asyncio.run(mgr.atrim_context(AgentState(context=list(ctx), context_summary="S0")))
    assert a.model_dump_json() == b.model_dump_json()
    assert a.context_summary == "S0\n\n12 messages; before: None"
    assert ids(a.context) == ["sys", "u6", "a6", "u7", "a7"]


async def test_concurrent_calls_on_different_states_do_not_interfere() -> None:
    async def summarize(messages: list[Message], previous_summary: str | None) -> str:
        await asyncio.sleep(0.01 * (len(messages) % 3))
        return "covers " + ",".join(str(m.message_id) for m in messages)

    mgr: SummaryContextManager[AgentState] = SummaryContextManager(summarizer=summarize, max_messages=3, keep_recent=2)
    states = [AgentState(context=conversation(n)) for n in range(2, 8)]
    out = await asyncio.gather(*(mgr.atrim_context(s) for s in states))
    for n, state in zip(range(2, 8), out, strict=True):
        expected_old = [f"{r}{i}" for i in range(n - 1) for r in ("u", "a")]
        assert state.context_summary == "covers " + ",".join(expected_old)
        assert ids(state.context) == ["sys", f"u{n - 1}", f"a{n - 1}"]
    assert mgr.metrics_total.calls == 6 and mgr.metrics_total.summaries_made == 6


def test_model_client_is_created_lazily_without_api_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    mgr: SummaryContextManager[AgentState] = SummaryContextManager("gpt-4o-mini", max_messages=3)
    assert mgr._summarizer is None
    ctx = conversation(1)
    state = mgr.trim_context(AgentState(context=list(ctx)))  # below threshold: no client needed
    assert state.context == ctx and mgr._summarizer is None


@pytest.mark.parametrize(
    ("kwargs", "param"),
    [
        ({"max_messages": -1}, "max_messages"),
        ({"keep_recent": -2}, "keep_recent"),
        ({"token_budget": 0}, "token_budget"),
        ({"token_budget": -5}, "token_budget"),
        ({"max_summary_tokens": 0}, "max_summary_tokens"),
        ({"api_style": "completions"}, "api_style"),
        ({"timeout": 0}, "timeout"),
        ({"summarizer": 42, "model": None}, "summarizer"),
        ({"summarizer": "nonsense", "model": None}, "summarizer"),
        ({"model": None}, "model="),
        ({"model": ""}, "model"),
    ],
)
def test_bad_configuration_raises_value_error_naming_the_parameter(kwargs: dict[str, Any], param: str) -> None:
    args = {"model": "gpt-4o-mini", **kwargs}
    model = args.pop("model")
    with pytest.raises(ConfigurationError, match=param) as info:
        SummaryContextManager(model, **args)
    assert isinstance(info.value, ValueError)


@pytest.mark.parametrize("kwargs", [{"model": "extractive"}, {"model": None, "summarizer": "extractive"}])
def test_extractive_summarizer_works_offline(kwargs: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    from windowkeeper.summarize import ExtractiveSummarizer

    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    model = kwargs.pop("model")
    mgr: SummaryContextManager[AgentState] = SummaryContextManager(model, max_messages=4, keep_recent=2, **kwargs)
    ctx = [
        msg("sys", "system", "You are helpful."),
        msg("u0", "user", "My name is Sam and my invoice INV-2291 is due on 2024-05-01."),
        msg("a0", "assistant", "Noted: invoice INV-2291, due 2024-05-01."),
        msg("u1", "user", "Also the config lives at /srv/app/config.yaml."),
        msg("a1", "assistant", "Got it."),
        msg("u2", "user", "What is due?"),
        msg("a2", "assistant", "Invoice INV-2291."),
    ]
    out = mgr.trim_context(AgentState(context=ctx))
    assert isinstance(mgr.summarizer, ExtractiveSummarizer)
    assert ids(out.context) == ["sys", "u2", "a2"]
    assert out.context_summary is not None
    for fact in ("INV-2291", "2024-05-01", "/srv/app/config.yaml"):
        assert fact in out.context_summary


def test_appended_summary_skips_lines_the_earlier_summary_already_holds() -> None:
    calls: list[str | None] = []

    def summarize(messages, previous_summary):  # type: ignore[no-untyped-def]
        calls.append(previous_summary)
        return "\n".join(["- The user is Sam.", f"- batch {len(calls)}: {messages[0].text()}"])

    manager = SummaryContextManager(summarizer=summarize, max_messages=4, keep_recent=2)
    state = AgentState(context=[Message.text_message(f"q{i}", message_id=f"u{i}") for i in range(6)])
    state = manager.trim_context(state)
    state.context = [*state.context, *(Message.text_message(f"r{i}", message_id=f"v{i}") for i in range(4))]
    state = manager.trim_context(state)
    assert calls == [None, None]
    assert state.context_summary == "- The user is Sam.\n- batch 1: q0\n\n- batch 2: q4"


async def test_keep_recent_zero_with_one_long_request_logs_that_nothing_can_be_summarized(
    caplog: pytest.LogCaptureFixture,
) -> None:
    rec = Recorder()
    long_request = msg("u0", "user", "please read this log: " + "timeout on shard 7 " * 200)
    mgr: SummaryContextManager[AgentState] = SummaryContextManager(
        summarizer=rec, max_messages=None, token_budget=100, keep_recent=0
    )
    with caplog.at_level(logging.INFO, logger="windowkeeper.context.summary"):
        out = await mgr.atrim_context(AgentState(context=[msg("sys", "system"), long_request]))
    assert rec.calls == [] and ids(out.context) == ["sys", "u0"] and out.context_summary is None
    lines = [r.getMessage() for r in caplog.records if "nothing can be summarized" in r.getMessage()]
    assert len(lines) == 1 and "keep_recent=0" in lines[0]


def test_a_long_agent_turn_is_summarized_inside_and_holds_the_budget() -> None:
    """One request, then many tool calls with large results: the turn is the whole view, so the cut moves inside
    it (a call never loses its results) and the request that opened it stays first."""
    from windowkeeper.messages import TextBlock, ToolCallBlock, ToolResultBlock
    from windowkeeper.units import validate

    budget = 1500
    manager = SummaryContextManager(model="extractive", max_messages=None, token_budget=budget, keep_recent=8)
    state = AgentState(context=[Message.text_message("find why the nightly export is slow", message_id="ask")])
    for i in range(30):
        call = ToolCallBlock(id=f"c{i}", name="explain", args={"t": i})
        rows = "\n".join(f"Seq Scan on t{i} (cost=0.00..{r}.00 rows={r * 7} width=64)" for r in range(25))
        state.context = [
            *state.context,
            Message(role="assistant", content=[TextBlock(text=f"step {i}"), call]),
            Message(role="tool", content=[ToolResultBlock(call_id=f"c{i}", output=rows)]),
        ]
        state = manager.trim_context(state)
        assert manager.sent_tokens(state.context, state.context_summary or None) <= budget, i
        assert [m.message_id for m in state.context if m.role == "user"] == ["ask"]
        assert validate(state.context, "anthropic") == []
    assert state.context_summary
