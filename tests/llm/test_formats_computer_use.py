"""OpenAI Responses computer use: ``computer_call`` and ``computer_call_output`` items.

Neither was modelled: both joined the assistant turn as items of unknown kind, so a computer-use loop after one
user message was one assistant message holding every screenshot. No cut could fall inside it, and a long session
at a small budget went out with every screenshot, far over the budget. A call and its output are a call and its
result now (one unit, kept or dropped together: either one alone is a 400 from the API). The output holds only a
screenshot, which no text pointer can stand for, so an old pair is never cleared: it leaves whole.
"""

from __future__ import annotations

import json
from typing import Any

from windowkeeper import Window
from windowkeeper.blocks import ImageBlock, ToolCallBlock, ToolResultBlock
from windowkeeper.llm.formats import from_anthropic, from_responses_input, to_anthropic, to_responses_input
from windowkeeper.testing.images import screenshot_base64
from windowkeeper.tokenizing.media import image_tokens_for_size
from windowkeeper.tokens import default_counter

from .sdk_types import sdk_problems

SCREENSHOTS = [screenshot_base64(seed) for seed in range(3)]
"""Real-sized screenshots: 640 x 400 PNGs of ~265 KB (~354,000 base64 characters each)."""


def _loop(steps: int) -> list[dict[str, Any]]:
    """A computer-use session: one request, then ``steps`` actions, each with the screenshot after it."""
    items: list[dict[str, Any]] = [
        {"type": "message", "role": "user", "content": "Book a table for two at 8 pm on the restaurant's site."}
    ]
    for t in range(steps):
        checks = (
            [{"id": f"cu_sc_{t}", "code": "malicious_instructions", "message": "Check the page."}] if t == 3 else []
        )
        items.append(
            {
                "type": "computer_call",
                "id": f"cu_{t}",
                "call_id": f"call_{t}",
                "action": {"type": "click", "button": "left", "x": 12 * t, "y": 300},
                "pending_safety_checks": checks,
                "status": "completed",
            }
        )
        output: dict[str, Any] = {
            "type": "computer_call_output",
            "call_id": f"call_{t}",
            "output": {"type": "computer_screenshot", "image_url": f"data:image/png;base64,{SCREENSHOTS[t % 3]}"},
            "current_url": f"https://bistro.test/step/{t}",
        }
        if t == 4:
            output["acknowledged_safety_checks"] = [{"id": "cu_sc_3", "code": "malicious_instructions"}]
            output["id"] = "cuo_4"
        items.append(output)
    return items


def _problems(items: list[Any]) -> list[str]:
    """What breaks the SDK's input item type, but ``current_url``: a key the SDK does not declare, which these
    items carry on purpose (an unknown field must pass through as it came)."""
    from openai.types.responses import ResponseInputItemParam

    return [p for p in sdk_problems(items, ResponseInputItemParam) if not p.endswith("unknown key current_url")]


def _dumped(items: list[Any]) -> list[str]:
    return [json.dumps(i, sort_keys=True) for i in items]


def test_a_call_and_its_screenshot_are_read_as_a_call_and_an_image_result() -> None:
    items = _loop(2)
    read = from_responses_input(items)
    assert [m.role for m in read] == ["user", "assistant", "tool", "assistant", "tool"]
    call = read[1].content[0]
    assert isinstance(call, ToolCallBlock) and (call.id, call.name, call.tool_type) == (
        "call_0",
        "computer",
        "computer_call",
    )
    result, shot = read[2].content
    assert isinstance(result, ToolResultBlock) and result.call_id == "call_0"
    assert isinstance(shot, ImageBlock) and shot.media.data_base64 == SCREENSHOTS[0]
    # priced as the image it is (its size, square assumed), not as 330,000 characters of base64
    counter = default_counter()
    assert counter.count_message(read[2]) < image_tokens_for_size(2048, 2048) + 20
    # written anew (no pass-through), a call goes back as the item it was and the output as a screenshot
    fresh = to_responses_input(read)[1]
    assert _problems(fresh) == []
    assert fresh[1:] == items[1:]
    # another format gets an ordinary tool call and a tool result holding the image
    from anthropic.types import MessageParam

    _, anthropic = to_anthropic(read)
    assert sdk_problems(anthropic, MessageParam) == []
    assert [b["type"] for b in anthropic[2]["content"][0]["content"]] == ["image"]  # type: ignore[index]
    assert len(from_anthropic(None, anthropic)) == len(read)


def test_a_long_computer_use_loop_is_cut_to_the_budget_in_whole_pairs() -> None:
    """40 steps of ~810 tokens each at a 6,000-token budget: the loop went out whole, 34,838 tokens."""
    items = _loop(40)
    window: Window[Any, Any] = Window(budget=6_000, format="openai_responses")
    fit = window.fit(items)
    out = list(fit.messages)
    assert fit.input_tokens <= 6_000
    assert _problems(out) == []
    # only the newest pairs stay, and every one of them whole: each output right after its own call
    assert out[0] == items[0]  # the request is kept
    kept = out[1:]
    assert 2 <= len(kept) // 2 < 40 and len(kept) % 2 == 0
    for call, output in zip(kept[::2], kept[1::2], strict=True):
        assert (call["type"], output["type"]) == ("computer_call", "computer_call_output")
        assert call["call_id"] == output["call_id"]
    assert kept[-1] == items[-1]
    # nothing kept was rewritten: no screenshot became a text pointer, every unknown field passed through
    assert set(_dumped(kept)) <= set(_dumped(items))
    # the kept pairs are the newest ones, in order
    assert _dumped(kept) == _dumped(items[-len(kept) :])


def test_safety_check_fields_pass_through_when_their_pair_is_kept() -> None:
    items = _loop(6)
    fit = Window(budget=8_000, format="openai_responses").fit(items)
    assert json.dumps(list(fit.messages)) == json.dumps(items)  # byte-identical: every key, in its order
    read = from_responses_input(items)
    # written anew, the output keeps what it carried besides its screenshot
    fresh = to_responses_input(read, passthrough=False)[1]
    assert fresh[10] == items[10] and fresh[10]["acknowledged_safety_checks"] == [
        {"id": "cu_sc_3", "code": "malicious_instructions"}
    ]
    assert fresh[7]["pending_safety_checks"][0]["id"] == "cu_sc_3"


def test_a_screenshot_output_is_never_cleared_to_a_pointer() -> None:
    """A session with a later plain reply (so the pairs age like any tool turn): old pairs leave whole or stay
    whole; none goes out as a computer_call_output holding a text pointer, which the API refuses."""
    items = _loop(12)
    items.append({"type": "message", "role": "assistant", "id": "msg_1", "status": "completed",
                  "content": [{"type": "output_text", "text": "Booked for 8 pm.", "annotations": []}]})  # fmt: skip
    items.append({"type": "message", "role": "user", "content": "Thanks. Now add a note about a birthday."})
    out = list(Window(budget=4_000, format="openai_responses").fit(items).messages)
    outputs = [i for i in out if i.get("type") == "computer_call_output"]
    assert all(i["output"]["type"] == "computer_screenshot" for i in outputs)
    assert set(_dumped(outputs)) <= set(_dumped(items))
    calls = {i["call_id"] for i in out if i.get("type") == "computer_call"}
    assert calls == {i["call_id"] for i in outputs}
