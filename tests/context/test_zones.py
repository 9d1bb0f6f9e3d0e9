"""The five zones (deprecated view over `assemble`): what each holds, what it costs, and how they are rendered."""

from __future__ import annotations

import json

import pytest

from windowkeeper.blocks import ToolCallBlock, ToolResultBlock
from windowkeeper.context.zones import (
    ZONE_NAMES,
    build_zones,
    render_zones,
    scratchpad_message,
    summary_message,
)
from windowkeeper.errors import ConfigurationError
from windowkeeper.messages import Message
from windowkeeper.prompt import SCRATCHPAD_HEADER, SUMMARY_HEADER, system_message
from windowkeeper.state import AgentState
from windowkeeper.tokens import ApproxCounter, default_counter
from windowkeeper.units import validate

pytestmark = pytest.mark.filterwarnings("ignore:(build|render)_zones.* is deprecated:DeprecationWarning")

COUNTER = default_counter()
TOOLS = [
    {
        "name": "search",
        "description": "Search the web.",
        "parameters": {"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]},
    }
]


def sample_state() -> AgentState:
    return AgentState(
        context=[
            Message.text_message("Always cite sources.", role="system", message_id="s1"),
            Message.text_message("Where is Sam?", role="user", message_id="u1"),
            Message(
                message_id="c1",
                role="assistant",
                content=[ToolCallBlock(id="call_1", name="search", args={"q": "Sam"})],
            ),
            Message.tool_message([ToolResultBlock(call_id="call_1", output="Sam is in Berlin.")], message_id="r1"),
            Message.text_message("Sam is in Berlin.", role="assistant", message_id="a1"),
        ],
        context_summary="The user asked about Sam earlier.",
        scratchpad="- Sam: Berlin",
    )


def test_each_zone_holds_its_part_and_its_exact_cost() -> None:
    state = sample_state()
    zones = build_zones(state, system_prompt="You are helpful.", tools=TOOLS, counter=COUNTER, reserve_tokens=1500)
    assert [m.message_id for m in zones.system][1:] == ["s1"]
    assert zones.system[0].text() == "You are helpful."
    assert [m.message_id for m in zones.recent] == ["u1", "c1", "r1", "a1"]
    assert zones.summary == state.context_summary and zones.scratchpad == state.scratchpad
    tool_tokens = COUNTER.count_text(json.dumps(TOOLS, separators=(",", ":")))
    assert zones.tool_tokens == tool_tokens
    # the system zone is one text: each section costs what it adds to that text (the first one the framing too)
    prompt_and_rules = system_message("You are helpful.\n\nAlways cite sources.")
    with_summary = system_message(f"{prompt_and_rules.text()}\n\n{summary_message(state.context_summary or '').text()}")
    full = system_message(f"{with_summary.text()}\n\n{scratchpad_message('- Sam: Berlin').text()}")
    assert zones.system_tokens == COUNTER.count_message(prompt_and_rules) + tool_tokens
    assert zones.summary_tokens == COUNTER.count_message(with_summary) - COUNTER.count_message(prompt_and_rules)
    assert zones.recent_tokens == sum(COUNTER.count_message(m) for m in state.context[1:])
    assert zones.scratchpad_tokens == COUNTER.count_message(full) - COUNTER.count_message(with_summary)
    assert zones.reserve_tokens == 1500
    assert list(zones.breakdown()) == list(ZONE_NAMES)
    assert sum(zones.breakdown().values()) == zones.total_tokens == zones.input_tokens + 1500
    # what is sent costs exactly the input tokens (tool schemas travel outside the messages)
    sent = render_zones(zones)
    assert COUNTER.count_messages(sent) + tool_tokens == zones.input_tokens


def test_render_puts_summary_and_scratchpad_in_the_system_zone() -> None:
    zones = build_zones(sample_state(), system_prompt="You are helpful.", counter=COUNTER)
    sent = zones.to_messages()
    roles = [m.role for m in sent]
    assert roles == ["system", "user", "assistant", "tool", "assistant"]
    assert sent[0].text() == (
        "You are helpful.\n\nAlways cite sources.\n\n"
        f"{SUMMARY_HEADER}\nThe user asked about Sam earlier.\n\n{SCRATCHPAD_HEADER}\n- Sam: Berlin"
    )
    assert [m.message_id for m in sent[1:]] == ["u1", "c1", "r1", "a1"]
    assert not validate(sent, "anthropic") and not validate(sent, "openai")
    # no user or assistant turn was invented
    assert {m.message_id for m in sent if m.role != "system"} == {"u1", "c1", "r1", "a1"}


def test_rendering_is_byte_identical_across_calls() -> None:
    first = render_zones(build_zones(sample_state(), counter=COUNTER))
    second = render_zones(build_zones(sample_state(), counter=COUNTER))
    assert [m.message_id for m in first] == [m.message_id for m in second]
    assert [m.fingerprint() for m in first] == [m.fingerprint() for m in second]
    changed = sample_state()
    changed.scratchpad = "- Sam: Munich"
    third = render_zones(build_zones(changed, counter=COUNTER))
    assert third[0].message_id != first[0].message_id  # scratchpad changed
    # it is the last section, so everything before it stays a byte-identical (cacheable) prefix
    before_scratchpad = first[0].text().split(SCRATCHPAD_HEADER)[0]
    assert third[0].text().startswith(before_scratchpad)


def test_empty_state_has_only_the_reserve_and_priming() -> None:
    zones = build_zones(AgentState(), counter=COUNTER)
    assert zones.system == [] and zones.recent == [] and zones.summary is None and zones.scratchpad is None
    assert (zones.system_tokens, zones.summary_tokens, zones.recent_tokens, zones.scratchpad_tokens) == (0, 0, 0, 0)
    assert zones.reserve_tokens == 2000
    assert zones.input_tokens == COUNTER.count_messages([])
    assert render_zones(zones) == []


def test_counter_is_pluggable() -> None:
    approx = build_zones(sample_state(), counter=ApproxCounter())
    exact = build_zones(sample_state(), counter=COUNTER)
    assert approx.recent_tokens > 0 and exact.recent_tokens > 0
    assert build_zones(sample_state()).recent_tokens == exact.recent_tokens  # exact counter by default


@pytest.mark.parametrize("reserve", [-1, 1.5, True])
def test_bad_reserve_is_rejected(reserve: object) -> None:
    with pytest.raises(ConfigurationError, match="reserve_tokens"):
        build_zones(sample_state(), reserve_tokens=reserve)  # type: ignore[arg-type]


@pytest.mark.filterwarnings("error")
def test_the_five_zone_view_is_deprecated_in_favour_of_assemble() -> None:
    from windowkeeper.prompt import assemble

    state = sample_state()
    with pytest.warns(DeprecationWarning, match=r"build_zones\(state, \.\.\.\) is deprecated; use windowkeeper.prompt"):
        zones = build_zones(state, system_prompt="You are helpful.", tools=TOOLS, counter=COUNTER)
    with pytest.warns(DeprecationWarning, match=r"render_zones\(zones\) is deprecated"):
        sent = render_zones(zones)
    prompt = assemble(state, system_prompt="You are helpful.", tools=TOOLS, counter=COUNTER, reserve_tokens=2000)
    assert sent == prompt.to_messages()
    assert zones.input_tokens == prompt.input_tokens and zones.tool_tokens == prompt.zone_tokens["tools"]
