"""The scratchpad tool: the model keeps notes in state.scratchpad and reads them back in the system text.

Every test runs the tool the way a model uses it: a StateGraph with an Agent and a ToolNode, the model scripted
(ScriptedClient) or served by the fake OpenAI server through the official SDK.
"""

from __future__ import annotations

from typing import Any

import pytest

from windowkeeper import AgentState, ConfigurationError, Message, ToolCallBlock
from windowkeeper.graph import END, Agent, StateGraph, ToolNode
from windowkeeper.llm import ScriptedClient
from windowkeeper.prompt import SCRATCHPAD_HEADER, SUMMARY_HEADER, count_request
from windowkeeper.testing.fake_servers import FakeOpenAIServer
from windowkeeper.tokens import default_counter
from windowkeeper.tools import ScratchpadFullError, scratchpad_tool

COUNTER = default_counter()


def call(*calls: tuple[str, dict[str, Any]]) -> Message:
    """An assistant turn calling the given tools (ids c1, c2, ... in order)."""
    blocks = [ToolCallBlock(id=f"c{i}", name=name, args=args) for i, (name, args) in enumerate(calls, 1)]
    return Message(role="assistant", content=list(blocks))


def app(agent: Agent, tools: ToolNode, state: AgentState | None = None) -> Any:
    graph = StateGraph(state or AgentState())
    graph.add_node("MAIN", agent)
    graph.add_node("TOOL", tools)
    graph.add_conditional_edges("MAIN", lambda s: "TOOL" if s.context[-1].tool_call_blocks() else END)
    graph.add_edge("TOOL", "MAIN")
    graph.set_entry_point("MAIN")
    return graph.compile()


def user(text: str, mid: str) -> Message:
    return Message.text_message(text, role="user", message_id=mid)


def test_appended_notes_reach_the_model_in_the_system_text_after_the_summary() -> None:
    tools = ToolNode([scratchpad_tool(max_tokens=200)])
    client = ScriptedClient([call(("scratchpad", {"notes": "- Sam lives in Berlin"})), "Noted.", "Sam is in Berlin."])
    agent = Agent(client=client, system_prompt="You are helpful.", tool_node=tools)
    compiled = app(agent, tools, AgentState(context_summary="Earlier: the user asked about trains."))
    result = compiled.invoke({"messages": [user("Remember: Sam lives in Berlin", "u1")]}, config={"thread_id": "t"})

    first, second = client.requests
    assert first.system == f"You are helpful.\n\n{SUMMARY_HEADER}\nEarlier: the user asked about trains."
    assert second.system == (
        f"You are helpful.\n\n{SUMMARY_HEADER}\nEarlier: the user asked about trains.\n\n"
        f"{SCRATCHPAD_HEADER}\n- Sam lives in Berlin"
    )
    assert [t["name"] for t in second.tools or []] == ["scratchpad"]
    result_block = result["messages"][2].tool_result_blocks()[0]
    assert result_block.status == "completed"
    used = COUNTER.count_text("- Sam lives in Berlin")
    assert result_block.output == f"Scratchpad appended to: it now holds {used} of 200 tokens."
    # the notes persist with the thread and are sent again on the next turn
    compiled.invoke({"messages": [user("Where is Sam?", "u2")]}, config={"thread_id": "t"})
    assert client.requests[-1].system is not None and client.requests[-1].system.endswith("- Sam lives in Berlin")


def test_append_adds_lines_and_replace_rewrites_the_notes() -> None:
    tools = ToolNode([scratchpad_tool()])
    client = ScriptedClient(
        [
            call(("scratchpad", {"notes": "a: 1"})),
            call(("scratchpad", {"notes": "b: 2", "mode": "append"})),
            call(("scratchpad", {"notes": "a: 1, b: 2 (condensed)", "mode": "replace"})),
            call(("scratchpad", {"notes": "", "mode": "replace"})),
            "done",
        ]
    )
    result = app(Agent(client=client, tool_node=tools), tools).invoke({"messages": [user("go", "u1")]})
    systems = [r.system for r in client.requests]
    assert systems == [
        None,
        f"{SCRATCHPAD_HEADER}\na: 1",
        f"{SCRATCHPAD_HEADER}\na: 1\nb: 2",
        f"{SCRATCHPAD_HEADER}\na: 1, b: 2 (condensed)",
        None,  # replaced with nothing: cleared, and no empty section is sent
    ]
    assert result["state"].scratchpad is None


