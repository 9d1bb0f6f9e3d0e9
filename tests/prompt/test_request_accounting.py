"""What is budgeted is what is sent: the request an `Agent` sends, counted on the wire, equals the manager's zones.

"The count of a request" is defined by `windowkeeper.prompt.count_request`: the system text as one system message,
every conversation message and the reply priming (exact o200k counter, the way every zone is counted), plus the
tool schemas as compact JSON. Here it is measured on what the official SDK actually put on the wire: the body the
fake provider server received is converted back to messages with our format parsers (``from_openai_chat``,
``from_anthropic``, ``from_responses_input``) and counted zone by zone. The system text is split at its section
headers (each section charged what it adds to the text), a wire message is recall when its text is that of a
recall message of the request (the wire carries no metadata), and tool schemas are read back from the provider's
tool format. For random states (hypothesis) with a system prompt, tool
schemas (the scratchpad tool among them), system messages, a summary, a scratchpad and recall messages, each zone
must equal what `TokenBudgetContextManager` accounted (`TrimMetrics.zones`) when the Agent made the call.

The random states go through OpenAI Chat Completions and Anthropic Messages, whose wire keeps one entry per
message. The Responses API has no boundary between an assistant's text item and the function-call items after it,
and its parser joins consecutive assistant items into one turn, so a request holding two consecutive assistant
messages reads back with one message frame (4 tokens) less; it is checked on the fixed case, which has none.

Conversations are text and tool calls only: an image on the wire is a URL without the size the counter prices, so
a count read back from the wire cannot price it; `test_assemble.py` covers media in the request-level identity.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tests.context.strategies import conversations

from windowkeeper import AgentState, Message, TokenBudgetContextManager
from windowkeeper.graph import END, Agent, StateGraph, ToolNode
from windowkeeper.llm import LLMRequest, LLMResponse, create_client
from windowkeeper.llm.formats import from_anthropic, from_openai_chat, from_responses_input
from windowkeeper.prompt import (
    MARK_KEY,
    RECALL_MARK,
    SCRATCHPAD_HEADER,
    SECTION_SEPARATOR,
    SUMMARY_HEADER,
    count_request,
    is_recall,
    tool_schema_tokens,
)
from windowkeeper.summarize import ExtractiveSummarizer
from windowkeeper.testing.fake_servers import FakeAnthropicServer, FakeOpenAIServer
from windowkeeper.tokens import default_counter
from windowkeeper.tools import scratchpad_tool

COUNTER = default_counter()
RECALL_PREFIX = "[recalled for this turn]"
FORMATS = ("openai-chat", "openai-responses", "anthropic")
RANDOM_FORMATS = ("openai-chat", "anthropic")
_threads = itertools.count()


def lookup(key: str, exact: bool = False) -> str:
    """Look a key up in the project notes.

    Args:
        key: The key to look up.
        exact: Only exact matches.
    """
    return key.upper()


class Recording:
    """The real SDK client, remembering each request and the manager's accounting at the moment it was sent."""

    def __init__(self, inner: Any, manager: TokenBudgetContextManager[AgentState]) -> None:
        self.inner = inner
        self.manager = manager
        self.provider = inner.provider
        self.model = inner.model
        self.sent: list[tuple[LLMRequest, dict[str, int], int]] = []

    async def acomplete(self, request: LLMRequest) -> LLMResponse:
        metrics = self.manager.last_metrics
        assert metrics is not None, "the agent called the model before the manager trimmed"
        self.sent.append((request, dict(metrics.zones), metrics.tokens_after))
        response: LLMResponse = await self.inner.acomplete(request)
        return response

    async def aclose(self) -> None:
        await self.inner.aclose()


@pytest.fixture(scope="module")
def servers() -> Iterator[dict[str, Any]]:
    with FakeOpenAIServer(default_text="ok") as openai, FakeAnthropicServer(default_text="ok") as anthropic:
        yield {"openai": openai, "anthropic": anthropic}


def _text_tokens(text: str) -> int:
    return COUNTER.count_message(Message.text_message(text, role="system")) if text else 0


