"""The LangChain middleware and the LangGraph hook hand the model the host's own messages, as the host holds them.

Each test runs the real host (``create_agent`` or a ``StateGraph``, with ``ChatOpenAI``) against the local fake
OpenAI server and compares what reached the wire with what the host sends without windowkeeper:

* a ``SystemMessage`` kept in the agent's state was joined with every other one into one new plain-text system
  message, even with nothing to trim: its id, ``additional_kwargs`` and content blocks (an Anthropic
  ``cache_control`` among them) were lost, and one said mid-conversation moved to the front;
* the hook rebuilt every message without a LangChain ``id`` (a graph whose ``messages`` channel is a plain list)
  from windowkeeper's model of it: an image's ``detail``, a tool result's blocks, ``artifact`` and
  ``additional_kwargs`` were lost.
"""

from __future__ import annotations

import json
import operator
from typing import Annotated, Any, TypedDict

from windowkeeper import ExtractiveSummarizer, TokenBudgetContextManager
from windowkeeper.prompt import SUMMARY_HEADER
from windowkeeper.testing.fake_servers import FakeOpenAIServer, FakeReply

from .runners import chat_model

CACHED_POLICY = {"type": "text", "text": "Policy A: answer in English.", "cache_control": {"type": "ephemeral"}}
MID_NOTE = "Mid-conversation note: the user is an admin now."


def _state_with_system_messages() -> list[Any]:
    """A leading system message of content blocks (a cache marker, an id, vendor kwargs) and one said later."""
    from langchain_core.messages import AIMessage, HumanMessage, SystemMessage

    return [
        SystemMessage(content=[dict(CACHED_POLICY)], id="sys-1", additional_kwargs={"x_vendor": 1}),
        HumanMessage("hi", id="h1"),
        AIMessage("hello", id="a1"),
        SystemMessage(MID_NOTE, id="sys-2"),
        HumanMessage("do it", id="h2"),
    ]


def _long_state() -> list[Any]:
    """The system messages of `_state_with_system_messages` around a conversation far over a small budget."""
    from langchain_core.messages import AIMessage, HumanMessage

    head, *_, mid, last = _state_with_system_messages()
    turns: list[Any] = []
    for n in range(30):
        turns += [
            HumanMessage(f"question {n} " + "lorem ipsum " * 40, id=f"q{n}"),
            AIMessage(f"answer {n} " + "dolor sit " * 40, id=f"r{n}"),
        ]
    return [head, *turns, mid, last]


def _agent_wire(state: list[Any], *, middleware: list[Any], system_prompt: str | None = None) -> list[Any]:
    """The Chat Completions messages ``create_agent`` sent for one invoke on ``state``."""
    from langchain.agents import create_agent
    from langgraph.checkpoint.memory import InMemorySaver

    with FakeOpenAIServer([FakeReply(text="ok")]) as srv:
        agent = create_agent(
            chat_model(srv), tools=[], system_prompt=system_prompt, middleware=middleware, checkpointer=InMemorySaver()
        )
        agent.invoke({"messages": state}, {"configurable": {"thread_id": "t"}})
        return list(srv.requests[0].json["messages"])


def test_middleware_sends_state_system_messages_as_the_host_does_when_nothing_is_trimmed() -> None:
    """With nothing to trim the request is the host's own: the state's system message keeps its blocks (the cache
    marker) and the one said mid-conversation stays where it was (OpenAI accepts it there)."""
    from windowkeeper.integrations.langchain import WindowkeeperMiddleware

    for prompt in (None, "You are terse."):
        plain = _agent_wire(_state_with_system_messages(), middleware=[], system_prompt=prompt)
        managed = _agent_wire(
            _state_with_system_messages(), middleware=[WindowkeeperMiddleware(100_000)], system_prompt=prompt
        )
        assert managed == plain


def test_middleware_keeps_state_system_messages_beside_the_summary() -> None:
    """Once turns are cut, the system prompt still opens the request, the state's system message follows with its
    blocks, the summary is a system message of its own after them, and the mid-conversation note (its next
    message kept) stays before that message: each system message once, none merged into another."""
    from windowkeeper.integrations.langchain import WindowkeeperMiddleware

    manager = TokenBudgetContextManager(1_500, reserve_tokens=300, summarizer=ExtractiveSummarizer())
    wire = _agent_wire(_long_state(), middleware=[WindowkeeperMiddleware(manager)], system_prompt="You are terse.")
    systems = [n for n, m in enumerate(wire) if m["role"] == "system"]
    assert wire[0]["content"] == "You are terse."
    assert wire[1]["content"] == [CACHED_POLICY]
    assert SUMMARY_HEADER in wire[2]["content"]
    assert wire[-2] == {"role": "system", "content": MID_NOTE} and wire[-1]["content"] == "do it"
    assert systems == [0, 1, 2, len(wire) - 2]
    assert "Policy A" not in json.dumps(wire[2:])  # not also joined into the summary's message


