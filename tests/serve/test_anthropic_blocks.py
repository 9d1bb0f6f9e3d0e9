"""An Anthropic agent session whose turns hold blocks windowkeeper does not model (``search_result``,
``container_upload``, server tools), citations, redacted thinking and ``cache_control`` marks, through the gateway
at a small budget: every block that reaches the upstream is the client's own, byte for byte, or one windowkeeper
wrote (a pointer, a recall note), and the client's turns stay whole turns.

The manager reads a plain twin of each item (unknown blocks as text carrying their JSON, no marks), and a client
item it left unchanged goes upstream as the client's original. A turn it did change (a tool result cleared, a
recall note joined to the question, the leftover of a turn whose tool result left with its call) went up as the
twin: its unknown blocks as that ``[unknown search_result] {...}`` text and its unchanged blocks without their
``cache_control``.
"""

from __future__ import annotations

import base64
import copy
import itertools
import json
from contextlib import ExitStack
from typing import Any

import anthropic

from windowkeeper.testing.fake_servers import FakeAnthropicServer

from .conftest import GatewayFactory

PNG = base64.b64encode(b"\x89PNG\r\n\x1a\n" + b"\0" * 60).decode()
MADE = ("[tool result cleared", "[Recalled context, added by the context manager", "[truncated ")
"""What windowkeeper writes itself: a pointer to a cleared result, a recall note, a text cut to fit."""
TOOLS = [
    {"name": "run", "description": "run a command", "input_schema": {"type": "object", "properties": {}}},
    {"type": "web_search_20250305", "name": "web_search", "max_uses": 3},
]


def _output(n: int) -> str:
    return "\n".join(f"[{n}.{i}] line of output checksum {(n * 31 + i) % 997}" for i in range(60))


def _assistant(n: int) -> dict[str, Any]:
    if n % 7 == 3:
        blocks: list[dict[str, Any]] = [{"type": "redacted_thinking", "data": f"redacted{n}"}]
    else:
        blocks = [{"type": "thinking", "thinking": f"run step {n}", "signature": f"sig{n}"}]
    if n % 5 == 0:
        blocks += [
            {"type": "server_tool_use", "id": f"srvtoolu_{n}", "name": "web_search", "input": {"query": f"q{n}"}},
            {
                "type": "web_search_tool_result",
                "tool_use_id": f"srvtoolu_{n}",
                "content": [
                    {"type": "web_search_result", "url": f"https://x.test/{n}", "title": "T", "encrypted_content": "e"}
                ],
            },
        ]
    blocks.append({"type": "tool_use", "id": f"toolu_{n:03d}", "name": "run", "input": {"cmd": f"step {n}"}})
    return {"role": "assistant", "content": blocks}


def _results(n: int) -> dict[str, Any]:
    content: Any = _output(n)
    if n % 6 == 2:
        content = [
            {"type": "text", "text": _output(n)},
            {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG}},
        ]
    elif n % 6 == 4:
        search = {"type": "search_result", "source": f"https://kb.test/{n}", "title": f"kb {n}"}
        content = [{**search, "content": [{"type": "text", "text": _output(n)}], "citations": {"enabled": True}}]
    result: dict[str, Any] = {"type": "tool_result", "tool_use_id": f"toolu_{n:03d}", "content": content}
    if n % 3 == 0:
        result["is_error"] = True
    if n % 8 == 5:
        result["cache_control"] = {"type": "ephemeral"}
    blocks = [result]
    if n % 9 == 4:
        blocks.append({"type": "text", "text": f"note {n}", "x_client": n})
    if n % 10 == 6:
        blocks.append({"type": "container_upload", "file_id": f"file_{n}"})
    if n % 11 == 7:
        blocks.append(
            {"type": "search_result", "source": "s", "title": "t", "content": [{"type": "text", "text": "sr"}]}
        )
    return {"role": "user", "content": blocks}


def _blocks(item: dict[str, Any]) -> list[Any]:
    content = item["content"]
    return content if isinstance(content, list) else [{"type": "text", "text": content}]


def _key(value: Any) -> str:
    return json.dumps(value, sort_keys=True)


def test_every_block_of_an_anthropic_session_is_the_clients_own_or_written_by_windowkeeper(
    make_gateway: GatewayFactory, anthropic_server: FakeAnthropicServer, closing: ExitStack
) -> None:
    gw = make_gateway(budget=4_000)
    client = closing.enter_context(anthropic.Anthropic(base_url=gw.url, api_key="k", max_retries=0))
    items: list[dict[str, Any]] = [{"role": "user", "content": "Work through the checklist."}]
    foreign: list[str] = []
    turns: list[list[str]] = []
    for n in range(1, 41):
        client.messages.create(model="claude-x", max_tokens=64, messages=copy.deepcopy(items), tools=TOOLS)
        sent = anthropic_server.last_request.json["messages"]
        theirs = {_key(b) for item in items for b in _blocks(item)}
        foreign += [
            f"call {n}: {_key(b)[:160]}"
            for item in sent
            for b in _blocks(item)
            if _key(b) not in theirs and not any(mark in _key(b) for mark in MADE)
        ]
        turns.append([item["role"] for item in sent])
        items += [_assistant(n), _results(n)]
    assert int(gw.gateway.metrics.cuts["messages"]) > 20  # the session was managed, not passed through
    assert foreign == []
    assert all(a != b for roles in turns for a, b in itertools.pairwise(roles))  # no turn split in two
