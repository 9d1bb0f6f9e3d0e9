"""The prompt assembly: the layout of the request, its zones, and the identity zones == count of what is sent."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tests.context.strategies import agent_states, conversations

from windowkeeper import (
    AgentState,
    AnnotationBlock,
    AnnotationRef,
    ConfigurationError,
    ErrorBlock,
    FormatError,
    ImageBlock,
    MediaRef,
    Message,
    TextBlock,
)
from windowkeeper.context import TokenBudgetContextManager
from windowkeeper.graph import Agent, ToolNode
from windowkeeper.llm import ScriptedClient
from windowkeeper.llm.formats import to_anthropic
from windowkeeper.prompt import (
    MARK_KEY,
    RECALL_MARK,
    SCRATCHPAD_HEADER,
    SUMMARY_HEADER,
    ZONES,
    assemble,
    assemble_messages,
    count_request,
    is_recall,
    system_message,
)
from windowkeeper.state import add_messages
from windowkeeper.summarize import ExtractiveSummarizer
from windowkeeper.tokens import default_counter
from windowkeeper.tools import scratchpad_tool

COUNTER = default_counter()
TOOLS = [{"name": "search", "description": "Search.", "parameters": {"type": "object", "properties": {}}}]


def text(role: str, body: str, mid: str, **fields: Any) -> Message:
    return Message.text_message(body, role=role, message_id=mid, timestamp=0.0, **fields)  # type: ignore[arg-type]


def recall_message(body: str, mid: str) -> Message:
    return text("user", body, mid, metadata={MARK_KEY: RECALL_MARK})


def test_the_system_text_holds_prompt_system_messages_summary_and_scratchpad_in_that_order() -> None:
    state = AgentState(
        context=[
            text("system", "Rule one.", "s1"),
            text("user", "hi", "u1"),
            text("system", "Rule two.", "s2"),
            text("assistant", "hello", "a1"),
        ],
        context_summary="  Sam is in Berlin.  ",
        scratchpad="- plan: deploy\n",
    )
    prompt = assemble(state, system_prompt="You are terse.", tools=TOOLS, reserve_tokens=700)
    assert prompt.system == (
        "You are terse.\n\nRule one.\n\nRule two.\n\n"
        f"{SUMMARY_HEADER}\nSam is in Berlin.\n\n{SCRATCHPAD_HEADER}\n- plan: deploy"
    )
    assert [m.message_id for m in prompt.messages] == ["u1", "a1"]
    assert list(prompt.zone_tokens) == list(ZONES)
    assert prompt.zone_tokens["reserve"] == 700 and prompt.total_tokens == prompt.input_tokens + 700
    request = prompt.to_request(max_output_tokens=64, temperature=0.5)
    assert (request.system, request.tools, request.max_output_tokens, request.temperature) == (
        prompt.system,
        TOOLS,
        64,
        0.5,
    )
    flat = prompt.to_messages()
    assert flat[0].role == "system" and flat[0].text() == prompt.system and flat[1:] == prompt.messages
    assert count_request(request) == prompt.input_tokens == COUNTER.count_messages(flat) + prompt.zone_tokens["tools"]


def test_each_section_costs_what_it_adds_to_the_system_text() -> None:
    state = AgentState(context=[text("user", "hi", "u1")], context_summary="Sam.", scratchpad="- x")
    prompt = assemble(state, system_prompt="Be brief.")
    zones = prompt.zone_tokens
    base = COUNTER.count_message(system_message("Be brief."))
    with_summary = COUNTER.count_message(system_message(f"Be brief.\n\n{SUMMARY_HEADER}\nSam."))
    full = COUNTER.count_message(system_message(prompt.system or ""))
    assert (zones["system"], zones["summary"], zones["scratchpad"]) == (base, with_summary - base, full - with_summary)
    # with no system prompt, the first section present carries the message framing
    alone = assemble(AgentState(context_summary="Sam.")).zone_tokens
    assert alone["system"] == 0
    assert alone["summary"] == COUNTER.count_message(system_message(f"{SUMMARY_HEADER}\nSam."))


def test_recall_messages_are_sent_in_place_and_counted_in_their_own_zone() -> None:
    recalled = recall_message("[recalled] Sam moved in 2024", "r1")
    state = AgentState(
        context=[text("user", "hi", "u1"), text("assistant", "yo", "a1"), recalled, text("user", "when?", "u2")]
    )
    prompt = assemble(state)
    assert is_recall(recalled) and not is_recall(state.context[0])
    assert [m.message_id for m in prompt.messages] == ["u1", "a1", "r1", "u2"]
    assert prompt.zone_tokens["recall"] == COUNTER.count_message(recalled)
    assert prompt.zone_tokens["recent"] == COUNTER.count_messages([m for m in state.context if m is not recalled])


def test_blank_summary_and_scratchpad_send_nothing() -> None:
    prompt = assemble(AgentState(context=[text("user", "hi", "u1")], context_summary="  ", scratchpad="\n"))
    assert prompt.system is None and prompt.summary is None and prompt.scratchpad is None
    assert prompt.zone_tokens["summary"] == prompt.zone_tokens["scratchpad"] == 0
    assert prompt.to_request().tools is None


def test_pieces_add_up_and_keep_the_prefix_before_a_changed_scratchpad() -> None:
    state = AgentState(
        context=[text("user", "hi", "u1"), text("assistant", "yo", "a1")], context_summary="S.", scratchpad="- one"
    )
    first = assemble(state, system_prompt="P.", tools=TOOLS)
    assert sum(n for _, n in first.pieces()) + COUNTER.count_messages([]) == first.input_tokens
    state.scratchpad = "- two"
    second = assemble(state, system_prompt="P.", tools=TOOLS)
    a, b = first.pieces(), second.pieces()
    assert a[:3] == b[:3]  # tools, prompt, summary unchanged
    assert a[3] != b[3] and a[4:] == b[4:]


def test_a_system_message_with_media_is_refused_like_every_format_refuses_it() -> None:
    """The system zone is read the one way the format writers read system messages: text and error text, no
    other block (docs/formats.md: a block a format cannot carry is a FormatError, never dropped unseen)."""
    image = ImageBlock(media=MediaRef(url="https://example.com/a.png", width=10, height=10))
    odd = Message(message_id="s1", role="system", content=[TextBlock(text="Rule."), image])
    refused = r"message 1, key 'content\[1\]': ImageBlock cannot be carried by any provider"
    with pytest.raises(FormatError, match=refused):
        assemble(AgentState(context=[text("user", "hi", "u1"), odd]))
    with pytest.raises(FormatError, match=r"key 'content\[1\]'"):
        to_anthropic([odd])


def test_the_system_zone_reads_a_system_message_as_the_formats_write_it() -> None:
    note = AnnotationBlock(annotation=AnnotationRef(url="https://example.com"))
    rules = Message(
        message_id="s1",
        role="system",
        content=[TextBlock(text="Rule one. "), ErrorBlock(error="config missing"), note, TextBlock(text=" Rule two.")],
    )
    prompt = assemble(AgentState(context=[rules, text("user", "hi", "u1")]))
    system, _ = to_anthropic([rules, text("user", "hi", "u1")])
    assert prompt.system == system == "Rule one. Error: config missing Rule two."


@pytest.mark.parametrize("reserve", [-1, 1.5, True])
def test_a_bad_reserve_is_rejected(reserve: object) -> None:
    with pytest.raises(ConfigurationError, match="reserve_tokens must be an integer >= 0"):
        assemble_messages([], reserve_tokens=reserve)  # type: ignore[arg-type]


def test_the_agent_sends_exactly_the_assembled_request() -> None:
    tools = ToolNode([scratchpad_tool()])
    agent = Agent(client=ScriptedClient(["ok"]), system_prompt="P.", tool_node=tools, max_output_tokens=32)
    state = AgentState(
        context=[text("system", "R.", "s"), text("user", "hi", "u1")], context_summary="S.", scratchpad="- n"
    )
    assert agent.build_request(state) == agent.assemble(state).to_request(32, None)
    assert agent.assemble(state).tools == tools.tool_specs()


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(
    state=agent_states(max_messages=80),
    system_prompt=st.sampled_from((None, "You are careful.", "規則: 簡潔に.")),
    scratchpad=st.sampled_from((None, "- a", "notes.\n\n- b: 42 km")),
    tools=st.booleans(),
)
def test_zones_sum_to_the_count_of_the_request_for_any_state(
    state: AgentState, system_prompt: str | None, scratchpad: str | None, tools: bool
) -> None:
    state.scratchpad = scratchpad
    prompt = assemble(state, system_prompt=system_prompt, tools=TOOLS if tools else None, reserve_tokens=100)
    zones = prompt.zone_tokens
    assert all(n >= 0 for n in zones.values())
    assert sum(zones.values()) - zones["reserve"] == prompt.input_tokens == count_request(prompt.to_request())
    assert all(m.role != "system" for m in prompt.messages)
    assert len(prompt.messages) == sum(1 for m in state.context if m.role != "system")


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(
    history=conversations(min_messages=4, max_messages=160),
    cuts=st.lists(st.integers(1, 40), min_size=1, max_size=6),
    max_tokens=st.integers(1_500, 12_000),
    summarize=st.booleans(),
    system_prompt=st.sampled_from((None, "You are careful.")),
    scratchpad=st.sampled_from((None, "- keep: /srv/app")),
)
def test_the_budget_manager_accounts_exactly_what_assemble_counts_call_after_call(
    history: list[Message],
    cuts: list[int],
    max_tokens: int,
    summarize: bool,
    system_prompt: str | None,
    scratchpad: str | None,
) -> None:
    """Incremental calls (the view extended, compacted, reloaded) keep the manager's zones equal to the request's."""
    manager: TokenBudgetContextManager[AgentState] = TokenBudgetContextManager(
        max_tokens=max_tokens,
        reserve_tokens=300,
        summarizer=ExtractiveSummarizer() if summarize else None,
        system_prompt=system_prompt,
        tools=TOOLS,
    )
    state = AgentState(scratchpad=scratchpad)
    state.execution_meta.thread_id = "t"
    start = 0
    for cut in [*cuts, len(history)]:
        end = min(len(history), start + cut)
        state.context = add_messages(state.context, history[start:end])
        start = end
        state = manager.trim_context(state)
        metrics = manager.last_metrics
        assert metrics is not None
        expected = assemble(state, system_prompt=system_prompt, tools=TOOLS, reserve_tokens=300).zone_tokens
        assert metrics.zones == expected
        assert metrics.tokens_after == sum(expected.values()) - 300
        if start >= len(history):
            break
