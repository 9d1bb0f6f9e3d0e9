"""The gateway's recall rounds as the client sees them, through the official SDKs over real sockets.

A streamed reply the gateway continued upstream after answering recall itself reaches the client as one reply
(one ``message_start`` / ``response.created``, block and item indices continuing across the rounds); when the model
keeps calling recall past `MAX_ROUNDS`, the client gets a reply its loop can handle (a stop reason that fits the
content, never a lone reasoning item or an empty message); and recall is not offered where the upstream request
could not carry it (Chat ``n>1``, legacy ``functions``).
"""

from __future__ import annotations

import json
from contextlib import ExitStack
from typing import Any

import anthropic
import openai
import pytest

from windowkeeper.serve.protocols import LIMIT_NOTE
from windowkeeper.serve.recall import MAX_ROUNDS
from windowkeeper.testing.fake_servers import FakeAnthropicServer, FakeOpenAIServer, FakeToolCall

from .conftest import GatewayFactory
from .harness import over_budget

SCHEMA = {"type": "object", "properties": {"cmd": {"type": "string"}}}


def _tools(protocol: str) -> list[dict[str, Any]]:
    if protocol == "messages":
        return [{"name": "sh", "description": "shell", "input_schema": SCHEMA}]
    if protocol == "responses":
        return [{"type": "function", "name": "sh", "description": "shell", "parameters": SCHEMA}]
    return [{"type": "function", "function": {"name": "sh", "description": "shell", "parameters": SCHEMA}}]


def _offered(body: dict[str, Any]) -> set[str]:
    return {t.get("name") or (t.get("function") or {}).get("name") for t in body.get("tools") or ()}


# -- one streamed reply across recall rounds ---------------------------------------------------------------------


def test_an_anthropic_stream_continued_after_recall_is_one_message(
    make_gateway: GatewayFactory, anthropic_server: FakeAnthropicServer, closing: ExitStack
) -> None:
    """The second round used to arrive as a second ``message_start`` with block indices from 0 again: the SDK
    merged the rounds' thinking texts, left an empty thinking block without signature and a tool call without
    input."""
    gw = make_gateway(budget=1500)
    anthropic_server.reply("Checking.", reasoning="Let me recall.", tool_calls=[FakeToolCall("recall", {"query": "x"})])
    anthropic_server.reply(reasoning="Now run it.", tool_calls=[FakeToolCall("sh", {"cmd": "ls"}, id="toolu_mine")])
    client = closing.enter_context(anthropic.Anthropic(base_url=gw.url, api_key="k", max_retries=0))
    kwargs: dict[str, Any] = {
        "model": "c",
        "max_tokens": 10,
        "messages": over_budget("messages"),
        "tools": _tools("messages"),
    }
    with client.messages.stream(**kwargs, thinking={"type": "enabled", "budget_tokens": 500}) as stream:
        kinds = [event.type for event in stream]
        message = stream.get_final_message()
    assert len(anthropic_server.requests) == 2 and "recall" in _offered(anthropic_server.requests[0].json)
    assert kinds.count("message_start") == kinds.count("message_stop") == kinds.count("message_delta") == 1
    assert [b.model_dump(exclude_none=True) for b in message.content] == [
        {"type": "thinking", "thinking": "Let me recall.", "signature": "fake-signature"},
        {"type": "text", "text": "Checking."},
        {"type": "thinking", "thinking": "Now run it.", "signature": "fake-signature"},
        {"type": "tool_use", "id": "toolu_mine", "name": "sh", "input": {"cmd": "ls"}},
    ]
    assert message.stop_reason == "tool_use"