class _Listed(TypedDict):
    """A custom graph's state whose messages are a plain list: nothing gives them a LangChain id."""

    messages: Annotated[list[Any], operator.add]


def _graph_wire(history: list[Any], hook: Any) -> tuple[list[Any], list[Any]]:
    """The wire messages and the LangChain messages a custom ``StateGraph`` node sent, through ``hook`` or not."""
    from langchain_core.runnables import RunnableConfig
    from langgraph.graph import END, START, StateGraph

    sent: list[Any] = []
    with FakeOpenAIServer([FakeReply(text="ok")]) as srv:
        model = chat_model(srv)

        def call_model(state: _Listed, config: RunnableConfig) -> dict[str, Any]:
            messages = hook(state, config)["llm_input_messages"] if hook is not None else state["messages"]
            sent.extend(messages)
            return {"messages": [model.invoke(messages)]}

        graph = StateGraph(_Listed)
        graph.add_node("model", call_model)
        graph.add_edge(START, "model")
        graph.add_edge("model", END)
        graph.compile().invoke({"messages": history}, {"configurable": {"thread_id": "n"}})
        return list(srv.requests[0].json["messages"]), sent


def test_hook_passes_id_less_messages_through_unchanged() -> None:
    """Messages without a LangChain id reach the model as the host holds them (fields windowkeeper does not
    model included), not rebuilt from windowkeeper's reading of them."""
    from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

    from windowkeeper.integrations.langgraph import pre_model_hook

    def history() -> list[Any]:
        image = {"type": "image_url", "image_url": {"url": "https://example.com/a.png", "detail": "low"}}
        call = {"name": "read_file", "args": {"path": "a.py"}, "id": "call_1", "type": "tool_call"}
        return [
            HumanMessage(content=[{"type": "text", "text": "look"}, image]),
            AIMessage(
                content="reading",
                tool_calls=[call],
                additional_kwargs={"reasoning_content": "think"},
                response_metadata={"finish_reason": "tool_calls"},
            ),
            ToolMessage(content=[{"type": "text", "text": "print(1)"}], tool_call_id="call_1", artifact={"rows": 1}),
            HumanMessage("and now?", additional_kwargs={"vendor": "k"}),
        ]

    plain_wire, _ = _graph_wire(history(), None)
    wire, sent = _graph_wire(history(), pre_model_hook(200_000))
    assert wire == plain_wire
    assert sent == history()


def test_hook_sends_state_system_messages_as_they_are_leading_unless_the_model_takes_them_in_place() -> None:
    """The state's system messages keep their blocks (the cache marker, id, kwargs). Without ``model=`` the hook
    cannot know the provider accepts a system message mid-conversation (ChatAnthropic raises on one), so they
    lead, consecutive; given OpenAI's chat model the request is the host's own."""
    from windowkeeper.integrations.langgraph import pre_model_hook

    _, leading = _graph_wire(_state_with_system_messages(), pre_model_hook(100_000))
    host = _state_with_system_messages()
    assert leading == [host[0], host[3], host[1], host[2], host[4]]

    with FakeOpenAIServer([]) as srv:
        model = chat_model(srv)
    plain_wire, _ = _graph_wire(_state_with_system_messages(), None)
    wire, sent = _graph_wire(_state_with_system_messages(), pre_model_hook(100_000, model=model))
    assert wire == plain_wire and sent == host


def test_hook_leads_state_system_messages_then_the_summary_once_turns_are_cut() -> None:
    """Cut, the state's system messages still lead as they came (the cached block first), the mid-conversation
    note beside them, and the summary follows as a system message of its own: consecutive, as ChatAnthropic
    requires, and in the order of the system text the budget counted."""
    from windowkeeper.integrations.langgraph import pre_model_hook

    manager = TokenBudgetContextManager(1_500, reserve_tokens=300, summarizer=ExtractiveSummarizer())
    wire, _ = _graph_wire(_long_state(), pre_model_hook(manager))
    assert wire[0]["content"] == [CACHED_POLICY]
    assert wire[1] == {"role": "system", "content": MID_NOTE}
    assert SUMMARY_HEADER in wire[2]["content"] and "Policy A" not in wire[2]["content"]
    assert all(m["role"] != "system" for m in wire[3:])
