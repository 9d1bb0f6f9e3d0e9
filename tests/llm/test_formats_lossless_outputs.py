"""What a Responses image's ``detail`` and a tool output windowkeeper cut to fit keep of the caller's (issue 19).

The Responses reader read an ``input_image`` without its ``detail``, so every image written anew went out as
``"auto"`` (up to ~1,500 tokens where the caller asked for ``"low"``, ~85): a tool output cut to fit, a message
converted by the public functions. And a Chat tool message or a Responses function output whose content is a list
holding a part no reader models went out, once cut to fit, with that part as ``[unknown x] {...}`` text and without
the item's own keys.
"""

from __future__ import annotations

import json
import warnings
from typing import Any

import pytest

from windowkeeper.blocks import ToolResultBlock
from windowkeeper.integrations import Window
from windowkeeper.llm.formats import from_responses_input, to_responses_input
from windowkeeper.llm.formats.registry import get_format

from .sdk_types import sdk_problems

IMAGE_HIGH = {"type": "input_image", "image_url": "https://x.test/a.png", "detail": "high"}
IMAGE_FILE = {"type": "input_image", "file_id": "file-1", "detail": "low"}
IMAGE_DATA = {"type": "input_image", "image_url": "data:image/png;base64,iVBORw0KGgo", "detail": "low"}


def test_responses_images_keep_their_detail_through_the_public_round_trip() -> None:
    items = [
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "see"}, IMAGE_HIGH, IMAGE_FILE]},
        {"type": "message", "role": "user", "content": [IMAGE_DATA]},
    ]
    assert to_responses_input(from_responses_input(items))[1] == items


def test_an_image_without_a_detail_is_written_with_the_default_the_sdk_requires() -> None:
    items = [{"type": "message", "role": "user", "content": [{"type": "input_image", "file_id": "file-2"}]}]
    written = to_responses_input(from_responses_input(items), passthrough=False)[1]
    assert written[0]["content"] == [{"type": "input_image", "file_id": "file-2", "detail": "auto"}]


def test_a_responses_tool_output_changed_keeps_its_images_detail() -> None:
    fmt = get_format("openai_responses")
    items: list[dict[str, Any]] = [
        {"type": "function_call", "call_id": "c1", "name": "shot", "arguments": "{}"},
        {
            "type": "function_call_output",
            "call_id": "c1",
            "output": [{"type": "input_text", "text": "x" * 50}, IMAGE_HIGH],
        },
    ]
    read = fmt.read(items)
    tool = read[1]
    changed = [read[0], tool.with_content([ToolResultBlock(call_id="c1", output="cut"), *tool.content[1:]])]
    out = fmt.write_plain(changed)
    assert out[1]["output"][1] == IMAGE_HIGH


def _output(n: int) -> str:
    return "\n".join(f"[{n}.{i}] line of output checksum {(n * 31 + i) % 997}" for i in range(60))


def _cut_run(fmt: str) -> list[tuple[dict[str, Any], list[Any]]]:
    """A session whose fourth tool output is larger than the budget, its content a list with a part no reader
    models: ``(client item, what Window sent for it)`` for each output sent otherwise than the client sent it."""
    blob = {"type": "x_blob", "payload": {"k": 4}}
    items: list[dict[str, Any]] = [{"role": "user", "content": "Audit everything."}]
    window = Window(budget=4_000, format=fmt, prompt_cache=False)
    seen: list[tuple[dict[str, Any], list[Any]]] = []
    for n in range(1, 6):
        text = _output(n) * (8 if n == 4 else 1)
        if fmt == "openai_chat":
            call = {"id": f"call_{n}", "type": "function", "function": {"name": "run", "arguments": "{}"}}
            items.append({"role": "assistant", "content": None, "tool_calls": [call]})
            parts = [{"type": "text", "text": text}, {**blob, "payload": {"k": n}}]
            items.append({"role": "tool", "tool_call_id": f"call_{n}", "content": parts, "x_tool": n})
        else:
            items.append({"type": "function_call", "call_id": f"call_{n}", "name": "run", "arguments": "{}"})
            parts = [{"type": "input_text", "text": text}, {**blob, "payload": {"k": n}}, IMAGE_FILE]
            output = {"type": "function_call_output", "call_id": f"call_{n}", "output": parts}
            items.append({**output, "id": f"fco_{n}", "status": "completed", "x_tool": n})
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            sent = list(window.fit(items).messages)
        for item in sent:
            call_id = item.get("tool_call_id", item.get("call_id"))
            if call_id is None or item in items or "cleared" in json.dumps(item):
                continue
            outputs = (i for i in items if i.get("role") == "tool" or i.get("type") == "function_call_output")
            client = next(i for i in outputs if i.get("tool_call_id", i.get("call_id")) == call_id)
            seen.append((client, item))
        items.append({"role": "assistant", "content": f"done {n}"})
    return seen