def test_a_responses_stream_continued_after_recall_is_one_response(
    make_gateway: GatewayFactory, openai_server: FakeOpenAIServer, closing: ExitStack
) -> None:
    """The second round's ``response.created`` (another id) and output indices from 0 again made the SDK raise."""
    gw = make_gateway(budget=1500)
    openai_server.reply("Checking.", reasoning="Let me recall.", tool_calls=[FakeToolCall("recall", {"query": "x"})])
    openai_server.reply(reasoning="Now run it.", tool_calls=[FakeToolCall("sh", {"cmd": "ls"}, id="mine")])
    client = closing.enter_context(openai.OpenAI(base_url=gw.url + "/v1", api_key="k", max_retries=0))
    with client.responses.stream(model="m", input=over_budget("responses"), tools=_tools("responses")) as stream:
        kinds = [event.type for event in stream]
        response = stream.get_final_response()
    assert len(openai_server.requests) == 2 and "recall" in _offered(openai_server.requests[0].json)
    assert kinds.count("response.created") == kinds.count("response.completed") == 1
    assert [(i.type, getattr(i, "name", None)) for i in response.output] == [
        ("reasoning", None),
        ("message", None),
        ("reasoning", None),
        ("function_call", "sh"),
    ]
    assert response.output[-1].arguments == json.dumps({"cmd": "ls"})


def test_a_chat_stream_continued_after_recall_ends_with_the_client_call(
    make_gateway: GatewayFactory, openai_server: FakeOpenAIServer, closing: ExitStack
) -> None:
    gw = make_gateway(budget=1500)
    openai_server.reply("Checking. ", tool_calls=[FakeToolCall("recall", {"query": "x"})])
    openai_server.reply("Running.", tool_calls=[FakeToolCall("sh", {"cmd": "ls"}, id="mine")])
    client = closing.enter_context(openai.OpenAI(base_url=gw.url + "/v1", api_key="k", max_retries=0))
    with client.chat.completions.stream(model="m", messages=over_budget("chat"), tools=_tools("chat")) as stream:
        completion = stream.get_final_completion()
    choice = completion.choices[0]
    assert choice.message.content == "Checking. Running." and choice.finish_reason == "tool_calls"
    assert [(c.id, c.function.name, c.function.arguments) for c in choice.message.tool_calls or []] == [
        ("mine", "sh", json.dumps({"cmd": "ls"}))
    ]


# -- recall rounds run out ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("protocol", ["chat_completions", "responses", "messages"])
@pytest.mark.parametrize("stream", [False, True], ids=["json", "streamed"])
def test_recall_rounds_running_out_end_the_turn_with_a_note(
    make_gateway: GatewayFactory,
    openai_server: FakeOpenAIServer,
    anthropic_server: FakeAnthropicServer,
    protocol: str,
    stream: bool,
    closing: ExitStack,
) -> None:
    """The recall call stripped at the last round left a reply claiming tool use with no tool call in it (an
    Anthropic ``stop_reason: tool_use``, a Responses output of one lone reasoning item, an empty Chat message)."""
    gw = make_gateway(budget=1500)
    server = anthropic_server if protocol == "messages" else openai_server
    for _ in range(MAX_ROUNDS + 1):
        server.reply(reasoning="look it up", tool_calls=[FakeToolCall("recall", {"query": "x"})])
    items, tools = over_budget(protocol), _tools(protocol)
    if protocol == "messages":
        client = closing.enter_context(anthropic.Anthropic(base_url=gw.url, api_key="k", max_retries=0))
        kwargs: dict[str, Any] = {"model": "c", "max_tokens": 10, "messages": items, "tools": tools}
        if stream:
            with client.messages.stream(**kwargs) as s:
                message = s.get_final_message()
        else:
            message = client.messages.create(**kwargs)
        assert message.stop_reason == "end_turn"
        assert [b.type for b in message.content if b.type != "thinking"] == ["text"]
        assert message.content[-1].type == "text" and message.content[-1].text == LIMIT_NOTE
    elif protocol == "responses":
        oclient = closing.enter_context(openai.OpenAI(base_url=gw.url + "/v1", api_key="k", max_retries=0))
        if stream:
            with oclient.responses.stream(model="m", input=items, tools=tools) as rs:
                response = rs.get_final_response()
        else:
            response = oclient.responses.create(model="m", input=items, tools=tools)
        assert response.status == "completed"
        assert [i.type for i in response.output] == ["message"]
        assert response.output_text == LIMIT_NOTE
    else:
        oclient = closing.enter_context(openai.OpenAI(base_url=gw.url + "/v1", api_key="k", max_retries=0))
        if stream:
            with oclient.chat.completions.stream(model="m", messages=items, tools=tools) as cs:
                completion = cs.get_final_completion()
        else:
            completion = oclient.chat.completions.create(model="m", messages=items, tools=tools)
        choice = completion.choices[0]
        assert choice.finish_reason == "stop" and not choice.message.tool_calls
        assert choice.message.content == LIMIT_NOTE
    assert len(server.requests) == MAX_ROUNDS + 1 and server.pending == 0


