"""Each provider's documented message shapes through managed `Window` runs (issue 19's acceptance line).

Rounds of ids, status, annotations (``url_citation``), citations, ``cache_control`` on input blocks, a refusal
with ``content: null``, image ``detail``, a tool error status, Gemini ``thoughtSignature`` and call ids, keys and
part types nobody models, at a budget that trims nothing (the items come back ``==``) and at budgets where older
results are cleared and the turn in progress is cut: every item sent is the caller's own, or one windowkeeper
wrote (a pointer, a summary) that validates against the SDK's request type, or a caller's item windowkeeper
changed, which keeps every key of the caller's and, besides its text, the caller's own parts.
"""

from __future__ import annotations

import json
import warnings
from typing import Any

import pytest

from windowkeeper.integrations import Window

from .sdk_types import sdk_problems
from .test_formats_passthrough import _gemini_problems, _sdk_type


def _output(n: int, lines: int) -> str:
    return "\n".join(f"[{n}.{j}] output line {j} of round {n} checksum {(n * 31 + j) % 997}" for j in range(lines))


def _lines(n: int) -> int:
    return 1500 if n % 4 == 0 else 50  # every fourth result is larger than the budget: cut to fit


def _chat(n: int) -> list[dict[str, Any]]:
    call = {"id": f"call_{n}", "type": "function", "function": {"name": "search", "arguments": json.dumps({"q": n})}}
    image = {"type": "image_url", "image_url": {"url": f"https://x.test/{n}.png", "detail": "low"}}
    citation = {"url": "https://n.test", "title": "N", "start_index": 0, "end_index": 3}
    result = [{"type": "text", "text": _output(n, _lines(n))}, {"type": "x_blob", "k": n}]
    return [
        {"role": "user", "content": [{"type": "text", "text": f"Q{n}: look"}, image], "name": f"al{n}", "x_u": n},
        {"role": "assistant", "content": None, "tool_calls": [call], "x_a": n},
        {"role": "tool", "tool_call_id": f"call_{n}", "content": result, "name": "search", "x_t": n},
        {"role": "assistant", "content": f"A{n}.", "annotations": [{"type": "url_citation", "url_citation": citation}]},
        {"role": "user", "content": f"and refuse {n}"},
        {"role": "assistant", "content": None, "refusal": f"I can't {n}."},
    ]


def _responses(n: int) -> list[dict[str, Any]]:
    citation = {"type": "url_citation", "url": "https://n.test", "title": "N", "start_index": 0, "end_index": 3}
    output = [
        {"type": "input_text", "text": _output(n, _lines(n))},
        {"type": "x_blob", "k": n},
        {"type": "input_image", "file_id": f"file-{n}", "detail": "high"},
    ]
    return [
        {
            "type": "message",
            "role": "user",
            "id": f"msg_u{n}",
            "status": "completed",
            "content": [
                {"type": "input_text", "text": f"Q{n}"},
                {"type": "input_image", "image_url": f"https://x.test/{n}.png", "detail": "low"},
            ],
        },
        {
            "type": "reasoning",
            "id": f"rs_{n}",
            "summary": [{"type": "summary_text", "text": "t"}],
            "encrypted_content": "e",
        },
        {
            "type": "function_call",
            "id": f"fc_{n}",
            "call_id": f"call_{n}",
            "name": "search",
            "arguments": "{}",
            "status": "completed",
        },
        {
            "type": "function_call_output",
            "id": f"fco_{n}",
            "call_id": f"call_{n}",
            "output": output,
            "status": "incomplete",
            "x_o": n,
        },
        {
            "type": "message",
            "role": "assistant",
            "id": f"msg_a{n}",
            "status": "completed",
            "content": [{"type": "output_text", "text": f"A{n}.", "annotations": [citation]}],
        },
        {
            "type": "message",
            "role": "assistant",
            "id": f"msg_r{n}",
            "status": "completed",
            "content": [{"type": "refusal", "refusal": "no"}],
        },
        {"type": "message", "role": "user", "content": f"go on {n}"},
    ]


def _anthropic(n: int) -> list[dict[str, Any]]:
    mark = {"type": "ephemeral"}
    doc = {"type": "document", "source": {"type": "text", "media_type": "text/plain", "data": f"Doc {n}."}}
    cited = {
        "type": "char_location",
        "cited_text": "Doc",
        "document_index": 0,
        "start_char_index": 0,
        "end_char_index": 3,
    }
    search = {
        "type": "search_result",
        "source": f"https://kb.test/{n}",
        "title": "kb",
        "content": [{"type": "text", "text": "kb"}],
    }
    result = {
        "type": "tool_result",
        "tool_use_id": f"toolu_{n}",
        "content": [{"type": "text", "text": _output(n, _lines(n))}, search],
        "is_error": n % 2 == 0,
        "cache_control": mark,
    }
    return [
        {
            "role": "user",
            "content": [
                {**doc, "title": "D", "citations": {"enabled": True}, "cache_control": mark},
                {"type": "text", "text": f"Q{n}", "cache_control": mark},
            ],
            "x_u": n,
        },
        {
            "role": "assistant",
            "content": [
                {"type": "thinking", "thinking": "hmm", "signature": f"sig{n}"},
                {"type": "text", "text": f"Looking {n}.", "citations": [cited]},
                {"type": "tool_use", "id": f"toolu_{n}", "name": "search", "input": {"q": n}},
            ],
        },
        {"role": "user", "content": [result], "x_r": n},
        {"role": "assistant", "content": [{"type": "text", "text": f"A{n}."}]},
    ]


