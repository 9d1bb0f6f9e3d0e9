"""A ``create_agent`` agent with a structured response sends the model a schema its middleware never saw.

``response_format=ToolStrategy(Schema)`` makes LangChain bind an output tool built from ``Schema`` after every
``wrap_model_call`` middleware has run, so ``request.tools`` never holds it; ``ProviderStrategy`` (and a bare
schema, for a model with native structured output) sends it as the request's ``response_format``.
`WindowkeeperMiddleware` planned each request without it, and a large schema put the request over the budget by
its size. Here the real host (``create_agent`` with ``ChatOpenAI``) runs against the local fake OpenAI server, and
the request the server received is counted the way `windowkeeper.prompt.count_request` counts one (the wire
messages read back with ``from_openai_chat``, the tool schemas as compact JSON, the same exact o200k counter),
with the ``response_format`` schema counted as compact JSON too.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from pydantic import BaseModel, Field

from windowkeeper import ExtractiveSummarizer, TokenBudgetContextManager
from windowkeeper.llm.formats import from_openai_chat
from windowkeeper.prompt import tool_schema_tokens
from windowkeeper.testing.fake_servers import FakeOpenAIServer, FakeReply, FakeToolCall, RecordedRequest
from windowkeeper.tokens import default_counter

from .runners import chat_model

BUDGET = 4_000
RESERVE = 500
COUNTER = default_counter()


class Verdict(BaseModel):
    """The reviewer's verdict on the change, with every finding it rests on and how sure it is of each."""

    verdict: str = Field(description="accept or reject. " + "Weigh every finding against the policy. " * 80)
    findings: list[str] = Field(description="Each finding in one sentence. " + "Cite the file and the line. " * 80)
    confidence: float = Field(description="Between 0 and 1. " + "Lower it for findings you could not check. " * 80)


def _history() -> list[Any]:
    """A conversation far over the budget, so the manager has to cut it down to the room the request leaves."""
    from langchain_core.messages import AIMessage, HumanMessage

    turns: list[Any] = []
    for n in range(40):
        turns += [
            HumanMessage(f"question {n} " + "lorem ipsum " * 40, id=f"q{n}"),
            AIMessage(f"answer {n} " + "dolor sit " * 40, id=f"a{n}"),
        ]
    return [*turns, HumanMessage("Review the change and give your verdict.", id="last")]


def _schemas(body: dict[str, Any]) -> list[dict[str, Any]]:
    """The schemas the request sent besides its messages: its tools and a native ``response_format``."""
    extra = [body["response_format"]] if "response_format" in body else []
    return [*(body.get("tools") or []), *extra]


def _wire_tokens(request: RecordedRequest) -> int:
    body = request.json
    return COUNTER.count_messages(from_openai_chat(body["messages"])) + tool_schema_tokens(_schemas(body), COUNTER)


def _verdict(schema: dict[str, Any]) -> bool:
    return "Verdict" in (schema.get("function", {}).get("name"), schema.get("json_schema", {}).get("name"))


def _run(response_format: Any, reply: FakeReply) -> tuple[RecordedRequest, Any, Any]:
    from langchain.agents import create_agent
    from langgraph.checkpoint.memory import InMemorySaver

    from windowkeeper.integrations.langchain import WindowkeeperMiddleware

    manager = TokenBudgetContextManager(BUDGET, reserve_tokens=RESERVE, summarizer=ExtractiveSummarizer())
    middleware = WindowkeeperMiddleware(manager)
    with FakeOpenAIServer([reply]) as srv:
        agent = create_agent(
            chat_model(srv),
            tools=[],
            system_prompt="You review code changes.",
            middleware=[middleware],
            response_format=response_format,
            checkpointer=InMemorySaver(),
        )
        result = agent.invoke({"messages": _history()}, {"configurable": {"thread_id": "t"}})
        (request,) = srv.requests
    return request, result, middleware


ANSWER = {"verdict": "accept", "findings": [], "confidence": 0.9}


@pytest.mark.parametrize("strategy", ["tool", "provider", "bare schema"])
def test_the_structured_output_schema_is_counted_in_the_budget(strategy: str) -> None:
    from langchain.agents.structured_output import ProviderStrategy, ToolStrategy

    if strategy == "tool":
        response_format: Any = ToolStrategy(Verdict)
        reply = FakeReply(tool_calls=(FakeToolCall("Verdict", ANSWER),))
    else:  # gpt-4o-mini has native structured output, which a bare schema picks
        response_format = ProviderStrategy(Verdict) if strategy == "provider" else Verdict
        reply = FakeReply(text=json.dumps(ANSWER))
    request, result, middleware = _run(response_format, reply)
    sent_schema = [s for s in _schemas(request.json) if _verdict(s)]
    assert sent_schema  # the host sent the schema: the case under test
    schema = tool_schema_tokens(sent_schema, COUNTER)
    assert schema > 1_500
    sent = _wire_tokens(request)
    assert sent <= BUDGET - RESERVE, f"{sent} tokens sent against a room of {BUDGET - RESERVE} ({schema} in Verdict)"
    assert result["structured_response"] == Verdict(**ANSWER)
    # counted as sent: the output tool, and a native format in the shape the chat model gave it when binding it
    assert middleware.last_result.input_tokens == sent


def test_a_model_that_cannot_bind_is_counted_by_the_strategys_own_format() -> None:
    from langchain.agents.structured_output import ProviderStrategy
    from langchain_core.language_models.fake_chat_models import FakeListChatModel

    from windowkeeper.integrations._lc import output_schemas, request_schemas

    strategy = ProviderStrategy(Verdict)
    model = FakeListChatModel(responses=["{}"])  # its bind_tools raises NotImplementedError
    (schema,) = output_schemas(strategy, model, None)
    assert schema == strategy.to_model_kwargs()["response_format"]
    # no strict tools either: strict binding is what create_agent does for OpenAI-compatible models only
    assert request_schemas(strategy, model, None) == [schema]