# -- requests that cannot carry the recall tool ------------------------------------------------------------------


def test_chat_with_several_choices_is_not_offered_recall(
    make_gateway: GatewayFactory, openai_server: FakeOpenAIServer, closing: ExitStack
) -> None:
    """With ``n=2`` a recall call in a choice other than the first reached the client."""
    gw = make_gateway(budget=1500)
    client = closing.enter_context(openai.OpenAI(base_url=gw.url + "/v1", api_key="k", max_retries=0))
    client.chat.completions.create(model="m", messages=over_budget("chat"), tools=_tools("chat"), n=2)
    sent = openai_server.last_request.json
    assert sent["messages"] != over_budget("chat")  # cut, yet recall not offered and not named by the pointers
    assert _offered(sent) == {"sh"} and "recall(" not in json.dumps(sent)


def test_chat_with_legacy_functions_is_not_offered_recall(
    make_gateway: GatewayFactory, openai_server: FakeOpenAIServer, closing: ExitStack
) -> None:
    """OpenAI refuses (400) a body with both ``functions`` and ``tools``: the gateway's recall went in ``tools``
    beside the client's ``functions``."""
    gw = make_gateway(budget=1500)
    client = closing.enter_context(openai.OpenAI(base_url=gw.url + "/v1", api_key="k", max_retries=0))
    functions = [{"name": "recall", "description": "the client's own", "parameters": SCHEMA}]
    client.chat.completions.create(model="m", messages=over_budget("chat"), functions=functions)  # type: ignore[call-overload]
    sent = openai_server.last_request.json
    assert sent["messages"] != over_budget("chat") and sent["functions"] == functions
    assert "tools" not in sent and "recall(" not in json.dumps(sent["messages"])


# -- Responses shapes --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "fields",
    [{"prompt": {"id": "pmpt_abc"}}, {"instructions": "Say hi."}],
    ids=["prompt-template", "instructions-only"],
)
def test_a_responses_body_without_input_is_forwarded_unchanged(
    gateway: Any, openai_server: FakeOpenAIServer, fields: dict[str, Any], closing: ExitStack
) -> None:
    client = closing.enter_context(openai.OpenAI(base_url=gateway.url + "/v1", api_key="k", max_retries=0))
    response = client.responses.create(model="m", **fields)
    assert response.output_text == "ok"
    assert openai_server.last_request.json == {"model": "m", **fields}


@pytest.mark.parametrize("store", [False, None], ids=["store-false", "stored"])
def test_a_responses_recall_follow_up_sends_back_only_reasoning_the_api_can_find(
    make_gateway: GatewayFactory, openai_server: FakeOpenAIServer, store: bool | None, closing: ExitStack
) -> None:
    """With ``store: false`` the API answers 404 to a reasoning item sent back by id without its
    ``encrypted_content`` (it kept nothing to find by that id); stored, the item is found and goes back."""
    gw = make_gateway(budget=1500)
    openai_server.reply(reasoning="I should look it up", tool_calls=[FakeToolCall("recall", {"query": "x"})])
    openai_server.reply("found it")
    client = closing.enter_context(openai.OpenAI(base_url=gw.url + "/v1", api_key="k", max_retries=0))
    extra = {} if store is None else {"store": store}
    response = client.responses.create(model="m", input=over_budget("responses"), tools=_tools("responses"), **extra)
    assert response.output_text == "found it"
    follow_up = openai_server.last_request.json
    sent = [i.get("type") for i in follow_up["input"][-3:]]
    if store is False:
        assert sent[-2:] == ["function_call", "function_call_output"] and "reasoning" not in sent
    else:
        assert sent == ["reasoning", "function_call", "function_call_output"]
    assert follow_up.get("store") == store and "include" not in follow_up
