"""An Anthropic turn windowkeeper changed in part keeps the caller's top-level keys (issue 19).

A user turn ``[tool_result, text]`` is read as two messages (the result answers its call, the text is the user's);
when one of them changed (the result cleared to a pointer, or gone with its call) the turn was written anew from
its blocks alone, without the keys of the caller's turn next to ``role`` and ``content`` (a proxy's ``x_meta``),
and without saying so. Turns windowkeeper did not change pass through as they came.
"""

from __future__ import annotations

import warnings
from typing import Any

import pytest

from windowkeeper.blocks import ToolResultBlock
from windowkeeper.integrations import Window
from windowkeeper.llm.formats.registry import get_format


def _output(n: int) -> str:
    return "\n".join(f"[{n}.{i}] line of output checksum {(n * 31 + i) % 997}" for i in range(60))


def _names(turn: dict[str, Any]) -> set[str]:
    content = turn["content"]
    return {b.get("tool_use_id") or b.get("text") or "" for b in content} - {""} if isinstance(content, list) else set()


def test_window_keeps_the_keys_of_an_anthropic_turn_it_changed() -> None:
    items: list[dict[str, Any]] = [{"role": "user", "content": "Audit everything."}]
    window = Window(budget=2_500, format="anthropic", prompt_cache=False)
    changed = 0
    for n in range(1, 9):
        call = {"type": "tool_use", "id": f"toolu_{n}", "name": "run", "input": {"n": n}}
        items.append({"role": "assistant", "content": [{"type": "text", "text": f"step {n}"}, call], "x_a": n})
        blocks: list[dict[str, Any]] = [{"type": "tool_result", "tool_use_id": f"toolu_{n}", "content": _output(n)}]
        if n % 2:
            blocks.append({"type": "text", "text": f"note {n}"})
        items.append({"role": "user", "content": blocks, "x_meta": {"n": n}})
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # nothing of the caller's is lost, so nothing is said
            sent = list(window.fit(items).messages)
        for turn in sent:
            if turn in items or not _names(turn):
                continue
            client = next(i for i in items if i["role"] == turn["role"] and _names(i) & _names(turn))
            changed += 1
            assert {k: v for k, v in turn.items() if k != "content"} == {
                k: v for k, v in client.items() if k != "content"
            }
    assert changed > 3


def test_a_split_turn_written_anew_keeps_its_keys_through_the_format_object() -> None:
    fmt = get_format("anthropic")
    turns: list[dict[str, Any]] = [
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_1", "name": "f", "input": {}}]},
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "toolu_1", "content": "long"},
                {"type": "text", "text": "ok?"},
            ],
            "x_meta": {"trace": 1},
        },
    ]
    read = fmt.read(turns)
    assert fmt.write_plain(read) == turns
    tool = read[2]
    cleared = [*read[:2], tool.with_content([ToolResultBlock(call_id="toolu_1", output="[cleared]")]), *read[3:]]
    out = fmt.write_plain(cleared)
    assert out[2]["x_meta"] == {"trace": 1}
    assert out[2]["content"][1] == {"type": "text", "text": "ok?"}


SEARCH = {
    "type": "search_result",
    "source": "https://kb.test/1",
    "title": "kb",
    "content": [{"type": "text", "text": "kb text"}],
    "citations": {"enabled": True},
}
SHOT = {
    "type": "image",
    "source": {"type": "url", "url": "https://x.test/s.png"},
    "cache_control": {"type": "ephemeral"},
}


def test_an_anthropic_tool_result_cut_to_fit_keeps_its_keys_and_parts_as_the_caller_sent_them() -> None:
    """A result larger than the budget in the turn in progress is cut in its text; its ``search_result`` went out as
    ``[unknown search_result] {...}`` text, and the block lost ``is_error`` and its vendor key, its image the
    caller's ``cache_control``."""
    log = "\n".join(f"line {i} of the audit log" for i in range(3000))
    result = {
        "type": "tool_result",
        "tool_use_id": "toolu_1",
        "content": [{"type": "text", "text": log}, SEARCH, SHOT],
        "is_error": False,
        "x_b": 1,
    }
    items: list[dict[str, Any]] = [
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_1", "name": "f", "input": {}}]},
        {"role": "user", "content": [result], "x_r": 1},
    ]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        sent = list(Window(budget=4_000, format="anthropic", prompt_cache=False).fit(items).messages)
    turn = sent[-1]
    assert turn["x_r"] == 1
    (block,) = turn["content"]
    assert "[truncated " in block["content"][0]["text"]
    assert "[unknown " not in str(block)
    assert {k: v for k, v in block.items() if k != "content"} == {k: v for k, v in result.items() if k != "content"}
    assert block["content"][1:] == [SEARCH, SHOT]


