"""A Gemini ``functionResponse`` the manager cleared or cut, written anew by `Window(format="gemini")`, keeps the
caller's keys that still hold (issue 19, lossless pass-through): a cut response keeps them all and its own object
shape; a pointer keeps what the API needs to deliver it (``id``, ``willContinue``, ``scheduling``). And the newest
response of the turn in progress, alone over the budget, is cut to fit like the other formats' results, not
cleared (issue 19, item 6)."""

from __future__ import annotations

from typing import Any

import pytest

from windowkeeper.integrations import Window

FILLER = "lorem ipsum dolor sit amet consectetur adipiscing elit sed do eiusmod tempor incididunt ut labore "
BUDGET = 3_000
KEYS = {"willContinue": False, "scheduling": "WHEN_IDLE", "x_vendor": {"trace": "t-1"}}


def _response(n: int, response: dict[str, Any]) -> dict[str, Any]:
    return {"functionResponse": {"id": f"fc-{n}", "name": "read_file", "response": response, **KEYS}}


def _call(n: int) -> dict[str, Any]:
    return {
        "role": "model",
        "parts": [{"functionCall": {"id": f"fc-{n}", "name": "read_file", "args": {"path": f"{n}"}}}],
    }


def _responses(sent: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {
        p["functionResponse"]["id"]: p["functionResponse"]
        for c in sent
        for p in c["parts"]
        if "functionResponse" in p and "id" in p["functionResponse"]
    }


def test_a_cleared_response_keeps_the_keys_that_deliver_it_and_no_vendor_key() -> None:
    # the turn in progress alone is over the budget: its older response is cleared to a pointer (in every format)
    items: list[dict[str, Any]] = [{"role": "user", "parts": [{"text": "Read the two files."}]}]
    for n, size in ((0, 300), (1, 20)):
        items.append(_call(n))
        items.append({"role": "user", "parts": [_response(n, {"output": f"file {n}: " + FILLER * size})]})
    result = Window(budget=BUDGET, format="gemini").fit(items)
    sent = _responses(result.messages)
    pointer = sent["fc-0"]
    assert "cleared from context" in str(pointer["response"])
    # the API pairs it with its call and delivers it as the caller's response was; the vendor key described the
    # content the pointer replaced, and a pointer is windowkeeper's own part (as in the other writers)
    assert pointer["willContinue"] is False and pointer["scheduling"] == "WHEN_IDLE"
    assert "x_vendor" not in pointer
    assert result.messages[-1] is items[-1]  # the newest response, whole, is the caller's own content
    assert result.input_tokens <= BUDGET


def _in_progress(response: dict[str, Any], *, line: bool = False) -> list[dict[str, Any]]:
    parts: list[dict[str, Any]] = [_response(1, response)]
    if line:
        parts.append({"text": "Keep the report short."})
    return [
        {"role": "user", "parts": [{"text": "Read the file and report."}]},
        _call(1),
        {"role": "user", "parts": parts},
    ]


BIG = "file 1: " + FILLER * 400  # about 6,800 tokens: more than the whole budget


@pytest.mark.parametrize("key", ["output", "result", "error"])
def test_a_response_of_the_turn_in_progress_is_cut_to_fit_with_every_key_of_the_callers(key: str) -> None:
    items = _in_progress({key: BIG})
    result = Window(budget=BUDGET, format="gemini").fit(items)
    response = _responses(result.messages)["fc-1"]
    assert result.input_tokens <= BUDGET
    # cut, not cleared, under the caller's own key (not the object's JSON text under "result")
    assert list(response["response"]) == [key]
    text = response["response"][key]
    assert "cleared from context" not in text and "truncated" in text
    assert text.startswith("file 1: lorem") and text.endswith(FILLER[-30:])
    assert {k: response[k] for k in KEYS} == KEYS
    assert response["name"] == "read_file"


def test_a_response_beside_a_line_of_the_user_keeps_its_keys_and_the_line_in_its_content() -> None:
    """With a line of the user's beside it, the response is not the last unit of the turn in progress, which the
    manager clears first when that turn alone is over the budget (as an Anthropic ``[tool_result, text]`` turn):
    the pointer keeps its delivery keys and shares its content with the line, as the caller sent them."""
    items = _in_progress({"output": "file 1: " + FILLER * 40}, line=True)
    result = Window(budget=700, format="gemini").fit(items)
    last = result.messages[-1]
    response = last["parts"][0]["functionResponse"]
    assert "cleared from context" in str(response["response"])
    assert response["id"] == "fc-1" and response["willContinue"] is False and response["scheduling"] == "WHEN_IDLE"
    assert last["parts"][1] == {"text": "Keep the report short."}


def test_an_object_response_of_several_keys_is_cut_as_its_json_text_with_the_callers_keys() -> None:
    """Which key's text was cut cannot be told from the cut JSON text: it stays the documented ``result``."""
    items = _in_progress({"content": BIG, "lines": 1})
    result = Window(budget=BUDGET, format="gemini").fit(items)
    response = _responses(result.messages)["fc-1"]
    assert list(response["response"]) == ["result"]
    assert response["response"]["result"].startswith('{"content": "file 1: lorem')
    assert {k: response[k] for k in KEYS} == KEYS


def test_an_unchanged_response_still_passes_through_as_the_callers_own_dict() -> None:
    items = _in_progress({"output": "file 1: short"})
    result = Window(budget=BUDGET, format="gemini").fit(items)
    assert result.messages[-1] is items[-1]


@pytest.mark.parametrize("ids", [True, False])
def test_parallel_responses_in_one_content_each_keep_their_own_keys_when_one_is_cut(ids: bool) -> None:
    """Each response of a content is matched to the caller's part it came from (by id, else as its only part)."""

    def own(n: int, **keys: Any) -> dict[str, Any]:
        return {**({"id": f"fc-{n}"} if ids else {}), "name": f"tool{n}", **keys}

    items = [
        {"role": "user", "parts": [{"text": "Run both."}]},
        {"role": "model", "parts": [{"functionCall": own(n, args={})} for n in (0, 1)]},
        {
            "role": "user",
            "parts": [
                {"functionResponse": own(0, response={"output": "small"}, scheduling="SILENT", x_vendor=0)},
                {"functionResponse": own(1, response={"output": BIG}, scheduling="INTERRUPT", x_vendor=1)},
            ],
        },
    ]
    result = Window(budget=BUDGET, format="gemini").fit(items)
    small, cut = (p["functionResponse"] for p in result.messages[-1]["parts"])
    assert small == items[-1]["parts"][0]["functionResponse"]
    assert "truncated" in cut["response"]["output"]
    assert (cut["scheduling"], cut["x_vendor"], "id" in cut) == ("INTERRUPT", 1, ids)
    assert result.input_tokens <= BUDGET
