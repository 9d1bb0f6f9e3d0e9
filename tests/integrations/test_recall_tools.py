"""A pointer names a tool the model was given, and a model that calls it gets the original back, in each host.

The fake model reads one long file per turn; from the fourth turn the window clears the oldest result to a pointer
(``recall(pointer_id="call_1")``) and the scripted model, instead of answering, calls that tool. The next request
must carry the original output, byte for byte, as the tool's result. Each host runs its own loop against the fake
OpenAI server with the real host package; only the tool wiring differs (one line, or none where the host lets a
middleware register tools).
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from windowkeeper import ExtractiveSummarizer, TokenBudgetContextManager, Window
from windowkeeper.testing.fake_servers import FakeOpenAIServer, FakeReply, FakeToolCall, RecordedRequest

from .runners import chat_model

BUDGET = 4500
TURNS = 4
POINTER = "call_1"
NAMED = f'recall(pointer_id="{POINTER}")'


def manager() -> TokenBudgetContextManager[Any]:
    """Clears all but the newest tool result before summarizing anything (so the early results become pointers)."""
    return TokenBudgetContextManager(BUDGET, reserve_tokens=900, summarizer=ExtractiveSummarizer(), keep_tool_results=1)


def read_file(path: str) -> str:
    """Read a file of the repository.

    Args:
        path: Path of the file.
    """
    return "\n".join(f"{path}:{n}: value_{n} = {n * n}  # computed by step {n}" for n in range(60))


def script() -> list[FakeReply]:
    out: list[FakeReply] = []
    for t in range(TURNS):
        out.append(FakeReply(tool_calls=(FakeToolCall("read_file", {"path": f"src/m{t}.py"}, id=f"call_{t}"),)))
        if t < TURNS - 1:
            out.append(FakeReply(text=f"Module m{t} defines 60 values."))
    out.append(FakeReply(tool_calls=(FakeToolCall("recall", {"pointer_id": POINTER}, id="call_recall"),)))
    out.append(FakeReply(text="m1 defines value_59 = 3481."))
    return out


def _chat_history() -> list[Any]:
    """The scripted turns as a Chat Completions list: each turn reads a module with one tool call, and the model
    says it did (a turn the model never answered would still be in progress when the next request came)."""
    history: list[Any] = []
    for turn in range(TURNS):
        history += [
            {"role": "user", "content": f"Turn {turn}: read the next module."},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": f"call_{turn}",
                        "type": "function",
                        "function": {"name": "read_file", "arguments": json.dumps({"path": f"src/m{turn}.py"})},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": f"call_{turn}", "content": read_file(f"src/m{turn}.py")},
            {"role": "assistant", "content": f"Read src/m{turn}.py."},
        ]
    return history


def _tool_contents(request: RecordedRequest) -> dict[str, str]:
    body = request.json
    if "messages" in body:
        return {m["tool_call_id"]: m["content"] for m in body["messages"] if m.get("role") == "tool"}
    return {
        i["call_id"]: i["output"]
        for i in body["input"]
        if isinstance(i, dict) and i.get("type") == "function_call_output"
    }


def _tool_names(request: RecordedRequest) -> set[str]:
    return {t.get("name") or t.get("function", {}).get("name") for t in request.json.get("tools") or ()}


def _check(requests: list[RecordedRequest]) -> None:
    asked = requests[-2]  # the request the model answered with the recall call
    assert any(NAMED in text for text in _tool_contents(asked).values()), "the pointer names the recall tool"
    assert "recall" in _tool_names(asked) and "read_file" in _tool_names(asked)
    # the model got the original back as the recall call's result, byte for byte
    assert _tool_contents(requests[-1])["call_recall"] == read_file("src/m1.py")
    for request in requests:  # and no request ever names a tool it does not carry
        for text in _tool_contents(request).values():
            assert "recall(" not in text or "recall" in _tool_names(request)


def test_window_with_the_openai_sdk() -> None:
    from openai import OpenAI

    with FakeOpenAIServer(script()) as srv, OpenAI(base_url=srv.base_url, api_key="test", max_retries=0) as client:
        window: Window[Any, Any] = Window(manager())
        recall = window.recall_tool()
        tools: list[Any] = [
            {
                "type": "function",
                "function": {
                    "name": "read_file",
                    "description": "Read a file.",
                    "parameters": {"type": "object", "properties": {"path": {"type": "string"}}},
                },
            },
            recall.definition("openai_chat"),
        ]
        history: list[Any] = []
        for turn in range(TURNS):
            history.append({"role": "user", "content": f"Turn {turn}: read the next module."})
            while True:
                fit = window.fit(history, tools=tools)
                reply = client.chat.completions.create(model="gpt-4o-mini", messages=fit.messages, tools=tools)
                message = reply.choices[0].message.model_dump(exclude_none=True)
                history.append(message)
                if not message.get("tool_calls"):
                    break
                for call in message["tool_calls"]:
                    args = json.loads(call["function"]["arguments"])
                    name = call["function"]["name"]
                    output = window_call(recall, args) if name == "recall" else read_file(**args)
                    history.append({"role": "tool", "tool_call_id": call["id"], "content": output})
        _check(list(srv.requests))
    # the pointer id is also what `restore` takes
    assert window.restore(POINTER) == {"role": "tool", "tool_call_id": POINTER, "content": read_file("src/m1.py")}


def window_call(recall: Any, args: dict[str, Any]) -> str:
    import asyncio

    return str(asyncio.run(recall.ainvoke(args)))


def test_without_the_tool_a_pointer_tells_the_model_to_ask_the_user() -> None:
    from windowkeeper.llm.formats import to_openai_chat

    window: Window[Any, Any] = Window(manager())
    history = _chat_history()
    bare = window.fit(history)
    pointers = [m["content"] for m in bare.messages if m["role"] == "tool" and "cleared" in m["content"]]
    assert pointers and all("recall(" not in p and 'ask the user to restore id "call_' in p for p in pointers)
    assert any(f'restore id "{POINTER}"' in p for p in pointers)
    assert bare.input_tokens <= BUDGET
    # the same call with the tool declared names it (the manager's own text), and the view is otherwise the same
    named = window.fit(history, tools=[window.recall_tool().definition("openai_chat")])
    assert any(NAMED in m["content"] for m in named.messages if m["role"] == "tool")
    assert len(named.messages) == len(bare.messages)
    assert to_openai_chat(named.view)[0] == to_openai_chat(bare.view)[0]


def test_an_applications_own_recall_tool_is_not_the_one_a_pointer_names() -> None:
    """A client of the gateway (or any application) may have a tool called ``recall`` of its own, say a saved
    preference by key: a pointer telling the model to call it with a ``pointer_id`` sends it to a tool that
    cannot restore anything, so the pointer says how the user restores instead."""
    own = {
        "type": "function",
        "function": {
            "name": "recall",
            "description": "A saved preference of the user, by key.",
            "parameters": {"type": "object", "properties": {"key": {"type": "string"}}, "required": ["key"]},
        },
    }
    history = _chat_history()
    window: Window[Any, Any] = Window(manager())
    fit = window.fit(history, tools=[own])
    pointers = [m["content"] for m in fit.messages if m["role"] == "tool" and "cleared" in m["content"]]
    assert pointers and all("recall(" not in p and "ask the user to restore id" in p for p in pointers)


def test_langchain_middleware_registers_the_tool_itself() -> None:
    pytest.importorskip("langchain_openai")
    from langchain.agents import create_agent
    from langchain_core.messages import HumanMessage
    from langchain_core.tools import tool
    from langgraph.checkpoint.memory import InMemorySaver

    from windowkeeper.integrations.langchain import WindowkeeperMiddleware

    with FakeOpenAIServer(script()) as srv:
        model = chat_model(srv)
        agent = create_agent(
            model, tools=[tool(read_file)], middleware=[WindowkeeperMiddleware(manager())], checkpointer=InMemorySaver()
        )
        config: Any = {"configurable": {"thread_id": "lc"}}
        for turn in range(TURNS):
            agent.invoke({"messages": [HumanMessage(f"Turn {turn}: read the next module.")]}, config)
        _check(list(srv.requests))


def test_langgraph_hook_gives_the_tool_to_add() -> None:
    pytest.importorskip("langchain_openai")
    import warnings

    from langchain_core.messages import HumanMessage
    from langchain_core.tools import tool
    from langgraph.checkpoint.memory import InMemorySaver

    from windowkeeper.integrations.langgraph import pre_model_hook

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from langgraph.prebuilt import create_react_agent

    with FakeOpenAIServer(script()) as srv:
        model = chat_model(srv)
        tools = [tool(read_file)]
        hook = pre_model_hook(manager(), tools=tools)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            agent = create_react_agent(model, [*tools, *hook.tools], pre_model_hook=hook, checkpointer=InMemorySaver())
        config: Any = {"configurable": {"thread_id": "lg"}}
        for turn in range(TURNS):
            agent.invoke({"messages": [HumanMessage(f"Turn {turn}: read the next module.")]}, config)
        _check(list(srv.requests))


@pytest.mark.parametrize("model_kind", ["chat", "responses"])
async def test_openai_agents_filter_and_its_tool(model_kind: str) -> None:
    agents = pytest.importorskip("agents")
    from openai import AsyncOpenAI

    from windowkeeper.integrations.openai_agents import input_filter

    agents.set_tracing_disabled(True)
    with FakeOpenAIServer(script()) as srv:
        client = AsyncOpenAI(base_url=srv.base_url, api_key="test", max_retries=0)
        model_filter = input_filter(manager())
        model: Any = (
            agents.OpenAIChatCompletionsModel(model="gpt-4o-mini", openai_client=client)
            if model_kind == "chat"
            else agents.OpenAIResponsesModel(model="gpt-4o-mini", openai_client=client)
        )
        agent = agents.Agent(
            name="reader", tools=[agents.function_tool(read_file), model_filter.recall_tool], model=model
        )
        history: list[Any] = []
        try:
            for turn in range(TURNS):
                history.append({"role": "user", "content": f"Turn {turn}: read the next module."})
                result = await agents.Runner.run(
                    agent, history, run_config=agents.RunConfig(call_model_input_filter=model_filter), max_turns=10
                )
                history = result.to_input_list()
        finally:
            await client.close()
        _check(list(srv.requests))


def test_langgraph_hook_called_from_a_custom_state_graph() -> None:
    """The documented call in a graph of one's own: ``hook(state, config)["llm_input_messages"]``."""
    pytest.importorskip("langchain_openai")
    from langchain_core.messages import HumanMessage
    from langchain_core.runnables import RunnableConfig
    from langchain_core.tools import tool
    from langgraph.checkpoint.memory import InMemorySaver
    from langgraph.graph import START, MessagesState, StateGraph
    from langgraph.prebuilt import ToolNode, tools_condition

    from windowkeeper.integrations.langgraph import pre_model_hook

    with FakeOpenAIServer(script()) as srv:
        tools = [tool(read_file)]
        hook = pre_model_hook(manager(), tools=tools)
        model = chat_model(srv)
        bound = model.bind_tools([*tools, *hook.tools])

        def call_model(state: MessagesState, config: RunnableConfig) -> dict[str, Any]:
            return {"messages": [bound.invoke(hook(state, config)["llm_input_messages"])]}

        graph = StateGraph(MessagesState)
        graph.add_node("model", call_model)
        graph.add_node("tools", ToolNode([*tools, *hook.tools]))
        graph.add_edge(START, "model")
        graph.add_conditional_edges("model", tools_condition)
        graph.add_edge("tools", "model")
        app = graph.compile(checkpointer=InMemorySaver())
        config: Any = {"configurable": {"thread_id": "custom"}}
        for turn in range(TURNS):
            app.invoke({"messages": [HumanMessage(f"Turn {turn}: read the next module.")]}, config)
        _check(list(srv.requests))
    assert hook.hook.last_result is not None and hook.hook.last_result.thread_id == "custom"
