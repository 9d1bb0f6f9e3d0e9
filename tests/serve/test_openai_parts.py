"""OpenAI Chat Completions and Responses sessions whose user messages hold parts windowkeeper does not model (an
unknown part type next to images, audio and files) and keys it does not read (vendor keys, a Responses message's
``id`` and ``status``), through the gateway at a small budget: every part that reaches the upstream is the
client's own, byte for byte, or one windowkeeper wrote, and a message it changed in part keeps the client's keys.

The manager reads a plain twin of each item (unknown parts as text carrying their JSON, unknown keys left out). A
user message a recall note was joined to went upstream as that twin: its unknown part as the
``[unknown x_vendor_part] {...}`` text, without its vendor keys, and on Responses without its ``id`` and
``status``.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from contextlib import ExitStack
from typing import Any

import openai

from windowkeeper.testing.fake_servers import FakeOpenAIServer

from .conftest import GatewayFactory

PNG = "data:image/png;base64," + "iVBORw0KGgo" + "A" * 80
MADE = ("[tool result cleared", "[Recalled context, added by the context manager", "[truncated ", "Summary of the")
"""What windowkeeper writes itself: a pointer to a cleared result, a recall note, a text cut to fit, a summary."""
FIRST = "Remember: the passphrase for the zorblax vault is quindecillion-7."
ASK = "What was the passphrase for the zorblax vault, quindecillion?"
"""A question about the first message, asked once it is cut: the turns that ask it get a recall note."""


def _output(n: int) -> str:
    return "\n".join(f"[{n}.{i}] line of output checksum {(n * 31 + i) % 997}" for i in range(60))


def _key(value: Any) -> str:
    return json.dumps(value, sort_keys=True)


def _parts(item: dict[str, Any], text: str) -> list[Any]:
    content = item.get("content")
    return content if isinstance(content, list) else [{"type": text, "text": content}]


def _check(sent: list[dict[str, Any]], items: list[dict[str, Any]], text: str, call: int) -> list[str]:
    """What in ``sent`` is neither the client's nor windowkeeper's: a part, or a client key of a changed message."""
    theirs = {_key(item) for item in items}
    parts = {_key(p): i for i, item in enumerate(items) if "content" in item for p in _parts(item, text)}
    wrong = []
    for item in sent:
        if _key(item) in theirs or "content" not in item:
            continue
        owners = []
        for part in _parts(item, text):
            if _key(part) in parts:
                owners.append(parts[_key(part)])
            elif not any(mark in _key(part) for mark in MADE):
                wrong.append(f"call {call}: part {_key(part)[:160]}")
        if owners:
            lost = set(items[max(owners, key=owners.count)]) - set(item)
            wrong += [f"call {call}: {item.get('role')} message lost {sorted(lost)}"] if lost else []
    return wrong


def _session(
    client: Callable[[list[dict[str, Any]]], None],
    sent: Callable[[], list[dict[str, Any]]],
    user: Callable[[int], dict[str, Any]],
    turn: Callable[[int], list[dict[str, Any]]],
    text: str,
) -> list[str]:
    items: list[dict[str, Any]] = [{"role": "user", "content": FIRST}]
    wrong: list[str] = []
    for n in range(1, 31):
        items.append(user(n))
        if n % 5 == 0:
            items[-1]["content"].append({"type": text, "text": ASK})
        client(copy.deepcopy(items))
        wrong += _check(sent(), items, text, n)
        items += turn(n)
    return wrong


def _chat_user(n: int) -> dict[str, Any]:
    parts: list[dict[str, Any]] = [{"type": "text", "text": f"Step {n}: go on with the zorblax{n} module."}]
    if n % 3 == 1:
        parts.append({"type": "image_url", "image_url": {"url": PNG, "detail": "high"}})
    if n % 3 == 2:
        parts.append({"type": "input_audio", "input_audio": {"data": "UklGRg==", "format": "wav"}})
    if n % 4 == 3:
        parts.append({"type": "file", "file": {"file_id": f"file-{n}", "filename": f"f{n}.pdf"}})
    parts.append({"type": "x_vendor_part", "payload": {"k": n}})
    return {"role": "user", "content": parts, "name": f"alice{n}", "x_vendor": {"trace": n}}


def _chat_turn(n: int) -> list[dict[str, Any]]:
    call = {"id": f"call_{n}", "type": "function", "function": {"name": "run", "arguments": json.dumps({"n": n})}}
    assistant = {"role": "assistant", "content": f"Running step {n}.", "refusal": None, "tool_calls": [call]}
    if n % 2:
        assistant["audio"] = {"id": f"audio_{n}"}
    return [assistant, {"role": "tool", "tool_call_id": f"call_{n}", "content": _output(n)}]


def test_a_chat_message_changed_in_part_keeps_the_clients_parts_and_keys(
    make_gateway: GatewayFactory, openai_server: FakeOpenAIServer, closing: ExitStack
) -> None:
    gw = make_gateway(budget=3_000)
    client = closing.enter_context(openai.OpenAI(base_url=f"{gw.url}/v1", api_key="k", max_retries=0))
    tools: Any = [{"type": "function", "function": {"name": "run", "parameters": {"type": "object"}}}]

    def call(messages: list[dict[str, Any]]) -> None:
        client.chat.completions.create(model="gpt-x", messages=messages, tools=tools)  # type: ignore[arg-type]

    wrong = _session(call, lambda: openai_server.last_request.json["messages"], _chat_user, _chat_turn, "text")
    assert int(gw.gateway.metrics.cuts["chat_completions"]) > 20  # the session was managed, not passed through
    assert sum("Recalled context" in _key(r.json) for r in openai_server.requests) > 2  # notes were joined
    assert wrong == []


def _responses_user(n: int) -> dict[str, Any]:
    parts: list[dict[str, Any]] = [{"type": "input_text", "text": f"Step {n}: go on with the zorblax{n} module."}]
    if n % 3 == 1:
        parts.append({"type": "input_image", "image_url": PNG, "detail": "low"})
    if n % 3 == 2:
        parts.append({"type": "input_file", "file_id": f"file-{n}", "x_file": n})
    parts.append({"type": "x_vendor_part", "payload": {"k": n}})
    return {"type": "message", "id": f"msg_u{n}", "status": "completed", "role": "user", "content": parts, "x": n}


def _responses_turn(n: int) -> list[dict[str, Any]]:
    text = {"type": "output_text", "text": f"Running step {n}.", "annotations": []}
    return [
        {"type": "message", "id": f"msg_a{n}", "role": "assistant", "status": "completed", "content": [text]},
        {"type": "function_call", "id": f"fc_{n}", "call_id": f"call_{n}", "name": "run", "arguments": "{}"},
        {"type": "function_call_output", "call_id": f"call_{n}", "output": _output(n)},
    ]


def test_a_responses_message_changed_in_part_keeps_the_clients_parts_id_and_keys(
    make_gateway: GatewayFactory, openai_server: FakeOpenAIServer, closing: ExitStack
) -> None:
    gw = make_gateway(budget=3_000)
    client = closing.enter_context(openai.OpenAI(base_url=f"{gw.url}/v1", api_key="k", max_retries=0))
    tools: Any = [{"type": "function", "name": "run", "parameters": {"type": "object"}}]

    def call(items: list[dict[str, Any]]) -> None:
        client.responses.create(model="gpt-x", input=items, tools=tools)  # type: ignore[arg-type]

    wrong = _session(
        call, lambda: openai_server.last_request.json["input"], _responses_user, _responses_turn, "input_text"
    )
    assert int(gw.gateway.metrics.cuts["responses"]) > 20
    assert sum("Recalled context" in _key(r.json) for r in openai_server.requests) > 2
    assert wrong == []


def _cut_session(
    call: Callable[[list[dict[str, Any]]], None],
    sent: Callable[[], list[dict[str, Any]]],
    turn: Callable[[int], list[dict[str, Any]]],
) -> tuple[list[str], int]:
    """A session whose every fourth step returns an output larger than the budget: what the manager cut to fit
    of those outputs, and how many were cut."""
    items: list[dict[str, Any]] = [{"role": "user", "content": "Audit everything."}]
    wrong: list[str] = []
    cuts = 0
    for n in range(1, 21):
        call(copy.deepcopy(items))
        for item in sent():
            if "[truncated " not in _key(item):
                continue
            cuts += 1
            call_id = item.get("tool_call_id", item.get("call_id"))
            outputs = (i for i in items if i.get("role") == "tool" or i.get("type") == "function_call_output")
            client = next(i for i in outputs if i.get("tool_call_id", i.get("call_id")) == call_id)
            lost = {k: v for k, v in client.items() if k not in item}
            images = [p for p in item.get("output", []) if isinstance(p, dict) and p.get("type") == "input_image"]
            wrong += [f"call {n}: {call_id} lost {lost}"] if lost else []
            wrong += [f"call {n}: {call_id} image {p}" for p in images if p not in client["output"]]
        items += turn(n)
    return wrong, cuts


def _chat_cut_turn(n: int) -> list[dict[str, Any]]:
    calls = [
        {"id": f"call_{n}_{j}", "type": "function", "function": {"name": "run", "arguments": json.dumps({"j": j})}}
        for j in range(2)
    ]
    out = [{"role": "assistant", "content": None, "tool_calls": calls}]
    for j in range(2):
        text = _output(n) * (8 if n % 4 == 0 and j == 0 else 1)
        out.append({"role": "tool", "tool_call_id": f"call_{n}_{j}", "content": text, "name": "run", "x_tool": n})
    return out


def test_a_chat_tool_result_cut_to_fit_keeps_its_name_and_keys(
    make_gateway: GatewayFactory, openai_server: FakeOpenAIServer, closing: ExitStack
) -> None:
    gw = make_gateway(budget=4_000)
    client = closing.enter_context(openai.OpenAI(base_url=f"{gw.url}/v1", api_key="k", max_retries=0))

    def call(messages: list[dict[str, Any]]) -> None:
        client.chat.completions.create(model="gpt-x", messages=messages)  # type: ignore[arg-type]

    wrong, cuts = _cut_session(call, lambda: openai_server.last_request.json["messages"], _chat_cut_turn)
    assert cuts > 2
    assert wrong == []


def _responses_cut_turn(n: int) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = [
        {"type": "function_call", "id": f"fc_{n}_{j}", "call_id": f"call_{n}_{j}", "name": "run", "arguments": "{}"}
        for j in range(2)
    ]
    for j in range(2):
        text = _output(n) * (8 if n % 4 == 0 and j == 0 else 1)
        output: Any = [{"type": "input_text", "text": text}, {"type": "input_image", "image_url": PNG, "detail": "low"}]
        item = {"type": "function_call_output", "id": f"fco_{n}_{j}", "call_id": f"call_{n}_{j}", "output": output}
        out.append({**item, "status": "completed", "x_out": n})
    return out


def test_a_responses_tool_output_cut_to_fit_keeps_its_id_keys_and_image_detail(
    make_gateway: GatewayFactory, openai_server: FakeOpenAIServer, closing: ExitStack
) -> None:
    gw = make_gateway(budget=4_000)
    client = closing.enter_context(openai.OpenAI(base_url=f"{gw.url}/v1", api_key="k", max_retries=0))

    def call(items: list[dict[str, Any]]) -> None:
        client.responses.create(model="gpt-x", input=items)  # type: ignore[arg-type]

    wrong, cuts = _cut_session(call, lambda: openai_server.last_request.json["input"], _responses_cut_turn)
    assert cuts > 2
    assert wrong == []
