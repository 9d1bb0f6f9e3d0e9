"""Probing the LangGraph hook as a new user would wire it, with the real ``langgraph`` package against the local
fake OpenAI server: ``create_react_agent`` takes its tools as a list or as a ``ToolNode``, and ``pre_model_hook
(tools=...)`` must count them either way (a ToolNode raised ``TypeError: Value after * must be an iterable``); what
is not a list of tools raises naming it (a lone tool gave ``KeyError: 'function'``)."""

from __future__ import annotations

import warnings

import pytest

from windowkeeper.errors import ConfigurationError
from windowkeeper.testing.fake_servers import FakeOpenAIServer, FakeReply, FakeToolCall

from .runners import chat_model

pytest.importorskip("langgraph")


def read_file(path: str) -> str:
    """Read a file of the repository.

    Args:
        path: Path of the file.
    """
    return "\n".join(f"{path}:{n}: value_{n} = {n * n}" for n in range(30))


def test_the_hook_counts_the_tool_node_create_react_agent_is_given() -> None:
    from langchain_core.messages import HumanMessage
    from langgraph.checkpoint.memory import InMemorySaver
    from langgraph.prebuilt import ToolNode

    from windowkeeper.integrations.langgraph import pre_model_hook

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from langgraph.prebuilt import create_react_agent

    replies = [FakeReply(tool_calls=(FakeToolCall("read_file", {"path": "a.py"}, id="c1"),)), FakeReply(text="done")]
    with FakeOpenAIServer(replies) as srv:
        own = ToolNode([read_file])  # the agent's tools, as the user already had them
        hook = pre_model_hook(8000, tools=own)
        node = ToolNode([*own.tools_by_name.values(), *hook.tools])
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            agent = create_react_agent(chat_model(srv), node, pre_model_hook=hook, checkpointer=InMemorySaver())
        agent.invoke({"messages": [HumanMessage("read a.py")]}, {"configurable": {"thread_id": "t"}})
        sent = [t["function"]["name"] for t in srv.requests[-1].json["tools"]]
    counted = [s["function"]["name"] for s in hook.hook._schemas]
    assert sorted(sent) == ["read_file", "recall"]
    assert sorted(counted) == ["read_file", "recall"]


def test_tools_that_are_not_a_list_of_tools_raise_naming_them() -> None:
    from langchain_core.tools import tool

    from windowkeeper.integrations.langgraph import pre_model_hook

    lone = tool(read_file)
    with pytest.raises(ConfigurationError, match=r"got StructuredTool 'read_file': pass tools=\[\.\.\.\]"):
        pre_model_hook(8000, tools=lone)
    with pytest.raises(ConfigurationError, match=r"item 1 is int 42, not a tool"):
        pre_model_hook(8000, tools=[lone, 42])
    assert pre_model_hook(8000, tools=[lone, read_file, {"type": "function", "function": {"name": "x"}}]) is not None


def test_calling_the_hook_with_the_messages_instead_of_the_state_says_so() -> None:
    """In a custom graph ``hook(state["messages"], config)`` is an easy slip; the error said only 'got list
    without them'."""
    from langchain_core.messages import HumanMessage

    from windowkeeper.integrations.langgraph import pre_model_hook

    hook = pre_model_hook(8000)
    with pytest.raises(ConfigurationError, match=r"not its list of messages \(got a list of 1\): call hook\(state"):
        hook([HumanMessage("hi")], {"configurable": {"thread_id": "t"}})
    with pytest.raises(ConfigurationError, match=r"its keys: \['history'\]\): pass a state"):
        hook({"history": [HumanMessage("hi")]}, {"configurable": {"thread_id": "t"}})


def test_the_hook_remembers_replies_of_as_many_threads_as_the_window_keeps() -> None:
    """The hook noted the last reply of every thread it ever served in a dict that only grew (a server with a
    thread per user kept one entry per user for good); it keeps those of the window's threads in memory."""
    from langchain_core.messages import AIMessage, HumanMessage

    from windowkeeper.integrations.langgraph import pre_model_hook
    from windowkeeper.integrations.window import MAX_WINDOW_THREADS

    node = pre_model_hook(8000)
    for n in range(MAX_WINDOW_THREADS + 50):
        state = {"messages": [HumanMessage("hi", id=f"h{n}"), AIMessage("hello", id=f"a{n}"), HumanMessage("go on")]}
        node(state, {"configurable": {"thread_id": f"user-{n}"}})
    assert len(node.hook._usage_seen) == MAX_WINDOW_THREADS