@pytest.mark.parametrize("fmt", ["openai_chat", "openai_responses"])
def test_a_tool_output_cut_to_fit_keeps_its_keys_and_unknown_parts_in_their_own_shape(fmt: str) -> None:
    seen = _cut_run(fmt)
    assert seen  # the large output was cut to fit
    key = "content" if fmt == "openai_chat" else "output"
    for client, sent in seen:
        assert "[truncated " in json.dumps(sent)
        assert "[unknown " not in json.dumps(sent)  # no part of the client's became text
        assert {k: v for k, v in sent.items() if k != key} == {k: v for k, v in client.items() if k != key}
        parts = sent[key]
        assert [p for p in parts if p.get("type") not in ("text", "input_text")] == [
            p for p in client[key] if p.get("type") not in ("text", "input_text")
        ]


def test_a_responses_output_cut_to_fit_validates_against_the_sdk_type_but_for_the_callers_unknown_part() -> None:
    from openai.types.responses.response_input_item_param import FunctionCallOutput

    for client, sent in _cut_run("openai_responses"):
        own = {**sent, "output": [p for p in sent["output"] if p.get("type") != "x_blob"]}
        own = {k: v for k, v in own.items() if k != "x_tool"}
        assert sdk_problems([own], FunctionCallOutput) == [], client["call_id"]


BLOB = {"type": "x_blob", "payload": {"k": 1, "note": "a part no reader models"}}


def _stand_in(part: Any) -> str:
    from windowkeeper.llm.formats._common import unknown_block

    return unknown_block(str(part["type"]), part).text


def test_a_part_whose_text_the_cut_took_out_leaves_whole_with_a_warning_naming_its_type() -> None:
    from windowkeeper.llm.formats._source import own_parts_in

    own = [{"type": "text", "text": "head " * 20}, BLOB, {"type": "text", "text": "tail " * 20}]
    stand_in = _stand_in(BLOB)
    marker = "\n… [truncated 310 tokens] …\n"
    known = frozenset({"text"})
    # the cut fell inside the part's text: a piece of it before the marker, another after it
    cut = "head " * 20 + stand_in[:30] + marker + stand_in[-20:] + "tail " * 20
    with pytest.warns(UserWarning, match="x_blob"):
        out = own_parts_in(cut, own, known, _stand_in, what="the output of call 'c1'")
    assert out == [{"type": "text", "text": "head " * 20 + marker + "tail " * 20}]
    # the whole part kept by the cut goes back in its own shape, where it was
    whole = "head " * 20 + stand_in + "tail " * 3 + marker + "tail " * 5
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out = own_parts_in(whole, own, known, _stand_in, what="the output of call 'c1'")
    assert out == [
        {"type": "text", "text": "head " * 20},
        BLOB,
        {"type": "text", "text": "tail " * 3 + marker + "tail " * 5},
    ]


@pytest.mark.parametrize("fmt", ["openai_chat", "openai_responses", "anthropic"])
def test_a_tool_output_of_text_parts_cut_to_fit_stays_a_list_of_parts(fmt: str) -> None:
    """An output the caller sent as a list of text parts went out, once cut, as a string: another shape than the
    caller's for the one item windowkeeper changed."""
    log = "\n".join(f"line {i} of the audit log" for i in range(3000))
    user: dict[str, Any] = {"role": "user", "content": "go"}
    if fmt == "openai_chat":
        call = {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
        items: list[dict[str, Any]] = [
            user,
            {"role": "assistant", "content": None, "tool_calls": [call]},
            {"role": "tool", "tool_call_id": "c1", "content": [{"type": "text", "text": log}]},
        ]
    elif fmt == "openai_responses":
        items = [
            user,
            {"type": "function_call", "call_id": "c1", "name": "f", "arguments": "{}"},
            {"type": "function_call_output", "call_id": "c1", "output": [{"type": "input_text", "text": log}]},
        ]
    else:
        result = {"type": "tool_result", "tool_use_id": "c1", "content": [{"type": "text", "text": log}]}
        items = [
            user,
            {"role": "assistant", "content": [{"type": "tool_use", "id": "c1", "name": "f", "input": {}}]},
            {"role": "user", "content": [result]},
        ]
    sent = list(Window(budget=4_000, format=fmt, prompt_cache=False).fit(items).messages)[-1]
    output = sent["content"][0]["content"] if fmt == "anthropic" else sent.get("output", sent.get("content"))
    assert isinstance(output, list) and len(output) == 1, output
    assert output[0]["type"] == ("input_text" if fmt == "openai_responses" else "text")
    assert "[truncated " in output[0]["text"]
