"""The recall tool: the model searches what left its view, or restores a cleared output by the id in its pointer.

The restore is checked end to end: a StateGraph with an Agent, a ToolNode and the budget manager, the model
served by the fake OpenAI server through the official SDK. The model reads the pointer note (which names the
tool and the id), calls the tool with that id, and gets the cleared output back byte for byte.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from windowkeeper import AgentState, ConfigurationError, Message
from windowkeeper.context import TokenBudgetContextManager
from windowkeeper.graph import END, Agent, StateGraph, ToolNode
from windowkeeper.memory import InMemoryMemory
from windowkeeper.messages import Role
from windowkeeper.testing.fake_servers import FakeOpenAIServer, FakeToolCall
from windowkeeper.tools import RecallTool, recall_tool
from windowkeeper.tools.recall import parse_arguments

LOG = "\n".join(f"job {n:03d}: worker-{n % 7} processed {n * 137} rows in {n * 3.5:.1f} s" for n in range(1, 151))


def fetch_log() -> str:
    """Return the worker log of June."""
    return LOG


def app(manager: TokenBudgetContextManager[AgentState], agent: Agent, tools: ToolNode) -> Any:
    graph = StateGraph(context_manager=manager)
    graph.add_node("MAIN", agent)
    graph.add_node("TOOL", tools)
    graph.add_conditional_edges("MAIN", lambda s: "TOOL" if s.context[-1].tool_call_blocks() else END)
    graph.add_edge("TOOL", "MAIN")
    graph.set_entry_point("MAIN")
    return graph.compile()


def user(text: str, mid: str) -> Message:
    return Message.text_message(text, role="user", message_id=mid)


def test_a_cleared_tool_result_is_restored_byte_for_byte_through_a_graph_run_on_the_openai_sdk() -> None:
    manager: TokenBudgetContextManager[AgentState] = TokenBudgetContextManager(
        max_tokens=4000, reserve_tokens=600, keep_tool_results=0, clear_min_tokens=50
    )
    tool = recall_tool(manager)
    tools = ToolNode([fetch_log, tool])
    filler = " ".join(f"note {k}: the weather was mild and nothing else happened that day." for k in range(4))
    with FakeOpenAIServer() as server:
        server.reply(tool_calls=[FakeToolCall("fetch_log", {}, id="call-log")])
        server.reply("The log is loaded.")
        for k in range(6):
            server.reply(f"Reply {k}: {filler}")
        server.reply(tool_calls=[FakeToolCall("recall", {"pointer_id": "call-log"}, id="call-restore")])
        server.reply("Here it is again.")
        agent = Agent(
            model="gpt-4o-mini",
            provider="openai",
            api_style="chat",
            tool_node=tools,
            trim_context=True,
            base_url=server.base_url,
            api_key="test-key",
        )
        compiled = app(manager, agent, tools)
        config = {"thread_id": "ops"}
        compiled.invoke({"messages": [user("Load the June worker log.", "u0")]}, config=config)
        for k in range(6):
            compiled.invoke({"messages": [user(f"Chat {k}: {filler}", f"c{k}")]}, config=config)
        result = compiled.invoke({"messages": [user("Show me the full log again.", "u-last")]}, config=config)
        requests = [r.json for r in server.requests]

    # the model saw the pointer, and the pointer names the tool and the id to pass
    restore_request = requests[-2]
    tool_texts = [m.get("content") for m in restore_request["messages"] if m["role"] == "tool"]
    assert any(isinstance(t, str) and 'recall(pointer_id="call-log")' in t for t in tool_texts), tool_texts
    assert LOG not in json.dumps(restore_request)
    # the tool answered with the original output, byte for byte, and the model received it
    answer = next(b for m in result["messages"] for b in m.tool_result_blocks() if b.call_id == "call-restore")
    assert answer.status == "completed"
    assert answer.output == LOG
    final_request = requests[-1]
    assert any(m["role"] == "tool" and m.get("content") == LOG for m in final_request["messages"])
    # the recall tool is advertised with its schema
    assert "recall" in [t["function"]["name"] for t in final_request["tools"]]


def chat_manager() -> TokenBudgetContextManager[AgentState]:
    return TokenBudgetContextManager(max_tokens=2500, reserve_tokens=500)


def drive(manager: TokenBudgetContextManager[AgentState], turns: int, *, thread: str = "t") -> AgentState:
    state = AgentState()
    state.execution_meta.thread_id = thread
    state.context = [Message.text_message("You are helpful.", role="system", message_id="sys")]
    for turn in range(turns):
        text = (
            "For the record: the staging database runs on host kestrel-4 at port 55432."
            if turn == 0
            else f"Turn {turn}: let us talk about topic {turn} and its many unremarkable details for a while."
        )
        state.context = [*state.context, user(text, f"u{turn}")]
        state = manager.trim_context(state)
        reply = Message.text_message(f"Answer {turn}: noted, topic {turn} is clear now.", role="assistant")
        state.context = [*state.context, reply.model_copy(update={"message_id": f"a{turn}"})]
    return state


async def test_search_finds_a_fact_stated_200_turns_earlier() -> None:
    manager = chat_manager()
    state = drive(manager, 201)
    assert not any("kestrel-4" in m.text() for m in state.context if not m.metadata.get("windowkeeper"))
    tool = recall_tool(manager)
    found = await tool.ainvoke({"query": "staging database host port"}, thread_id="t")
    assert "the staging database runs on host kestrel-4 at port 55432." in found
    assert "message #1, turn 1, user" in found
    # the ToolNode form reads the thread from the state it is given
    assert "kestrel-4" in await tool(query="kestrel-4 port", state=state)
    assert "No earlier passage" in await tool.ainvoke('{"query": "zeppelin"}', thread_id="t")


def test_the_tool_has_a_schema_for_plain_function_calling_and_checks_its_source() -> None:
    tool = recall_tool(chat_manager(), thread_id="t")
    assert isinstance(tool, RecallTool)
    assert tool.schema["name"] == "recall"
    assert set(tool.schema["parameters"]["properties"]) == {"query", "pointer_id", "max_results"}
    assert tool.openai_schema["type"] == "function"
    spec = ToolNode([tool]).tool_specs()[0]
    assert spec["name"] == "recall" and set(spec["parameters"]["properties"]) == {"query", "pointer_id", "max_results"}
    assert "needs a `query`" in tool.invoke({})
    assert "No cleared content with id 'nope'" in tool.invoke({"pointer_id": "nope"})
    with pytest.raises(ConfigurationError, match="recall=False"):
        recall_tool(TokenBudgetContextManager(max_tokens=2500, reserve_tokens=500, recall=False))
    # a model's malformed call is answered, not raised into the host's run: the model can call again
    assert "not valid JSON" in tool.invoke("{not json") and '{"query":' in tool.invoke("{not json")
    assert "must be a JSON object" in tool.invoke("[1, 2]")
    with pytest.raises(ConfigurationError, match="not valid JSON"):
        parse_arguments("{not json")  # the parser itself still raises for code that calls it


async def test_memory_history_is_searchable_and_restorable() -> None:
    memory = InMemoryMemory(
        thresholds={
            "pre_rot_threshold": 1500,
            "compaction_trigger": 0.8,
            "summarization_trigger": 0.95,
            "keep_recent_count": 4,
        },
    )
    fact = "The nightly backup lands in /srv/backups/nightly at 02:30 UTC."
    await memory.add(user(fact, "m0"), session_id="s")
    for k in range(1, 120):
        role: Role = "user" if k % 2 == 0 else "assistant"
        text = f"Message {k}: small talk about item {k} without any particular detail worth keeping here."
        await memory.add(Message.text_message(text, role=role, message_id=f"m{k}"), session_id="s")
    view = await memory.messages("s")
    assert not any(m.message_id == "m0" for m in view)
    tool = recall_tool(memory, thread_id="s")
    found = await tool.ainvoke({"query": "where does the nightly backup land"})
    assert fact in found
    assert await tool.ainvoke({"pointer_id": "m0"}) == fact


def test_a_window_recall_tool_answers_a_malformed_call_with_text() -> None:
    """The tool a Window hands to a host (LangChain, the Agents SDK with ``strict_json_schema=False``) is called with
    whatever the model wrote: truncated JSON must come back as an answer the model can act on, not end the run."""
    from windowkeeper import Window

    window = Window(budget=4000)
    window.fit([{"role": "user", "content": "hi"}])
    tool = window.recall_tool()
    answer = tool.invoke('{"pointer_id": "abc')
    assert "could not read its arguments" in answer and "pointer_id" in answer
    assert "must be a JSON object" in tool.invoke('"abc"')
