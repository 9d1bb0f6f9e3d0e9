"""The reference's graph examples, run against windowkeeper (``tenxgraph`` -> ``windowkeeper``).

``summary_agent.py`` talks to the real OpenAI SDK, pointed by environment variables at a local fake server, in a
separate process exactly as a user would run it.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from windowkeeper.core.graph import StateGraph
from windowkeeper.core.state import AgentState, Message, MessageContextManager
from windowkeeper.graph import InMemoryCheckpointer
from windowkeeper.llm import ScriptedClient
from windowkeeper.testing.fake_servers import FakeOpenAIServer, FakeUsage

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
sys.path.insert(0, str(EXAMPLES))

import city_tools  # noqa: E402
import inject_manager  # noqa: E402


def test_summary_agent_against_a_local_openai_server() -> None:
    with FakeOpenAIServer() as server:
        server.reply("Nice to meet you, Sam!", usage=FakeUsage(input_tokens=21, output_tokens=6))
        env = {**os.environ, "OPENAI_BASE_URL": server.base_url, "OPENAI_API_KEY": "test-key"}
        proc = subprocess.run(
            [sys.executable, str(EXAMPLES / "summary_agent.py")],
            capture_output=True,
            text=True,
            timeout=120,
            env=env,
            check=False,
        )
        requests = list(server.requests)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "Nice to meet you, Sam!\n"
    assert len(requests) == 1  # far below the token trigger: no summarizer call
    body = requests[0].json
    assert requests[0].path == "/v1/responses"
    assert body["model"] == "gpt-4o"
    assert body["instructions"] == "You are a helpful assistant."
    texts = [part["text"] for item in body["input"] for part in item.get("content", []) if "text" in part]
    assert texts == ["Hi! Please remember my name: Sam."]


async def test_injected_manager_node_trims_and_none_without_manager() -> None:
    turns = [Message.text_message(f"question {i}", message_id=f"q{i}") for i in range(6)]
    trimmed = (
        await inject_manager.build(MessageContextManager(max_messages=2))
        .compile()
        .ainvoke(
            {"messages": turns},
            {"thread_id": "di"},
        )
    )
    assert [m.message_id for m in trimmed["state"].context] == ["q4", "q5"]
    untouched = await inject_manager.build(None).compile().ainvoke({"messages": turns}, {"thread_id": "di"})
    assert [m.message_id for m in untouched["state"].context] == [f"q{i}" for i in range(6)]
    assert [m.message_id for m in trimmed["messages"]] == [f"q{i}" for i in range(6)]


def test_inject_manager_script_prints_both_views() -> None:
    proc = subprocess.run(
        [sys.executable, str(EXAMPLES / "inject_manager.py")],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == [
        "with manager -> ['question 4', 'question 5']",
        "without -> ['question 0', 'question 1', 'question 2', 'question 3', 'question 4', 'question 5']",
    ]


@pytest.mark.parametrize("as_instance", [False, True])
def test_custom_state_class_or_instance(as_instance: bool) -> None:
    state_arg = city_tools.MyState() if as_instance else city_tools.MyState

    def remember_user(state: city_tools.MyState) -> dict[str, object]:
        return {"session_data": {"visits": state.session_data.get("visits", 0) + 1}}

    graph = StateGraph(state_arg)
    graph.add_node("remember", remember_user)
    graph.set_entry_point("remember")
    app = graph.compile(checkpointer=InMemoryCheckpointer())
    app.invoke({"messages": [], "user_id": "u-1"}, {"thread_id": "s"})
    result = app.invoke({"messages": []}, {"thread_id": "s"})
    state = result["state"]
    assert isinstance(state, city_tools.MyState)
    assert (state.user_id, state.session_data, state.selected_city) == ("u-1", {"visits": 2}, "")


def test_select_city_tool_result_updates_state() -> None:
    from windowkeeper.core.state import ToolCallBlock

    client = ScriptedClient(
        [
            Message(role="assistant", content=[ToolCallBlock(id="call_1", name="select_city", args={"city": "Paris"})]),
            "Paris is selected.",
        ],
    )
    saver = InMemoryCheckpointer()
    app = city_tools.build(client).compile(checkpointer=saver)
    result = app.invoke({"messages": [Message.text_message("Pick Paris", message_id="u1")]}, {"thread_id": "c"})
    assert result["state"].selected_city == "Paris"
    tool_block = result["messages"][2].tool_result_blocks()[0]
    assert (tool_block.call_id, tool_block.status) == ("call_1", "completed")
    assert tool_block.output == "City updated to 'Paris'."
    assert result["messages"][-1].text() == "Paris is selected."
    assert client.requests[0].tools is not None and client.requests[0].tools[0]["name"] == "select_city"
    stored = saver.get_state("c", city_tools.MyState)
    assert stored is not None and stored.selected_city == "Paris"


def test_city_tools_script_runs_offline() -> None:
    proc = subprocess.run(
        [sys.executable, str(EXAMPLES / "city_tools.py")],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "u-42 Lisbon Lisbon it is.\n"


def test_agent_with_trim_context_constructs_without_a_key() -> None:
    from windowkeeper.core.graph import Agent

    agent = Agent(model="gemini-2.5-flash", trim_context=True)
    assert agent.trim_context is True and agent.model == "gemini-2.5-flash"
    assert isinstance(AgentState().context, list)
