"""The gateway's recall follow-ups stay within the budget, like every other upstream request.

After the model calls recall the gateway sends the first request again with the model's turn and the answer
appended. That follow-up went out without any bound: five recalled passages appended to a request already near the
budget made it larger than the budget (2547 tokens of text at a 2000-token budget), i.e. larger than the model's
context window. Each answer is now cut to the room the budget has left, with a marker saying it was cut.
"""

from __future__ import annotations

from contextlib import ExitStack
from typing import Any

import anthropic
import openai
import pytest

from windowkeeper.integrations._formats import read_messages
from windowkeeper.prompt.cost import tool_schema_tokens
from windowkeeper.testing.fake_servers import FakeAnthropicServer, FakeOpenAIServer, FakeToolCall
from windowkeeper.tokenizing.counters import TiktokenCounter

from .conftest import GatewayFactory

BUDGET = 2000
SCHEMA = {"type": "object", "properties": {"p": {"type": "string"}}}


def _output(turn: int) -> str:
    return f"file {turn}: " + " ".join(f"line{turn}_{i} value={i * 7}" for i in range(250))


def _chat_turns(turns: int) -> list[dict[str, Any]]:
    """A coding agent's Chat list: each turn reads a file of ~1000 tokens (a few turns fill the budget)."""
    items: list[dict[str, Any]] = [{"role": "system", "content": "You are a coding agent."}]
    for t in range(turns):
        call = {"id": f"c{t}", "type": "function", "function": {"name": "read_file", "arguments": "{}"}}
        items += [
            {"role": "user", "content": f"read file {t}"},
            {"role": "assistant", "content": None, "tool_calls": [call]},
            {"role": "tool", "tool_call_id": f"c{t}", "content": _output(t)},
            {"role": "assistant", "content": f"read file {t}"},
        ]
    return items


def _messages_turns(turns: int) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    for t in range(turns):
        items += [
            {"role": "user", "content": f"read file {t}"},
            {"role": "assistant", "content": [{"type": "tool_use", "id": f"t{t}", "name": "read_file", "input": {}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": f"t{t}", "content": _output(t)}]},
            {"role": "assistant", "content": f"read file {t}"},
        ]
    return items


def _size(fmt: str, body: dict[str, Any]) -> int:
    """An upstream body's tokens as the gateway's counter counts them: its messages, system text and tools."""
    counter = TiktokenCounter()
    system = body.get("system")
    messages = read_messages(fmt, body["messages"])  # type: ignore[arg-type]
    return (
        counter.count_messages(messages)
        + (counter.count_text(system) if isinstance(system, str) else 0)
        + tool_schema_tokens(body.get("tools"), counter)
    )


@pytest.mark.parametrize("stream", [False, True], ids=["json", "streamed"])
def test_a_chat_recall_follow_up_stays_within_the_budget(
    make_gateway: GatewayFactory, openai_server: FakeOpenAIServer, stream: bool, closing: ExitStack
) -> None:
    gw = make_gateway(budget=BUDGET)
    client = closing.enter_context(openai.OpenAI(base_url=gw.url + "/v1", api_key="k", max_retries=0))
    tools: Any = [{"type": "function", "function": {"name": "read_file", "parameters": SCHEMA}}]
    messages: Any = [*_chat_turns(6), {"role": "user", "content": "what was in file 0? line0_1 value"}]
    openai_server.reply(tool_calls=[FakeToolCall("recall", {"query": "line0_1 value=7 line0_2"})])
    openai_server.reply("file 0 had lines")
    key = {"Idempotency-Key": "client-key-1"}
    if stream:
        with client.chat.completions.stream(model="m", messages=messages, tools=tools, extra_headers=key) as s:
            text = s.get_final_completion().choices[0].message.content
    else:
        made = client.chat.completions.create(model="m", messages=messages, tools=tools, extra_headers=key)
        text = made.choices[0].message.content
    assert text == "file 0 had lines"
    # the client's idempotency key goes with its own request only: the follow-up is another body
    assert [r.headers.get("idempotency-key") for r in openai_server.requests[-2:]] == ["client-key-1", None]
    first, follow_up = (r.json for r in openai_server.requests[-2:])
    assert "recall" in {t["function"]["name"] for t in first["tools"]}
    answer = follow_up["messages"][-1]
    assert answer["role"] == "tool" and answer["content"]  # the model got an answer, cut to fit if need be
    assert _size("openai_chat", follow_up) <= BUDGET


def test_an_anthropic_recall_follow_up_cuts_its_answer_with_a_marker(
    make_gateway: GatewayFactory, anthropic_server: FakeAnthropicServer, closing: ExitStack
) -> None:
    gw = make_gateway(budget=BUDGET)
    client = closing.enter_context(anthropic.Anthropic(base_url=gw.url, api_key="k", max_retries=0))
    tools: Any = [{"name": "read_file", "description": "read", "input_schema": SCHEMA}]
    messages: Any = [*_messages_turns(6), {"role": "user", "content": "what was in file 0? line0_1 value"}]
    anthropic_server.reply(tool_calls=[FakeToolCall("recall", {"query": "line0_1 value=7 line0_2"})])
    anthropic_server.reply("file 0 had lines")
    message = client.messages.create(model="c", max_tokens=10, system="be brief", messages=messages, tools=tools)
    assert message.content[0].type == "text" and message.content[0].text == "file 0 had lines"
    follow_up = anthropic_server.last_request.json
    result = follow_up["messages"][-1]["content"][0]
    assert result["type"] == "tool_result" and "[truncated" in result["content"]
    assert _size("anthropic", follow_up) <= BUDGET