def _gemini(n: int) -> list[dict[str, Any]]:
    image = {
        "fileData": {"fileUri": f"https://x.test/f{n}", "mimeType": "image/png"},
        "mediaResolution": {"level": "MEDIA_RESOLUTION_LOW"},
    }
    call = {"functionCall": {"id": f"fc-{n}", "name": "search", "args": {"q": n}}, "thoughtSignature": "c2ln"}
    response = {"functionResponse": {"id": f"fc-{n}", "name": "search", "response": {"output": _output(n, _lines(n))}}}
    return [
        {"role": "user", "parts": [{"text": f"Q{n}"}, image], "x_c": n},
        {"role": "model", "parts": [{"text": "plan", "thought": True, "thoughtSignature": "c2ln"}, call]},
        {"role": "user", "parts": [response, {"executableCode": {"language": "PYTHON", "code": "print(1)"}}]},
        {"role": "model", "parts": [{"text": f"A{n}."}]},
    ]


ROUNDS = {"openai_chat": _chat, "openai_responses": _responses, "anthropic": _anthropic, "gemini": _gemini}
MADE = ("tool result cleared", "Summary of the earlier", "[truncated ", "Recalled context", "earlier assistant")
"""What windowkeeper writes itself: a pointer, a summary, a text cut to fit, a recall note, an older reply cut."""


def _caller_keys(value: Any) -> Any:
    """``value`` without the keys and parts only a caller puts there (``x_*``), for the SDK's type check."""
    if isinstance(value, dict):
        return {k: _caller_keys(v) for k, v in value.items() if not k.startswith("x_")}
    if isinstance(value, list):
        return [_caller_keys(v) for v in value if not (isinstance(v, dict) and str(v.get("type", "")).startswith("x_"))]
    return value


def _parts(item: dict[str, Any]) -> list[Any]:
    value = item.get("parts", item.get("content", item.get("output")))
    if (
        isinstance(value, list)
        and len(value) == 1
        and isinstance(value[0], dict)
        and value[0].get("type") == "tool_result"
    ):
        value = value[0]["content"]
    return value if isinstance(value, list) else []


def _names(item: dict[str, Any]) -> set[str]:
    """What names an item among the caller's: its id, call id, role and type, its results' call ids."""
    names = {f"{k}={item[k]}" for k in ("id", "call_id", "tool_call_id", "type") if isinstance(item.get(k), str)}
    for part in item.get("content", []) if isinstance(item.get("content"), list) else []:
        if isinstance(part, dict) and part.get("type") == "tool_result":
            names.add(f"result={part['tool_use_id']}")
    return names


def _is_result(item: dict[str, Any]) -> bool:
    parts = item.get("parts", item.get("content"))
    first = parts[0] if isinstance(parts, list) and parts else None
    return (
        item.get("role") == "tool"
        or item.get("type") == "function_call_output"
        or (isinstance(first, dict) and (first.get("type") == "tool_result" or "functionResponse" in first))
    )


def _check(fmt: str, n: int, item: dict[str, Any], items: list[dict[str, Any]]) -> str:
    """What ``item`` (sent, and none of the caller's items) is: ``made`` by windowkeeper, a caller's item ``cut`` to
    fit or ``changed`` otherwise; fails the test when it is none of these or breaks the SDK's type."""
    text = json.dumps(item)
    theirs = [p for i in items for p in _parts(i)]
    if not any(mark in text for mark in MADE) and not all(p in theirs for p in _parts(item)):
        pytest.fail(f"round {n}: an item neither the caller's nor windowkeeper's: {text[:300]}")
    names = _names(item)
    client = next((i for i in items if names and _names(i) >= names and i.get("role") == item.get("role")), None)
    clean = _caller_keys(item)
    problems = _gemini_problems([clean]) if fmt == "gemini" else sdk_problems([clean], _sdk_type(fmt))
    # a key the caller's own item holds (a Chat tool message's ``name``) is the caller's to send
    problems = [p for p in problems if not (client and p.removeprefix("item 0: unknown key ") in client)]
    assert problems == [], (n, problems, text[:300])
    if client is None:
        return "made"
    if "[truncated " not in text:
        return "changed"
    # cut to fit: every key of the caller's, and its parts besides the text as the caller sent them
    assert set(client) <= set(item), (n, sorted(set(client) - set(item)))
    assert [p for p in _parts(item) if not _text(p)] == [p for p in _parts(client) if not _text(p)], (n, text[-400:])
    return "cut"


def _text(part: Any) -> bool:
    return isinstance(part, dict) and "text" in part and len(part) <= 2


@pytest.mark.parametrize("fmt", sorted(ROUNDS))
def test_documented_shapes_pass_through_unchanged_at_a_budget_that_trims_nothing(fmt: str) -> None:
    items = [item for n in range(1, 7) for item in ROUNDS[fmt](n)]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert list(Window(budget=1_000_000, format=fmt, prompt_cache=False).fit(items).messages) == items


@pytest.mark.parametrize("budget", [6_000, 14_000])
@pytest.mark.parametrize("fmt", sorted(ROUNDS))
def test_documented_shapes_through_a_managed_run(fmt: str, budget: int) -> None:
    window = Window(budget=budget, format=fmt, prompt_cache=False)
    items: list[dict[str, Any]] = []
    cut = 0
    for n in range(1, 9):
        rounds = ROUNDS[fmt](n)
        at = next(k for k, item in enumerate(rounds) if _is_result(item)) + 1
        for part in (rounds[:at], rounds[at:]):  # a call with its result the last item (in progress), then the rest
            items += part
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # an older turn cut whole may say so; not what is tested
                sent = list(window.fit(items).messages)
            for item in sent:
                if item not in items:
                    cut += _check(fmt, n, item, items) == "cut"
    # the large results were cut to fit while in progress (a Gemini response is JSON, cleared rather than cut)
    assert cut > 0 or fmt == "gemini"
