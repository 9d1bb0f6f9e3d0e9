"""A ReAct agent with tools runs 100 turns on one thread, with a context manager and a SQLite checkpointer.

Checked on every model call: the request is a valid OpenAI sequence. At the end: the stored state is the trimmed
view, and the message log holds every message of every turn exactly once, in order.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from windowkeeper import AgentState, Message, ToolCallBlock
from windowkeeper.context import MessageContextManager, SummaryContextManager
from windowkeeper.graph import END, Agent, CompiledGraph, SQLiteCheckpointer, StateGraph, ToolNode
from windowkeeper.graph.agent import SUMMARY_HEADING
from windowkeeper.llm import LLMRequest, ScriptedClient
from windowkeeper.summarize import ExtractiveSummarizer
from windowkeeper.units import validate

TURNS = 100


def lookup(key: str) -> str:
    """Look up a stored value.

    Args:
        key: Name of the value.
    """
    if key.endswith("7"):
        raise KeyError(f"no value for {key}")
    return f"value of {key} is {len(key) * 11} ms"


def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def scripted_model(request: LLMRequest) -> Message:
    """Tool calls for a fresh user message (parallel on even turns), a final answer once results are in."""
    last = request.messages[-1]
    turn = int(next(m for m in reversed(request.messages) if m.role == "user").text().split()[1].rstrip(":"))
    if last.role == "user":
        calls = [ToolCallBlock(id=f"call-{turn}-a", name="lookup", args={"key": f"item-{turn}"})]
        if turn % 2 == 0:
            calls.append(ToolCallBlock(id=f"call-{turn}-b", name="add", args={"a": turn, "b": 1}))
        return Message(role="assistant", content=calls)
    results = [b.output for m in request.messages if m.role == "tool" for b in m.tool_result_blocks()][-2:]
    return Message.text_message(f"turn {turn} done: {results}", role="assistant")


def build(manager: Any, path: Path) -> tuple[CompiledGraph, ScriptedClient]:
    client = ScriptedClient(default=scripted_model)
    tools = ToolNode([lookup, add])
    agent = Agent(client=client, system_prompt="You are a careful assistant.", tool_node=tools, trim_context=True)
    graph = StateGraph(context_manager=manager)
    graph.add_node("MAIN", agent)
    graph.add_node("TOOL", tools)
    graph.add_conditional_edges(
        "MAIN",
        lambda s: "TOOL" if s.context[-1].tool_call_blocks() else END,
        {"TOOL": "TOOL", END: END},
    )
    graph.add_edge("TOOL", "MAIN")
    graph.set_entry_point("MAIN")
    return graph.compile(checkpointer=SQLiteCheckpointer(path)), client


async def run_turns(app: CompiledGraph, thread: str) -> list[Message]:
    produced: list[Message] = []
    for turn in range(TURNS):
        user = Message.text_message(f"turn {turn}: check item-{turn}", message_id=f"user-{turn}")
        result = await app.ainvoke({"messages": [user]}, config={"thread_id": thread})
        assert result["status"] == "completed"
        assert result["messages"][0].message_id == f"user-{turn}"
        assert result["messages"][-1].text().startswith(f"turn {turn} done")
        produced.extend(result["messages"])
    return produced


def check_log_and_requests(produced: list[Message], log: list[Message], client: ScriptedClient) -> None:
    per_turn = [4 if t % 2 else 5 for t in range(TURNS)]  # user, call, 1-2 tool results, answer
    assert len(produced) == sum(per_turn)
    assert [m.message_id for m in log] == [m.message_id for m in produced]
    assert len({m.message_id for m in log}) == len(log)
    assert [m.text() for m in log if m.role == "user"] == [f"turn {t}: check item-{t}" for t in range(TURNS)]
    assert len(client.requests) == 2 * TURNS
    for index, request in enumerate(client.requests):
        problems = validate(request.messages, "openai")
        assert problems == [], f"request {index}: {problems}"
    errors = [b for m in log for b in m.tool_result_blocks() if b.status == "error"]
    assert [b.call_id for b in errors] == [f"call-{t}-a" for t in range(TURNS) if str(t).endswith("7")]


async def test_hundred_turns_under_message_manager(tmp_path: Path) -> None:
    app, client = build(MessageContextManager(max_messages=5), tmp_path / "react.db")
    produced = await run_turns(app, "react-msg")
    saver = app.checkpointer
    log = await saver.aget_messages("react-msg")
    check_log_and_requests(produced, log, client)
    stored = await saver.aget_state("react-msg")
    assert stored is not None
    users = [m.message_id for m in stored.context if m.role == "user"]
    assert users == [f"user-{t}" for t in range(TURNS - 5, TURNS)]
    assert stored.context[-1].message_id == produced[-1].message_id
    assert max(len(r.messages) for r in client.requests) <= 5 * 5
    await saver.aclose()


async def test_hundred_turns_under_summary_manager(tmp_path: Path) -> None:
    manager: SummaryContextManager[AgentState] = SummaryContextManager(
        summarizer=ExtractiveSummarizer(),
        max_messages=24,
        keep_recent=8,
        max_summary_tokens=300,
    )
    app, client = build(manager, tmp_path / "react.db")
    produced = await run_turns(app, "react-sum")
    saver = app.checkpointer
    log = await saver.aget_messages("react-sum")
    check_log_and_requests(produced, log, client)
    stored = await saver.aget_state("react-sum")
    assert stored is not None
    assert len(stored.context) <= 24
    assert stored.context_summary
    assert stored.context[-1].message_id == produced[-1].message_id
    assert max(len(r.messages) for r in client.requests) <= 25
    summarized = [r for r in client.requests if r.system and SUMMARY_HEADING in r.system]
    assert len(summarized) > TURNS
    assert all(r.system is not None and r.system.startswith("You are a careful assistant.") for r in client.requests)
    for request in client.requests:
        assert all(SUMMARY_HEADING not in m.text() for m in request.messages)
    await saver.aclose()


@pytest.mark.parametrize("turns", [3])
async def test_reopened_checkpointer_continues_the_thread(tmp_path: Path, turns: int) -> None:
    path = tmp_path / "resume.db"
    app, _ = build(MessageContextManager(max_messages=5), path)
    for turn in range(turns):
        await app.ainvoke(
            {"messages": [Message.text_message(f"turn {turn}", message_id=f"u{turn}")]}, {"thread_id": "r"}
        )
    await app.checkpointer.aclose()
    again, client = build(MessageContextManager(max_messages=5), path)
    await again.ainvoke(
        {"messages": [Message.text_message(f"turn {turns}", message_id=f"u{turns}")]}, {"thread_id": "r"}
    )
    first_request = client.requests[0]
    assert [m.message_id for m in first_request.messages if m.role == "user"] == [f"u{t}" for t in range(turns + 1)]
    await again.checkpointer.aclose()
