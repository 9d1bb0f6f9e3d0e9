"""Provider-reported prompt sizes calibrate an estimated counter automatically (issue 11, item 5)."""

from __future__ import annotations

from typing import Any

import pytest

from windowkeeper import CalibratedCounter, Message, TokenBudgetContextManager, Window, default_counter
from windowkeeper.testing.fake_servers import FakeOpenAIServer, FakeReply, FakeToolCall, FakeUsage
from windowkeeper.tokenizing.calibration import feed_calibration

from .runners import chat_model
from .scenario import read_file, run_tests


def _manager(counter: CalibratedCounter) -> TokenBudgetContextManager[Any]:
    return TokenBudgetContextManager(8000, reserve_tokens=1000, counter=counter)


def _replies(turns: int, input_tokens: int) -> list[FakeReply]:
    usage = FakeUsage(input_tokens=input_tokens, output_tokens=5)
    out = []
    for t in range(turns):
        call = FakeToolCall("read_file", {"path": f"src/m{t}.py"}, id=f"k{t}")
        out.append(FakeReply(tool_calls=(call,), usage=usage))
        out.append(FakeReply(text=f"done {t}", usage=usage))
    return out


def test_feed_calibration_feeds_each_calibrating_counter_once() -> None:
    base = default_counter()
    calibrated = CalibratedCounter(base)
    request_tokens = 100
    fed = feed_calibration([calibrated, base, None, calibrated], 150, lambda b: request_tokens)
    assert fed == 1 and calibrated.samples == 1 and calibrated.ratio == pytest.approx(1.5)
    assert feed_calibration([calibrated], None, lambda b: request_tokens) == 0
    assert feed_calibration([calibrated], 0, lambda b: request_tokens) == 0
    assert calibrated.samples == 1


async def test_the_agent_calibrates_the_managers_counter_from_every_reply() -> None:
    from windowkeeper.graph import END, Agent, InMemoryCheckpointer, StateGraph, ToolNode

    counter = CalibratedCounter(default_counter())
    with FakeOpenAIServer(_replies(2, input_tokens=900)) as srv:
        tools = ToolNode([read_file, run_tests])
        agent = Agent(
            model="gpt-4o-mini",
            base_url=srv.base_url,
            api_key="t",
            api_style="chat",
            tool_node=tools,
            trim_context=True,
        )
        graph = StateGraph(
            context_manager=TokenBudgetContextManager(
                8000, reserve_tokens=1000, counter=counter, tools=tools.tool_specs()
            )
        )
        graph.add_node("MAIN", agent)
        graph.add_node("TOOL", tools)
        graph.add_conditional_edges(
            "MAIN", lambda s: "TOOL" if s.context[-1].tool_call_blocks() else END, {"TOOL": "TOOL", END: END}
        )
        graph.add_edge("TOOL", "MAIN")
        graph.set_entry_point("MAIN")
        app = graph.compile(checkpointer=InMemoryCheckpointer())
        for t in range(2):
            await app.ainvoke({"messages": [Message.text_message(f"read m{t}")]}, config={"thread_id": "c"})
        await agent.aclose()
        assert counter.samples == len(srv.requests) == 4
    assert counter.ratio != 1.0


async def test_the_langchain_middleware_calibrates_from_usage_metadata() -> None:
    pytest.importorskip("langchain_openai")
    from langchain.agents import create_agent
    from langchain_core.messages import HumanMessage

    from windowkeeper.integrations.langchain import WindowkeeperMiddleware

    counter = CalibratedCounter(default_counter())
    with FakeOpenAIServer(_replies(2, input_tokens=700)) as srv:
        middleware = WindowkeeperMiddleware(_manager(counter))
        model = chat_model(srv)
        agent = create_agent(model, tools=[read_file], system_prompt="Be brief.", middleware=[middleware])
        state: dict[str, Any] = {"messages": []}
        for t in range(2):
            state = await agent.ainvoke({"messages": [*state["messages"], HumanMessage(f"read m{t}")]})
        assert counter.samples == len(srv.requests) == 4
    assert counter.ratio != 1.0


async def test_the_langgraph_hook_calibrates_from_the_reply_it_finds_in_the_state() -> None:
    pytest.importorskip("langchain_openai")
    import warnings

    from langchain_core.messages import HumanMessage
    from langgraph.checkpoint.memory import InMemorySaver

    from windowkeeper.integrations.langgraph import pre_model_hook

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from langgraph.prebuilt import create_react_agent

    counter = CalibratedCounter(default_counter())
    with FakeOpenAIServer(_replies(2, input_tokens=600)) as srv:
        model = chat_model(srv)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            agent = create_react_agent(
                model, [read_file], pre_model_hook=pre_model_hook(_manager(counter)), checkpointer=InMemorySaver()
            )
        for t in range(2):
            await agent.ainvoke({"messages": [HumanMessage(f"read m{t}")]}, {"configurable": {"thread_id": "g"}})
        # every reply but the last is seen by the next call's hook
        assert counter.samples == len(srv.requests) - 1 == 3


def test_window_observe_usage_is_manual_and_exact_counters_ignore_it() -> None:
    counter = CalibratedCounter(default_counter())
    window = Window(_manager(counter))
    assert window.observe_usage(500) == 0  # no request made yet
    window.fit([{"role": "user", "content": "hello there"}])
    assert window.observe_usage(500) == 1 and counter.samples == 1
    exact = Window(budget=8000)
    exact.fit([{"role": "user", "content": "hello there"}])
    assert exact.observe_usage(500) == 0
