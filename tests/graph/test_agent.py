"""Agent: trimming before every model call, the summary in the system zone, tools, usage; real SDK on a fake server."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from windowkeeper import AgentState, ConfigurationError, Message, TextBlock, ToolCallBlock
from windowkeeper.context import BaseContextManager
from windowkeeper.graph import END, Agent, InMemoryCheckpointer, StateGraph, ToolNode
from windowkeeper.graph.agent import SUMMARY_HEADING
from windowkeeper.llm import LLMRequest, ScriptedClient
from windowkeeper.testing.fake_servers import FakeOpenAIServer, FakeUsage


class KeepLast(BaseContextManager[AgentState]):
    """Keeps the last ``n`` messages and records each call, so tests can see when the agent trimmed."""

    def __init__(self, n: int) -> None:
        self.n = n
        self.calls: list[list[str | int]] = []

    def trim_context(self, state: AgentState) -> AgentState:
        self.calls.append([m.message_id for m in state.context])
        state.context = state.context[-self.n :]
        return state

    async def atrim_context(self, state: AgentState) -> AgentState:
        return self.trim_context(state)


def _graph(agent: Agent, manager: Any = None, tools: ToolNode | None = None) -> Any:
    graph = StateGraph(context_manager=manager)
    graph.add_node("MAIN", agent)
    if tools is not None:
        graph.add_node("TOOL", tools)
        graph.add_conditional_edges(
            "MAIN",
            lambda s: "TOOL" if s.context[-1].tool_call_blocks() else END,
            {"TOOL": "TOOL", END: END},
        )
        graph.add_edge("TOOL", "MAIN")
    else:
        graph.add_edge("MAIN", END)
    graph.set_entry_point("MAIN")
    return graph.compile(checkpointer=InMemoryCheckpointer())


def _user(text: str, mid: str) -> Message:
    return Message.text_message(text, role="user", message_id=mid)


def test_trim_context_runs_the_manager_before_each_model_call() -> None:
    client = ScriptedClient(["r1", "r2", "r3"])
    manager = KeepLast(2)
    app = _graph(Agent(client=client, trim_context=True), manager)
    for i in range(3):
        app.invoke({"messages": [_user(f"q{i}", f"u{i}")]}, config={"thread_id": "t"})
    sent = [[m.message_id for m in req.messages] for req in client.requests]
    assert sent[0] == ["u0"]
    assert sent[1][-1] == "u1" and len(sent[1]) == 2
    assert sent[2][-1] == "u2" and len(sent[2]) == 2
    # once per model call plus once when each run persists
    assert len(manager.calls) == 6


def test_without_trim_context_the_agent_sends_the_full_context() -> None:
    client = ScriptedClient(default="ok")
    manager = KeepLast(1)
    app = _graph(Agent(client=client), manager)
    app.invoke({"messages": [_user("a", "u1"), _user("b", "u2"), _user("c", "u3")]}, config={"thread_id": "t"})
    assert [m.message_id for m in client.requests[0].messages] == ["u1", "u2", "u3"]


def test_no_manager_warns_with_the_documented_text(caplog: pytest.LogCaptureFixture) -> None:
    client = ScriptedClient(["hello"])
    app = _graph(Agent(client=client, trim_context=True))
    with caplog.at_level(logging.WARNING, logger="windowkeeper.graph.agent"):
        result = app.invoke({"messages": [_user("a", "u1"), _user("b", "u2")]})
    assert [r.getMessage() for r in caplog.records] == ["trim_context is enabled but no context manager is available"]
    assert [m.message_id for m in client.requests[0].messages] == ["u1", "u2"]
    assert result["messages"][-1].text() == "hello"


def test_summary_goes_into_the_system_zone_after_the_prompt() -> None:
    client = ScriptedClient(["fine"])
    agent = Agent(
        client=client,
        system_prompt=[{"role": "system", "content": "You are terse."}, {"role": "system", "content": "Be kind."}],
    )
    graph = StateGraph(AgentState(context_summary="Sam likes tea."))
    graph.add_node("MAIN", agent)
    graph.set_entry_point("MAIN")
    graph.compile().invoke({"messages": [_user("hi", "u1")]})
    request = client.requests[0]
    assert request.system == f"You are terse.\n\nBe kind.\n\n{SUMMARY_HEADING}\nSam likes tea."
    assert [m.role for m in request.messages] == ["user"]
    assert all("Sam likes tea" not in m.text() for m in request.messages)


def test_tool_specs_are_sent_and_calls_round_trip() -> None:
    def lookup(key: str) -> str:
        """Look a key up.

        Args:
            key: The key.
        """
        return key.upper()

    tools = ToolNode([lookup])
    reply = Message(role="assistant", content=[ToolCallBlock(id="c1", name="lookup", args={"key": "abc"})])
    client = ScriptedClient([reply, "ABC it is"])
    app = _graph(Agent(client=client, tool_node=tools, max_output_tokens=64, temperature=0.2), tools=tools)
    result = app.invoke({"messages": [_user("look up abc", "u1")]})
    first = client.requests[0]
    assert first.tools == tools.tool_specs()
    assert (first.max_output_tokens, first.temperature) == (64, 0.2)
    call_msg = result["messages"][1]
    assert call_msg.tools_calls == [
        {"id": "c1", "type": "function", "function": {"name": "lookup", "arguments": '{"key": "abc"}'}},
    ]
    assert call_msg.usages is not None and call_msg.usages.prompt_tokens > 0
    assert [m.role for m in client.requests[1].messages] == ["user", "assistant", "tool"]
    assert result["messages"][-1].text() == "ABC it is"
    assert result["usage"].total_tokens == sum(m.usages.total_tokens for m in result["messages"] if m.usages)


def test_agent_configuration_errors() -> None:
    with pytest.raises(ConfigurationError, match="model="):
        Agent()
    with pytest.raises(ConfigurationError, match="api_style"):
        Agent(model="gpt-4o", api_style="soap")
    with pytest.raises(ConfigurationError, match="tool_node"):
        Agent(model="gpt-4o", tool_node=[len])  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError, match="system_prompt"):
        Agent(model="gpt-4o", system_prompt=[42])  # type: ignore[list-item]


def test_request_builder_is_pure() -> None:
    agent = Agent(client=ScriptedClient(), system_prompt="P")
    state = AgentState(context=[_user("x", "u")], context_summary="  ")
    request = agent.build_request(state)
    assert isinstance(request, LLMRequest)
    assert request.system == "P" and request.tools is None


@pytest.mark.parametrize("api_style", ["responses", "chat"])
def test_agent_on_the_openai_sdk_against_a_fake_server(api_style: str) -> None:
    def weather(city: str) -> str:
        """Current weather.

        Args:
            city: City name.
        """
        return f"{city}: 21C"

    tools = ToolNode([weather])
    with FakeOpenAIServer() as server:
        server.reply(
            tool_calls=[("weather", {"city": "Oslo"}), ("weather", {"city": "Rome"})],
            usage=FakeUsage(input_tokens=50, output_tokens=7),
        )
        server.reply("Oslo 21C, Rome 21C.", usage=FakeUsage(input_tokens=90, output_tokens=9))
        agent = Agent(
            model="gpt-4o-mini",
            provider="openai",
            system_prompt="You report weather.",
            tool_node=tools,
            api_style=api_style,
            base_url=server.base_url,
            api_key="test-key",
        )
        graph = StateGraph(AgentState(context_summary="User is in Europe."))
        graph.add_node("MAIN", agent)
        graph.add_node("TOOL", tools)
        graph.add_conditional_edges("MAIN", lambda s: "TOOL" if s.context[-1].tool_call_blocks() else END)
        graph.add_edge("TOOL", "MAIN")
        graph.set_entry_point("MAIN")
        result = graph.compile().invoke({"messages": [_user("weather in Oslo and Rome?", "u1")]})
        first, second = (r.json for r in server.requests)
    calls = result["messages"][1].tool_call_blocks()
    assert [(c.name, c.args) for c in calls] == [("weather", {"city": "Oslo"}), ("weather", {"city": "Rome"})]
    assert result["messages"][1].tools_calls is not None and len(result["messages"][1].tools_calls) == 2
    assert result["messages"][1].usages.prompt_tokens == 50
    outputs = [m.tool_result_blocks()[0].output for m in result["messages"][2:4]]
    assert outputs == ["Oslo: 21C", "Rome: 21C"]
    assert result["messages"][-1].content == [TextBlock(text="Oslo 21C, Rome 21C.")]
    assert result["usage"].prompt_tokens == 140 and result["usage"].completion_tokens == 16
    expected_system = f"You report weather.\n\n{SUMMARY_HEADING}\nUser is in Europe."
    if api_style == "responses":
        assert first["instructions"] == expected_system
        assert [t["name"] for t in first["tools"]] == ["weather"]
        assert sum(1 for item in second["input"] if item.get("type") == "function_call_output") == 2
    else:
        assert first["messages"][0] == {"role": "system", "content": expected_system}
        assert [t["function"]["name"] for t in first["tools"]] == ["weather"]
        assert [m["role"] for m in second["messages"]] == ["system", "user", "assistant", "tool", "tool"]
