"""Every ``from_*`` converter derives message ids deterministically, so a re-converted list is recognized."""

from __future__ import annotations

from typing import Any

import pytest

from windowkeeper import AgentState, ExtractiveSummarizer, TokenBudgetContextManager
from windowkeeper.llm.formats import (
    from_anthropic,
    from_gemini,
    from_langchain,
    from_openai_chat,
    from_responses_input,
    to_anthropic,
    to_gemini,
    to_langchain,
    to_openai_chat,
    to_responses_input,
)
from windowkeeper.messages import Message
from windowkeeper.testing.sessiongen import generate_session

SESSION = generate_session(12, seed=3).messages


def _convert(fmt: str, messages: list[Message]) -> list[Message]:
    """``messages`` written in ``fmt`` and read back, as a caller holding provider dicts would on every call."""
    if fmt == "openai_chat":
        return from_openai_chat(to_openai_chat(messages))
    if fmt == "openai_responses":
        instructions, items = to_responses_input(messages, system="instructions")
        return from_responses_input(items, instructions)
    if fmt == "anthropic":
        return from_anthropic(*to_anthropic(messages))
    if fmt == "gemini":
        return from_gemini(*to_gemini(messages))
    lc = to_langchain(messages)
    for m in lc:
        m.id = None  # ids are LangChain's own when present; here they must be derived
    return from_langchain(lc)


FORMATS = ["openai_chat", "openai_responses", "anthropic", "gemini", "langchain"]


@pytest.mark.parametrize("fmt", FORMATS)
def test_same_input_gives_same_ids(fmt: str) -> None:
    first = [m.message_id for m in _convert(fmt, SESSION)]
    second = [m.message_id for m in _convert(fmt, SESSION)]
    assert first == second
    assert len(set(first)) == len(first)


@pytest.mark.parametrize("fmt", FORMATS)
def test_ids_of_a_prefix_do_not_change_when_the_list_grows(fmt: str) -> None:
    short = [m.message_id for m in _convert(fmt, SESSION[:9])]
    long = [m.message_id for m in _convert(fmt, SESSION)]
    assert long[: len(short) - 1] == short[:-1]


def test_equal_content_at_different_positions_gets_different_ids() -> None:
    wire = [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": "ok"},
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": "ok"},
    ]
    ids = [m.message_id for m in from_openai_chat(wire)]
    assert len(set(ids)) == 4
    assert from_openai_chat(wire[1:2])[0].message_id == from_openai_chat([wire[1]])[0].message_id


def test_a_changed_message_changes_its_id_and_every_later_one() -> None:
    wire: list[dict[str, Any]] = [
        {"role": "user", "content": "a"},
        {"role": "assistant", "content": "b"},
        {"role": "user", "content": "c"},
    ]
    before = [m.message_id for m in from_openai_chat(wire)]
    after = [m.message_id for m in from_openai_chat([wire[0], {"role": "assistant", "content": "B"}, wire[2]])]
    assert after[0] == before[0]
    assert after[1] != before[1] and after[2] != before[2]


def test_provider_ids_are_kept() -> None:
    items = [
        {"type": "message", "role": "user", "content": "hi"},
        {"type": "reasoning", "id": "rs_1", "summary": []},
        {"type": "message", "id": "msg_1", "role": "assistant", "content": [{"type": "output_text", "text": "x"}]},
        {"type": "message", "id": "msg_2", "role": "user", "content": "more"},
    ]
    messages = from_responses_input(items)
    assert [m.message_id for m in messages][1:] == ["rs_1", "msg_2"]
    langchain_core = pytest.importorskip("langchain_core.messages")
    lc = [langchain_core.HumanMessage(content="hi", id="h1"), langchain_core.AIMessage(content="yo")]
    ours = from_langchain(lc)
    assert ours[0].message_id == "h1"
    assert ours[1].message_id == from_langchain(lc)[1].message_id != "h1"


def test_anthropic_message_split_into_several_gets_distinct_stable_ids() -> None:
    messages = [
        {"role": "user", "content": "go"},
        {
            "role": "assistant",
            "content": [
                {"type": "tool_use", "id": "t1", "name": "f", "input": {}},
                {"type": "tool_use", "id": "t2", "name": "f", "input": {}},
            ],
        },
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "t1", "content": "1"},
                {"type": "tool_result", "tool_use_id": "t2", "content": "2"},
                {"type": "text", "text": "and?"},
            ],
        },
    ]
    first = [m.message_id for m in from_anthropic("sys", messages)]
    assert first == [m.message_id for m in from_anthropic("sys", messages)]
    assert len(first) == 6 and len(set(first)) == 6


def _prefix_stable_calls(reconvert: bool) -> tuple[int, int, list[tuple[str | None, list[dict[str, Any]]]]]:
    """Prefix-stable calls of a budget manager over a 20+ call session, re-converting the list or keeping objects."""
    messages = generate_session(30, seed=1).messages
    wire = to_openai_chat(messages)
    assert len(wire) == len(messages)
    points = [i for i, m in enumerate(messages) if m.role == "assistant"]
    kept = from_openai_chat(wire)  # converted once, the objects kept and sliced
    manager: TokenBudgetContextManager[AgentState] = TokenBudgetContextManager(
        6000, reserve_tokens=1000, summarizer=ExtractiveSummarizer(), recall=False
    )  # recall off: its passages carry the minute a message was read, which differs between the runs compared
    summary: str | None = None
    stable = 0
    views = []
    for p in points:
        context = from_openai_chat(wire[:p]) if reconvert else kept[:p]
        state = manager.trim_context(AgentState(context=context, context_summary=summary))
        summary = state.context_summary
        assert manager.last_metrics is not None
        stable += bool(manager.last_metrics.prefix_stable)
        views.append((summary, to_openai_chat(state.context)))
    return stable, len(points), views


def test_reconverting_every_call_is_as_prefix_stable_as_keeping_messages() -> None:
    kept, calls, kept_views = _prefix_stable_calls(reconvert=False)
    again, calls_again, again_views = _prefix_stable_calls(reconvert=True)
    assert calls == calls_again >= 20
    assert again == kept
    assert again >= calls // 2
    assert again_views == kept_views