def test_a_write_past_the_limit_is_an_error_result_and_leaves_the_notes() -> None:
    tools = ToolNode([scratchpad_tool(max_tokens=12)])
    long_note = "the deployment target is /srv/app on host alpha-7 in eu-west-1, port 8443"
    client = ScriptedClient(
        [
            call(("scratchpad", {"notes": "port 8443"})),
            call(("scratchpad", {"notes": long_note})),
            "I will keep it shorter.",
        ]
    )
    result = app(Agent(client=client, tool_node=tools), tools).invoke({"messages": [user("go", "u1")]})
    refused = result["messages"][4].tool_result_blocks()[0]
    assert refused.status == "error"
    assert isinstance(refused.output, str) and refused.output.startswith(f"{ScratchpadFullError.__name__}: ")
    would_hold = COUNTER.count_text(f"port 8443\n{long_note}")
    assert f"would hold {would_hold} tokens, over its limit of 12" in refused.output
    assert f"it holds {COUNTER.count_text('port 8443')} now" in refused.output
    assert "mode='replace'" in refused.output
    assert result["state"].scratchpad == "port 8443"
    assert client.requests[-1].system == f"{SCRATCHPAD_HEADER}\nport 8443"


def test_parallel_calls_in_one_turn_apply_in_call_order() -> None:
    tools = ToolNode([scratchpad_tool()])
    client = ScriptedClient([call(*(("scratchpad", {"notes": word}) for word in ("first", "second", "third"))), "ok"])
    result = app(Agent(client=client, tool_node=tools), tools).invoke({"messages": [user("go", "u1")]})
    assert result["state"].scratchpad == "first\nsecond\nthird"
    assert client.requests[1].system == f"{SCRATCHPAD_HEADER}\nfirst\nsecond\nthird"


def test_tool_name_and_limit_are_configurable_and_checked() -> None:
    tool = scratchpad_tool(max_tokens=64, name="notes")
    spec = ToolNode([tool]).tool_specs()[0]
    assert spec["name"] == "notes" and "at most 64 tokens" in spec["description"]
    assert set(spec["parameters"]["properties"]) == {"notes", "mode"}  # state is filled by the runtime
    with pytest.raises(ConfigurationError, match="max_tokens must be a positive integer, got 0"):
        scratchpad_tool(max_tokens=0)
    with pytest.raises(ConfigurationError, match="name must be a Python identifier"):
        scratchpad_tool(name="bad name")


def test_the_openai_sdk_request_carries_the_notes_and_the_schema_and_costs_what_assemble_counts() -> None:
    tools = ToolNode([scratchpad_tool(max_tokens=100)])
    with FakeOpenAIServer() as server:
        server.reply(tool_calls=[("scratchpad", {"notes": "- budget: 42 EUR"})])
        server.reply("Saved.")
        agent = Agent(
            model="gpt-4o-mini",
            provider="openai",
            api_style="chat",
            system_prompt="You are terse.",
            tool_node=tools,
            base_url=server.base_url,
            api_key="test-key",
        )
        compiled = app(agent, tools)
        result = compiled.invoke({"messages": [user("the budget is 42 EUR", "u1")]})
        first, second = (r.json for r in server.requests)
    assert first["messages"][0] == {"role": "system", "content": "You are terse."}
    assert second["messages"][0] == {
        "role": "system",
        "content": f"You are terse.\n\n{SCRATCHPAD_HEADER}\n- budget: 42 EUR",
    }
    assert [t["function"]["name"] for t in second["tools"]] == ["scratchpad"]
    assert [m["role"] for m in second["messages"]] == ["system", "user", "assistant", "tool"]
    # the request the SDK sent is the one the prompt assembly counted for the state the agent saw
    state = AgentState(context=result["messages"][:3], scratchpad="- budget: 42 EUR")
    assembled = agent.assemble(state)
    assert assembled.system == second["messages"][0]["content"]
    assert count_request(agent.build_request(state)) == assembled.input_tokens