LOG = "ERROR something failed at line 42\n" * 2000
CUT_TURNS: dict[str, dict[str, Any]] = {
    "openai_chat": {
        "role": "user",
        "content": [{"type": "text", "text": LOG}, {"type": "image_url", "image_url": {"url": "https://x.test/s.png"}}],
        "name": "bob",
        "x_u": 1,
    },
    "openai_responses": {
        "type": "message",
        "role": "user",
        "id": "msg_1",
        "status": "completed",
        "content": [{"type": "input_text", "text": LOG}, {"type": "input_image", "file_id": "file-1", "detail": "low"}],
        "x_u": 1,
    },
    "gemini": {
        "role": "user",
        "parts": [{"text": LOG}, {"fileData": {"fileUri": "https://x.test/f", "mimeType": "image/png"}}],
        "x_u": 1,
    },
}


@pytest.mark.parametrize("fmt", sorted(CUT_TURNS))
def test_a_turn_cut_to_fit_keeps_the_keys_of_the_callers_item(fmt: str) -> None:
    """A user turn larger than the budget is cut in its text; written anew, it lost the keys of the caller's item
    the reader does not model (a vendor key; a Responses message's ``id`` and ``status``), with no warning."""
    turn = CUT_TURNS[fmt]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        (sent,) = Window(budget=4_000, format=fmt, prompt_cache=False).fit([turn]).messages
    key = "parts" if fmt == "gemini" else "content"
    assert "[truncated " in str(sent[key][0])
    assert {k: v for k, v in sent.items() if k != key} == {k: v for k, v in turn.items() if k != key}
    assert sent[key][1] == turn[key][1]


def test_a_gemini_content_written_anew_keeps_its_keys() -> None:
    """A Gemini content ``[functionResponse, text]`` whose response was cleared lost the caller's content keys."""
    fmt = get_format("gemini")
    contents: list[dict[str, Any]] = [
        {"role": "user", "parts": [{"text": "go"}]},
        {"role": "model", "parts": [{"functionCall": {"id": "fc-1", "name": "f", "args": {}}}]},
        {
            "role": "user",
            "parts": [
                {"functionResponse": {"id": "fc-1", "name": "f", "response": {"output": "long"}}},
                {"text": "ok?"},
            ],
            "x_c": {"trace": 1},
        },
    ]
    read = fmt.read(contents)
    assert fmt.write_plain(read) == contents
    tool = read[2]
    cleared = [*read[:2], tool.with_content([ToolResultBlock(call_id="fc-1", output="[cleared]")]), *read[3:]]
    out = fmt.write_plain(cleared)
    assert out[2]["x_c"] == {"trace": 1}
    assert out[2]["parts"][1] == {"text": "ok?"}


REFUSAL = {"role": "assistant", "content": None, "refusal": "I can't identify people."}


def test_a_chat_refusal_is_what_the_model_said_in_every_format() -> None:
    """A Chat refusal (``content: null``) was kept beside the message, not in it: written in another format it
    was gone without a word (an empty assistant turn, which Anthropic refuses), and the window did not count it."""
    from windowkeeper.llm.formats import from_openai_chat, to_openai_chat
    from windowkeeper.llm.formats.registry import convert

    items = [{"role": "user", "content": "Who is this?"}, REFUSAL]
    assert to_openai_chat(from_openai_chat(items)) == items
    assert from_openai_chat(items)[1].text() == REFUSAL["refusal"]
    for target in ("openai_responses", "anthropic", "gemini", "langchain"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            out = convert(items, "openai_chat", target)
        assert REFUSAL["refusal"] in str(out[-1]), target


def test_an_anthropic_user_turn_cut_to_fit_keeps_its_other_blocks_as_sent() -> None:
    """A pasted log too large for the budget is cut in its text; written anew, the turn's ``search_result`` went
    out as ``[unknown search_result] {...}`` text and its question without its ``cache_control``."""
    question = {"type": "text", "text": "what now?", "cache_control": {"type": "ephemeral"}}
    turn = {"role": "user", "content": [{"type": "text", "text": LOG}, SEARCH, question], "x_u": 1}
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        (sent,) = Window(budget=4_000, format="anthropic", prompt_cache=False).fit([turn]).messages
    assert "[truncated " in sent["content"][0]["text"]
    assert sent["content"][1:] == [SEARCH, question]
    assert sent["x_u"] == 1