def system_zones_on_wire(system: str | None) -> dict[str, int]:
    """Split the sent system text at its section headers; each section costs what it adds to the text."""
    text = system or ""
    cuts = []
    for header in (SUMMARY_HEADER, SCRATCHPAD_HEADER):
        at = text.find(header)
        cuts.append(at if at >= 0 else None)

    def before(position: int | None, default: str) -> str:
        if position is None:
            return default
        return text[: max(position - len(SECTION_SEPARATOR), 0)]

    with_summary = before(cuts[1], text)
    base = before(cuts[0], with_summary)
    a, b, c = _text_tokens(base), _text_tokens(with_summary), _text_tokens(text)
    return {"system": a, "summary": b - a, "scratchpad": c - b}


def conversation_zones_on_wire(messages: list[Message], recall_texts: set[str]) -> dict[str, int]:
    recall = sum(COUNTER.count_message(m) for m in messages if m.text() in recall_texts)
    recent = sum(COUNTER.count_message(m) for m in messages if m.text() not in recall_texts)
    return {"recall": recall, "recent": recent + COUNTER.count_messages([])}


def wire_zones(fmt: str, body: dict[str, Any], request: LLMRequest) -> tuple[dict[str, int], str | None]:
    """The zones of a request body as a provider received it, and its system text."""
    if fmt == "openai-chat":
        parsed = from_openai_chat(body["messages"])
        tools = [t["function"] for t in body.get("tools", [])]
    elif fmt == "openai-responses":
        parsed = from_responses_input(body["input"], instructions=body.get("instructions"))
        tools = body.get("tools", [])
    else:
        parsed = from_anthropic(body.get("system"), body["messages"])
        tools = [{**t, "parameters": t["input_schema"]} for t in body.get("tools", [])]
    system = parsed[0].text() if parsed and parsed[0].role == "system" else None
    conversation = parsed[1:] if system is not None else parsed
    assert all(m.role != "system" for m in conversation), "system messages travel in the system text only"
    specs = [{"name": t["name"], "description": t["description"], "parameters": t["parameters"]} for t in tools]
    zones = {
        **system_zones_on_wire(system),
        "tools": tool_schema_tokens(specs, COUNTER),
        **conversation_zones_on_wire(conversation, {m.text() for m in request.messages if is_recall(m)}),
    }
    return zones, system


@st.composite
def agent_setups(draw: Any) -> dict[str, Any]:
    context = draw(conversations(min_messages=2, max_messages=80, images=False))
    users = [i for i, m in enumerate(context) if m.role == "user"]
    for n, i in enumerate(sorted(draw(st.sets(st.sampled_from(users), max_size=2)) if users else [], reverse=True)):
        recalled = Message.text_message(
            f"{RECALL_PREFIX} earlier the user said: Sam moved to Berlin in 2024 ({n})",
            role="user",
            message_id=f"recall-{n}",
            timestamp=0.0,
            metadata={MARK_KEY: RECALL_MARK},
        )
        context.insert(i, recalled)
    return {
        "context": context,
        "summary": draw(st.sampled_from((None, "Earlier: the user is Sam from Berlin.\nBudget: 42 EUR."))),
        "scratchpad": draw(st.sampled_from((None, "- deploy target: /srv/app", "- a\n- b: v1.2.3 décision 数据"))),
        "system_prompt": draw(st.sampled_from((None, "You are a careful agent. Cite file paths."))),
        "tools": draw(st.booleans()),
        "max_tokens": draw(st.integers(2_500, 40_000)),
        "summarize": draw(st.booleans()),
        "format": draw(st.sampled_from(RANDOM_FORMATS)),
    }


