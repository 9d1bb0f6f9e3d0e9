"""Each host running `scenario` against a fresh fake OpenAI server; every runner returns the captured requests.

The runners are the user's code as documented in docs/integrations.md: the glue is the import, the constructor and
handing the object to the host. The rest (building the host's agent, looping over user turns) is what a user of that
host writes anyway.
"""

from __future__ import annotations

from typing import Any

from windowkeeper.testing.fake_servers import FakeOpenAIServer, RecordedRequest

from .scenario import SYSTEM, TURNS, make_manager, read_file, run_tests, script, user_text


async def run_windowkeeper_agent(api_style: str) -> list[RecordedRequest]:
    """windowkeeper's own StateGraph + Agent + ToolNode, the baseline every adapter is compared with."""
    from windowkeeper import Message
    from windowkeeper.graph import END, Agent, InMemoryCheckpointer, StateGraph, ToolNode

    with FakeOpenAIServer(script()) as srv:
        tools = ToolNode([read_file, run_tests])
        agent = Agent(
            model="gpt-4o-mini",
            base_url=srv.base_url,
            api_key="test",
            api_style=api_style,
            system_prompt=SYSTEM,
            tool_node=tools,
            trim_context=True,
        )
        graph = StateGraph(context_manager=make_manager(system_prompt=SYSTEM))
        graph.add_node("MAIN", agent)
        graph.add_node("TOOL", tools)
        graph.add_conditional_edges(
            "MAIN", lambda s: "TOOL" if s.context[-1].tool_call_blocks() else END, {"TOOL": "TOOL", END: END}
        )
        graph.add_edge("TOOL", "MAIN")
        graph.set_entry_point("MAIN")
        app = graph.compile(checkpointer=InMemoryCheckpointer())
        try:
            for turn in range(TURNS):
                user = Message.text_message(user_text(turn), message_id=f"user-{turn}")
                result = await app.ainvoke({"messages": [user]}, config={"thread_id": "t1"})
                assert result["status"] == "completed", result
        finally:
            await agent.aclose()
        return list(srv.requests)


def chat_model(srv: FakeOpenAIServer) -> Any:
    """LangChain's ``ChatOpenAI`` on ``srv``, with HTTP clients that keep no connection open between requests.

    By default ``langchain_openai`` takes its HTTP clients from a process-wide cache keyed by base URL, so every
    fake server's pooled connection (the async one bound to a loop that is gone) would stay open until the
    interpreter exits. Clients of the test's own that pool nothing leave no socket behind the request.
    """
    import httpx2  # the HTTP client the openai SDK is built on
    from langchain_openai import ChatOpenAI
    from openai import DefaultAsyncHttpxClient, DefaultHttpxClient

    no_pool = httpx2.Limits(max_keepalive_connections=0)
    return ChatOpenAI(
        model="gpt-4o-mini",
        base_url=srv.base_url,
        api_key="test",
        max_retries=0,
        http_client=DefaultHttpxClient(limits=no_pool),
        http_async_client=DefaultAsyncHttpxClient(limits=no_pool),
    )


async def run_langchain(*, use_async: bool = True, system_prompt: Any = SYSTEM) -> tuple[list[RecordedRequest], Any]:
    """LangChain v1 ``create_agent`` with `WindowkeeperMiddleware` (``system_prompt``: a string or a
    ``SystemMessage``)."""
    from langchain.agents import create_agent
    from langchain_core.messages import HumanMessage
    from langgraph.checkpoint.memory import InMemorySaver

    from windowkeeper.integrations.langchain import WindowkeeperMiddleware

    with FakeOpenAIServer(script()) as srv:
        middleware = WindowkeeperMiddleware(make_manager())
        agent = create_agent(
            chat_model(srv),
            tools=[read_file, run_tests],
            system_prompt=system_prompt,
            middleware=[middleware],
            checkpointer=InMemorySaver(),
        )
        config: Any = {"configurable": {"thread_id": "t1"}}
        for turn in range(TURNS):
            payload = {"messages": [HumanMessage(user_text(turn))]}
            if use_async:
                await agent.ainvoke(payload, config)
            else:
                agent.invoke(payload, config)
        return list(srv.requests), middleware


async def run_langgraph(*, use_async: bool = True) -> tuple[list[RecordedRequest], Any]:
    """LangGraph prebuilt ``create_react_agent`` with `pre_model_hook`."""
    import warnings

    from langchain_core.messages import HumanMessage, SystemMessage
    from langgraph.checkpoint.memory import InMemorySaver

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        from langgraph.prebuilt import create_react_agent

    from windowkeeper.integrations.langgraph import pre_model_hook

    with FakeOpenAIServer(script()) as srv:
        hook = pre_model_hook(make_manager())
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            agent = create_react_agent(
                chat_model(srv), [read_file, run_tests], pre_model_hook=hook, checkpointer=InMemorySaver()
            )
        config: Any = {"configurable": {"thread_id": "t1"}}
        for turn in range(TURNS):
            new: list[Any] = [HumanMessage(user_text(turn))]
            if turn == 0:
                new.insert(0, SystemMessage(SYSTEM))
            if use_async:
                await agent.ainvoke({"messages": new}, config)
            else:
                agent.invoke({"messages": new}, config)
        return list(srv.requests), hook


async def run_openai_agents() -> tuple[list[RecordedRequest], Any]:
    """OpenAI Agents SDK ``Runner`` with ``RunConfig(call_model_input_filter=input_filter(...))``."""
    from agents import Agent, OpenAIResponsesModel, RunConfig, Runner, function_tool, set_tracing_disabled
    from openai import AsyncOpenAI

    from windowkeeper.integrations.openai_agents import input_filter

    set_tracing_disabled(True)
    with FakeOpenAIServer(script()) as srv:
        client = AsyncOpenAI(base_url=srv.base_url, api_key="test", max_retries=0)
        agent = Agent(
            name="coder",
            instructions=SYSTEM,
            tools=[function_tool(read_file), function_tool(run_tests)],
            model=OpenAIResponsesModel(model="gpt-4o-mini", openai_client=client),
        )
        model_filter = input_filter(make_manager())
        history: list[Any] = []
        try:
            for turn in range(TURNS):
                history.append({"role": "user", "content": user_text(turn)})
                result = await Runner.run(
                    agent, history, run_config=RunConfig(call_model_input_filter=model_filter), max_turns=20
                )
                history = result.to_input_list()
        finally:
            await client.close()
        return list(srv.requests), model_filter
