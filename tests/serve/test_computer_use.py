"""Through the gateway: a Responses computer-use loop (``computer_call`` and its ``computer_call_output``).

The format reads the two as a call and its result (one unit, dropped together, the screenshot priced as an image
and never cleared), but the gateway's projection kept a table of its own of the item types it models, without
these two: each became an assistant text part holding the item's JSON. The whole loop after the task was then one
assistant turn no cut could fall inside: 32 steps at a 6,000-token budget went out whole, all 32 screenshots
(11 MB, about three times the budget, each step's item JSON counted on top of its image); now the task and the
newest few steps go, each call with its output, every item as the client sent it.
"""

from __future__ import annotations

import json
from contextlib import ExitStack
from typing import Any

import openai

from windowkeeper.llm.formats import from_responses_input
from windowkeeper.testing.fake_servers import FakeOpenAIServer
from windowkeeper.testing.images import screenshot_base64
from windowkeeper.tokenizing.media import image_tokens_for_size
from windowkeeper.tokens import default_counter

from .conftest import GatewayFactory

BUDGET = 6000
STEPS = 32


SHOTS = [screenshot_base64(seed) for seed in range(3)]
"""640 x 400 screenshots of about 350,000 base64 characters each."""
SHOT_TOKENS = image_tokens_for_size(640, 400)


def _step(t: int) -> list[dict[str, Any]]:
    """Action ``t`` and the screen after it; some outputs acknowledge a safety check, name the page or carry an
    id, keys the API checks and the gateway must forward as they came."""
    checks = (
        [{"id": f"cu_sc_{t}", "code": "malicious_instructions", "message": "Verify the page."}] if t % 7 == 3 else []
    )
    call = {
        "type": "computer_call",
        "id": f"cu_{t}",
        "call_id": f"call_{t}",
        "action": {"type": "click", "button": "left", "x": 10 * t, "y": 300},
        "pending_safety_checks": checks,
        "status": "completed",
    }
    output: dict[str, Any] = {
        "type": "computer_call_output",
        "call_id": f"call_{t}",
        "output": {"type": "computer_screenshot", "image_url": f"data:image/png;base64,{SHOTS[t % 3]}"},
    }
    if t % 4 == 0:
        output["current_url"] = f"https://bistro.test/book/{t}"
    if t % 7 == 4:
        output["acknowledged_safety_checks"] = [{"id": f"cu_sc_{t - 1}", "code": "malicious_instructions"}]
        output["id"] = f"cuo_{t}"
    return [call, output]


def _check_sent(sent: list[dict[str, Any]], items: list[dict[str, Any]], t: int) -> None:
    """Every item sent is a client item as it came (same keys, same order, same values), and every computer call
    goes with its output."""
    originals = {json.dumps(i) for i in items}
    changed = [i for i in sent if json.dumps(i) not in originals]
    assert changed == [], (t, [str(i)[:200] for i in changed])
    calls = [i["call_id"] for i in sent if i.get("type") == "computer_call"]
    outputs = [i["call_id"] for i in sent if i.get("type") == "computer_call_output"]
    assert calls == outputs, (t, calls, outputs)
    assert sent[-2:] == items[-2:]  # the step in progress, whole


def test_a_computer_use_loop_is_cut_by_whole_steps(
    make_gateway: GatewayFactory, openai_server: FakeOpenAIServer, closing: ExitStack
) -> None:
    gw = make_gateway(budget=BUDGET, recall=False)  # no recall tool: the count is the items' alone
    client = closing.enter_context(openai.OpenAI(base_url=gw.url + "/v1", api_key="k", max_retries=0))
    counter = default_counter()
    items: list[dict[str, Any]] = [
        {"type": "message", "role": "user", "content": "Book a table for two at 8 pm on the bistro's site."}
    ]
    for t in range(STEPS):
        items += _step(t)
        openai_server.reply("ok")
        raw = client.responses.with_raw_response.create(model="computer-use-preview", input=items)  # type: ignore[arg-type]
        counted = int(raw.headers["x-windowkeeper-tokens-after"])
        body = openai_server.last_request.json
        sent = body["input"]
        _check_sent(sent, items, t)
        # the screenshots are priced as the images they are, as the format prices them (with the summary of the
        # steps dropped, which goes in the instructions)
        assert counted == counter.count_messages(from_responses_input(sent, body.get("instructions"))), t
        assert counted <= BUDGET, (t, counted)
    shots = sum(1 for i in sent if i.get("type") == "computer_call_output")
    assert 2 <= shots <= BUDGET // SHOT_TOKENS, shots


def test_old_steps_leave_whole_when_the_user_speaks_between_them(
    make_gateway: GatewayFactory, openai_server: FakeOpenAIServer, closing: ExitStack
) -> None:
    """Turns of steps between user messages were droppable before too (the cut falls at a user message); with the
    steps read as calls and results, an old turn must still leave whole, never as a pointer or half a pair."""
    gw = make_gateway(budget=BUDGET)
    client = closing.enter_context(openai.OpenAI(base_url=gw.url + "/v1", api_key="k", max_retries=0))
    items: list[dict[str, Any]] = [{"type": "message", "role": "user", "content": "Book a table for two at 8 pm."}]
    for t in range(STEPS):
        if t and t % 3 == 0:
            items.append({"type": "message", "role": "user", "content": f"Go on from step {t}."})
        items += _step(t)
        openai_server.reply("ok")
        raw = client.responses.with_raw_response.create(model="computer-use-preview", input=items)  # type: ignore[arg-type]
        sent = openai_server.last_request.json["input"]
        # no step is cleared into a pointer: every item sent is the client's, steps whole
        recall = [i for i in sent if i.get("role") == "user" and "Recalled context" in str(i.get("content"))]
        _check_sent([i for i in sent if i not in recall], items, t)
        assert int(raw.headers["x-windowkeeper-tokens-after"]) <= BUDGET, t
