"""Through the gateway: custom tools, the legacy ``function_call`` and tool item types nobody modelled.

The gateway's plain projection of a client's items turned a ``function`` message and every Responses item type it
did not know into a *user* message, so a trim kept a function's answer without its call (and the user turn before
it went), and a ``custom_tool_call_output`` or ``computer_call_output`` counted as a new user turn.
"""

from __future__ import annotations

import json
from contextlib import ExitStack
from typing import Any

import openai

from windowkeeper.testing.fake_servers import FakeOpenAIServer

from .conftest import GatewayFactory

LOG = "collected 212 items; 3 failed in tests/test_ledger.py\n" * 60


def _originals(items: list[dict[str, Any]]) -> set[str]:
    return {json.dumps(i, sort_keys=True) for i in items}


def test_chat_legacy_and_custom_calls_stay_with_their_answers(
    make_gateway: GatewayFactory, openai_server: FakeOpenAIServer, closing: ExitStack
) -> None:
    gw = make_gateway(budget=2500)
    client = closing.enter_context(openai.OpenAI(base_url=gw.url + "/v1", api_key="k", max_retries=0))
    messages: list[dict[str, Any]] = [{"role": "system", "content": "You patch code."}]
    for t in range(8):
        messages.append({"role": "user", "content": f"Turn {t}: patch module {t}"})
        if t % 2:
            messages.append(
                {"role": "assistant", "content": None, "function_call": {"name": "lookup", "arguments": "{}"}}
            )
            messages.append({"role": "function", "name": "lookup", "content": LOG})
        else:
            call = {"id": f"call_{t}", "type": "custom", "custom": {"name": "apply_patch", "input": f"*** {t}"}}
            messages.append({"role": "assistant", "content": None, "tool_calls": [call]})
            messages.append({"role": "tool", "tool_call_id": f"call_{t}", "content": LOG})
        openai_server.reply(f"done {t}")
        client.chat.completions.create(model="m", messages=messages)  # type: ignore[arg-type]
        sent = openai_server.last_request.json["messages"]
        assert sent[-3]["content"] == f"Turn {t}: patch module {t}"  # the turn in progress, whole
        ids = {c["id"] for m in sent for c in m.get("tool_calls") or []}
        for j, m in enumerate(sent):
            assert m["role"] != "tool" or m["tool_call_id"] in ids, (t, m)
            assert m["role"] != "function" or sent[j - 1].get("function_call"), (t, j)
        assert sent[-2] in messages and sent[-1] in messages  # the call and its answer go out as the client sent them
        messages.append({"role": "assistant", "content": f"done {t}"})


def test_responses_tool_items_are_not_user_turns(
    make_gateway: GatewayFactory, openai_server: FakeOpenAIServer, closing: ExitStack
) -> None:
    gw = make_gateway(budget=4000)
    client = closing.enter_context(openai.OpenAI(base_url=gw.url + "/v1", api_key="k", max_retries=0))
    items: list[dict[str, Any]] = []
    for t in range(4):
        items.append({"role": "user", "content": f"Turn {t}: patch module {t}"})
        for k in range(2):
            items += [
                {"type": "custom_tool_call", "call_id": f"ct{t}{k}", "name": "apply_patch", "input": f"*** {t}.{k}"},
                {"type": "custom_tool_call_output", "call_id": f"ct{t}{k}", "output": LOG},
                {"type": "computer_call", "call_id": f"cc{t}{k}", "id": f"cu_{t}{k}", "status": "completed",
                 "action": {"type": "screenshot"}, "pending_safety_checks": []},
                {"type": "computer_call_output", "call_id": f"cc{t}{k}",
                 "output": {"type": "computer_screenshot", "image_url": "data:image/png;base64," + "A" * 400}},
            ]  # fmt: skip
            openai_server.reply("ok")
            client.responses.create(model="m", input=items)  # type: ignore[arg-type]
            sent = openai_server.last_request.json["input"]
            calls = {i["call_id"] for i in sent if i.get("type") in ("custom_tool_call", "computer_call")}
            outputs = [i for i in sent if i.get("type") in ("custom_tool_call_output", "computer_call_output")]
            assert all(i["call_id"] in calls for i in outputs), (t, k)
            # the user turn in progress is still the last user message sent: no output was taken for one
            users = [i for i in sent if i.get("role") == "user"]
            assert users and users[-1]["content"] == f"Turn {t}: patch module {t}"
            originals = _originals(items)
            changed = [i for i in sent if json.dumps(i, sort_keys=True) not in originals]
            assert all(i.get("type") == "custom_tool_call_output" or i.get("role") == "user" for i in changed), changed
        items.append(
            {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": f"done {t}"}]}
        )
