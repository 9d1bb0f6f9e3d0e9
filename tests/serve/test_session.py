"""A long agent session per protocol through the gateway (the bench's session at a small size), and the
server-side recall when the model mixes the gateway's tool with the client's."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path
from types import ModuleType
from typing import Any

import anthropic
import openai
import pytest

from windowkeeper.testing.fake_servers import FakeAnthropicServer, FakeOpenAIServer, FakeToolCall

from .harness import over_budget

BENCH_DIR = Path(__file__).resolve().parents[2] / "bench"


@pytest.fixture(scope="module")
def bench() -> Iterator[ModuleType]:
    sys.path.insert(0, str(BENCH_DIR))
    try:
        yield importlib.import_module("gateway_session")
    finally:
        sys.path.remove(str(BENCH_DIR))


@pytest.mark.parametrize("protocol", ["chat_completions", "responses", "messages"])
@pytest.mark.parametrize("calls", [30, 31], ids=["recall-streamed", "recall-json"])
def test_a_long_session_stays_valid_under_budget_lossless_and_recalls(
    bench: ModuleType, protocol: str, calls: int
) -> None:
    report = bench.run_session(protocol, calls, 5000)
    assert report.upstream_requests == calls + 1  # one extra: the gateway's continuation after recall
    assert report.managed_cuts > calls // 2
    assert report.over_budget == 0
    assert report.invalid == 0
    assert report.changed_originals == 0
    assert report.missing_unknown_top == 0
    assert report.too_many_marks == 0
    assert len(report.threads) == 1
    assert report.recall_answer_has_fact
    assert not report.client_saw_recall
    assert bench.FACT in report.final_text
    assert report.prefix_stable_share > 0.4
    # every body after the first continues the one before (on Messages the client moves its cache mark to the
    # newest message each call): parsed only where it is new
    assert report.body_reuses >= calls - 2  # the first, and the first streamed (its "stream" key comes first)


@pytest.mark.parametrize("protocol", ["chat_completions", "responses", "messages"])
@pytest.mark.parametrize("stream", [False, True])
def test_a_recall_call_beside_a_client_call_is_removed_and_the_client_call_kept(
    make_gateway: Any,
    openai_server: FakeOpenAIServer,
    anthropic_server: FakeAnthropicServer,
    protocol: str,
    stream: bool,
    closing: ExitStack,
) -> None:
    gw = make_gateway(budget=1500)
    server = anthropic_server if protocol == "messages" else openai_server
    items = over_budget(protocol)
    server.reply(tool_calls=[FakeToolCall("recall", {"query": "log"}), FakeToolCall("sh", {"cmd": "ls"}, id="mine")])
    tool = {"name": "sh", "description": "shell", "parameters": {"type": "object", "properties": {}}}
    if protocol == "messages":
        client = closing.enter_context(anthropic.Anthropic(base_url=gw.url, api_key="k", max_retries=0))
        kwargs: dict[str, Any] = {
            "model": "c",
            "max_tokens": 10,
            "messages": items,
            "tools": [{"name": "sh", "description": "shell", "input_schema": tool["parameters"]}],
        }
        if stream:
            with client.messages.stream(**kwargs) as s:
                message = s.get_final_message()
        else:
            message = client.messages.create(**kwargs)
        names = [(b.name, b.id) for b in message.content if b.type == "tool_use"]
    elif protocol == "responses":
        oclient = closing.enter_context(openai.OpenAI(base_url=gw.url + "/v1", api_key="k", max_retries=0))
        kwargs = {"model": "m", "input": items, "tools": [{"type": "function", **tool}]}
        if stream:
            with oclient.responses.stream(**kwargs) as rs:
                response = rs.get_final_response()
        else:
            response = oclient.responses.create(**kwargs)
        names = [(i.name, i.call_id) for i in response.output if i.type == "function_call"]
    else:
        oclient = closing.enter_context(openai.OpenAI(base_url=gw.url + "/v1", api_key="k", max_retries=0))
        kwargs = {"model": "m", "messages": items, "tools": [{"type": "function", "function": tool}]}
        if stream:
            with oclient.chat.completions.stream(**kwargs) as cs:
                completion = cs.get_final_completion()
        else:
            completion = oclient.chat.completions.create(**kwargs)
        names = [(c.function.name, c.id) for c in completion.choices[0].message.tool_calls or []]
    assert names == [("sh", "mine")]
    assert len(server.requests) == 1  # a mixed turn goes back to the client: its own call needs running
    offered = server.last_request.json["tools"]
    assert len(offered) == 2 and "recall" in str(offered[-1])