def run_agent(setup: dict[str, Any], servers: dict[str, Any]) -> tuple[Recording, dict[str, Any]]:
    tool_node = ToolNode([scratchpad_tool(max_tokens=300), lookup]) if setup["tools"] else None
    manager: TokenBudgetContextManager[AgentState] = TokenBudgetContextManager(
        max_tokens=setup["max_tokens"],
        reserve_tokens=500,
        summarizer=ExtractiveSummarizer() if setup["summarize"] else None,
        system_prompt=setup["system_prompt"],
        tools=tool_node.tool_specs() if tool_node is not None else None,
    )
    fmt = setup["format"]
    server = servers["anthropic" if fmt == "anthropic" else "openai"]
    if fmt == "anthropic":
        inner = create_client("claude-3-5-haiku-latest", "anthropic", base_url=server.base_url, api_key="k")
    else:
        style = "chat" if fmt == "openai-chat" else "responses"
        inner = create_client("gpt-4o-mini", "openai", api_style=style, base_url=server.base_url, api_key="k")
    client = Recording(inner, manager)
    agent = Agent(client=client, system_prompt=setup["system_prompt"], tool_node=tool_node, trim_context=True)
    initial = AgentState(context_summary=setup["summary"], scratchpad=setup["scratchpad"])
    graph = StateGraph(initial, context_manager=manager)
    graph.add_node("MAIN", agent)
    graph.add_edge("MAIN", END)
    graph.set_entry_point("MAIN")
    before = len(server.requests)
    graph.compile().invoke({"messages": setup["context"]}, config={"thread_id": f"acct-{next(_threads)}"})
    assert len(server.requests) == before + 1
    return client, server.requests[-1].json


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(setup=agent_setups())
def test_the_request_on_the_wire_costs_what_the_manager_accounted_zone_by_zone(
    setup: dict[str, Any], servers: dict[str, Any]
) -> None:
    client, body = run_agent(setup, servers)
    [(request, accounted, tokens_after)] = client.sent
    on_wire, system = wire_zones(setup["format"], body, request)

    assert on_wire == {zone: n for zone, n in accounted.items() if zone != "reserve"}
    assert accounted["reserve"] == 500
    assert sum(on_wire.values()) == tokens_after == count_request(request, COUNTER)
    # every part of the state the manager kept is on the wire, once
    assert system == request.system
    if setup["system_prompt"]:
        assert system is not None and system.startswith(setup["system_prompt"])
    if setup["scratchpad"]:
        assert system is not None and system.endswith(setup["scratchpad"])
        assert accounted["scratchpad"] > 0
    if setup["tools"]:
        assert accounted["tools"] > 0
        sent_tools = body["tools"]
        assert len(sent_tools) == 2 and "scratchpad" in json.dumps(sent_tools)


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_compacted_view_with_every_zone_is_counted_exactly(fmt: str, servers: dict[str, Any]) -> None:
    """A fixed case that exercises every zone at once, including a compaction that writes a summary."""
    context = [Message.text_message("rule: answer in English", role="system", message_id="s0", timestamp=0.0)]
    for i in range(60):
        context.append(
            Message.text_message(f"question {i}: where is invoice {i}? " * 8, message_id=f"u{i}", timestamp=0.0)
        )
        context.append(
            Message.text_message(f"Invoice {i} is in /srv/app/inv{i}.pdf. " * 12, role="assistant", message_id=f"a{i}")
        )
    context.insert(
        len(context) - 2,
        Message.text_message(
            f"{RECALL_PREFIX} invoice 3 was approved", message_id="rc", metadata={MARK_KEY: RECALL_MARK}
        ),
    )
    setup = {
        "context": context,
        "summary": "Earlier: the user is Sam.",
        "scratchpad": "- invoices live in /srv/app",
        "system_prompt": "You are a careful agent.",
        "tools": True,
        "max_tokens": 6_000,
        "summarize": True,
        "format": fmt,
    }
    client, body = run_agent(setup, servers)
    [(request, accounted, tokens_after)] = client.sent
    on_wire, system = wire_zones(fmt, body, request)
    assert all(on_wire[zone] > 0 for zone in ("system", "tools", "summary", "scratchpad", "recall", "recent"))
    assert on_wire == {zone: n for zone, n in accounted.items() if zone != "reserve"}
    assert sum(on_wire.values()) == tokens_after == count_request(request, COUNTER) <= 6_000 - 500
    assert system is not None and "rule: answer in English" in system and SUMMARY_HEADER in system
