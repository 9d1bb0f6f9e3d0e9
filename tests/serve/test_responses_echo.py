"""A Responses reply echoes its request's ``tools`` and ``instructions``; through the gateway it echoes the client's.

Once a thread is cut the upstream request carries the gateway's ``recall`` tool and the summary in its
instructions, and the upstream's response echoed both to the client (the fake echoes as the real API does: the
request's tools, ``[]`` without any, and its instructions, null without any), in the JSON reply and in the streamed
``response.created`` / ``response.in_progress`` / ``response.completed`` events.
"""

from __future__ import annotations

import json
from contextlib import ExitStack
from typing import Any

import httpx
import openai
import pytest

from windowkeeper.testing.fake_servers import FakeOpenAIServer

from .conftest import GatewayFactory

TOOLS = [{"type": "function", "name": "read_file", "parameters": {"type": "object", "properties": {}}, "strict": False}]
INPUT = [{"role": "user", "content": f"step {n}: " + "details " * 60} for n in range(8)]


@pytest.mark.parametrize("own", [True, False], ids=["own-tools-and-instructions", "none-sent"])
def test_a_json_response_echoes_the_clients_tools_and_instructions(
    make_gateway: GatewayFactory, openai_server: FakeOpenAIServer, own: bool
) -> None:
    gw = make_gateway(budget=600)
    fields: dict[str, Any] = {"instructions": "be brief", "tools": TOOLS} if own else {}
    response = httpx.post(
        gw.url + "/v1/responses",
        json={"model": "m", "input": INPUT, **fields},
        headers={"authorization": "Bearer k"},
    )
    sent = openai_server.last_request.json
    assert "recall" in [t["name"] for t in sent["tools"]] and "Summary" in sent["instructions"]  # it was cut
    reply = response.json()
    assert reply["tools"] == fields.get("tools", [])
    assert reply["instructions"] == fields.get("instructions")


def test_a_streamed_response_echoes_the_clients_tools_and_instructions(
    make_gateway: GatewayFactory, openai_server: FakeOpenAIServer, closing: ExitStack
) -> None:
    gw = make_gateway(budget=600)
    client = closing.enter_context(openai.OpenAI(base_url=gw.url + "/v1", api_key="k", max_retries=0))
    echoed: dict[str, tuple[Any, Any]] = {}
    with client.responses.stream(model="m", input=INPUT, instructions="be brief", tools=TOOLS) as stream:  # type: ignore[arg-type]
        for event in stream:
            response = getattr(event, "response", None)
            if response is not None:
                echoed[event.type] = ([t.model_dump(exclude_none=True) for t in response.tools], response.instructions)
        final = stream.get_final_response()
    sent = openai_server.last_request.json
    assert "recall" in [t["name"] for t in sent["tools"]] and "Summary" in sent["instructions"]
    assert set(echoed) >= {"response.created", "response.completed"}
    assert all(value == (TOOLS, "be brief") for value in echoed.values()), json.dumps(echoed)[:500]
    assert final.instructions == "be brief" and [t.name for t in final.tools] == ["read_file"]  # type: ignore[union-attr]
