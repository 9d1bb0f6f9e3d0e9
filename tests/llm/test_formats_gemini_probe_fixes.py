"""Gemini writer and reader defects a prober found: recall notes split or misplaced, single-part system
instructions dropped, text files attached with the SDK rejected, call ids lost on rewritten responses.

Each test reads plain dicts or real google-genai objects the way a caller passes them and checks what leaves:
what windowkeeper did not change leaves as it came, what it writes is valid for the API (user and model contents
alternate, a call's id answered by its response's id), and nothing of the caller's is dropped.
"""

from __future__ import annotations

import base64
import itertools
import json
from typing import Any

import pytest
from google.genai import types

from windowkeeper.blocks import DocumentBlock, TextBlock, ToolResultBlock
from windowkeeper.integrations import Window
from windowkeeper.llm.formats import from_gemini, to_gemini
from windowkeeper.llm.formats.gemini import GEMINI
from windowkeeper.messages import Message
from windowkeeper.prompt.recall import MARK_KEY, RECALL_MARK

NOTE = "Earlier: the red widget is fine."


def _note_for(question: Message) -> Message:
    """A recall note serving ``question``, as the recall layer makes one."""
    return Message(
        role="user",
        content=[TextBlock(text=NOTE)],
        metadata={MARK_KEY: RECALL_MARK, "serves": str(question.message_id)},
    )


def _roles(contents: list[Any]) -> list[str]:
    return [c.get("role", "user") for c in contents]


def _alternate(contents: list[Any]) -> bool:
    roles = _roles(contents)
    return all(a != b for a, b in itertools.pairwise(roles))


# -- 1. a recall note joins a user content holding function responses and the user's text ----------------------

MIXED: list[dict[str, Any]] = [
    {"role": "user", "parts": [{"text": "Check widget 99."}]},
    {
        "role": "model",
        "parts": [{"functionCall": {"name": "lookup", "args": {"n": 99}, "id": "c99"}, "thoughtSignature": "c2ln"}],
    },
    {
        "role": "user",
        "parts": [
            {"functionResponse": {"name": "lookup", "id": "c99", "response": {"output": "ok"}}},
            {"text": "Thanks. What about the red widget?"},
        ],
        "x_trace": "t1",
    },
]


def test_recall_note_joins_a_user_content_of_function_responses_and_text() -> None:
    read = GEMINI.read(MIXED)
    assert [m.role for m in read] == ["user", "assistant", "tool", "user"]
    out = GEMINI.write_plain([*read[:3], _note_for(read[3]), read[3]])
    assert len(out) == 3 and _alternate(out)
    last = out[-1]
    assert {k: v for k, v in last.items() if k != "parts"} == {"role": "user", "x_trace": "t1"}
    own = MIXED[2]["parts"]
    assert last["parts"] == [own[0], {"text": NOTE}, own[1]]  # the note right before the user's words


def test_recall_note_joins_when_the_function_response_was_rewritten() -> None:
    read = GEMINI.read(MIXED)
    pointer = read[2].with_content([ToolResultBlock(call_id="c99", output="[cleared]", name="lookup")])
    out = GEMINI.write_plain([*read[:2], pointer, _note_for(read[3]), read[3]])
    assert len(out) == 3 and _alternate(out)
    parts = out[-1]["parts"]
    assert parts[0]["functionResponse"]["id"] == "c99"
    assert parts[1:] == [{"text": NOTE}, MIXED[2]["parts"][1]]


def test_recall_note_after_new_function_responses_shares_their_content() -> None:
    read = GEMINI.read(MIXED[:2])
    results = Message.tool_message([ToolResultBlock(call_id="c99", output="ok", name="lookup")])
    question = Message.text_message("And the red widget?")
    out = to_gemini([*read, results, _note_for(question), question], passthrough=True)[1]
    assert len(out) == 3 and _alternate(out)
    assert [next(iter(p)) for p in out[-1]["parts"]] == ["functionResponse", "text", "text"]


# -- 2. a recall note joins a user content that has no role -----------------------------------------------------


def test_recall_note_joins_a_user_content_without_a_role() -> None:
    items: list[dict[str, Any]] = [
        {"parts": [{"text": "Tell me about the red widget."}]},
        {"role": "model", "parts": [{"text": "It is fine."}]},
        {"parts": [{"text": "What did you say about it?"}], "x_tag": 1},
    ]
    read = GEMINI.read(items)
    out = GEMINI.write_plain([*read[:2], _note_for(read[2]), read[2]])
    assert len(out) == 3 and _alternate(out)
    assert out[:2] == items[:2]
    assert out[2] == {"parts": [{"text": NOTE}, {"text": "What did you say about it?"}], "x_tag": 1}


# -- 3. a system instruction given as one part (or a list of parts) is read and written back ----------------------


@pytest.mark.parametrize(
    "system",
    [
        types.Part(text="You are a pirate."),
        {"text": "You are a pirate."},
        ["You are a pirate."],
        [types.Part(text="You are a pirate.")],
    ],
    ids=["Part", "part-dict", "list-of-str", "list-of-Part"],
)
def test_a_single_part_system_instruction_is_kept(system: Any) -> None:
    from google.genai import _transformers as t

    assert GEMINI.read_system(system) == "You are a pirate."
    fit = Window(budget=100_000, format="gemini").fit([{"role": "user", "parts": [{"text": "hi"}]}], system=system)
    assert fit.system is not None
    sent = t.t_content(fit.system)  # what the SDK would send for it
    assert [p.text for p in sent.parts or []] == ["You are a pirate."]


def test_a_single_part_system_instruction_takes_the_summary_after_it() -> None:
    _, system = GEMINI.write("You are a pirate.\n\nSUMMARY", [], system_source=types.Part(text="You are a pirate."))
    assert system == {"parts": [{"text": "You are a pirate."}, {"text": "SUMMARY"}]}
    types.Content.model_validate(system)
    _, system = GEMINI.write("a\n\nb\n\nSUMMARY", [], system_source=["a", {"text": "b"}])
    assert system == {"parts": [{"text": "a"}, {"text": "b"}, {"text": "SUMMARY"}]}


def test_from_gemini_reads_a_part_shaped_system_instruction() -> None:
    out = from_gemini({"text": "Be brief."}, [{"role": "user", "parts": [{"text": "hi"}]}])
    assert [(m.role, m.text()) for m in out] == [("system", "Be brief."), ("user", "hi")]


# -- 4. text/plain inlineData: URL-safe base64 (SDK objects) and non-UTF-8 bytes ---------------------------------


def test_a_text_file_attached_with_the_sdk_is_accepted() -> None:
    text = "def check(x):\n    return x >= 10 and x <= 99  # in range?\n" * 3
    contents = [
        types.Content(
            role="user",
            parts=[
                types.Part.from_bytes(data=text.encode(), mime_type="text/plain"),
                types.Part(text="Review this file."),
            ],
        )
    ]
    assert "-" in contents[0].model_dump(mode="json")["parts"][0]["inline_data"]["data"]  # URL-safe alphabet
    fit = Window(budget=100_000, format="gemini").fit(contents, system="Be brief.")
    assert len(fit.messages) == 1
    (document, _) = [b for m in from_gemini(None, contents) for b in m.content]
    assert isinstance(document, DocumentBlock) and document.text == text


def test_non_utf8_text_plain_data_is_kept_as_media() -> None:
    data = base64.b64encode("café résumé\n".encode("latin-1")).decode()
    contents = [{"role": "user", "parts": [{"inlineData": {"mimeType": "text/plain", "data": data}}, {"text": "sum"}]}]
    fit = Window(budget=100_000, format="gemini").fit(contents, system="s")
    assert fit.messages == contents
    (message,) = from_gemini(None, contents)
    document = message.content[0]
    assert isinstance(document, DocumentBlock) and document.media is not None
    assert to_gemini([message])[1] == contents  # written anew, the same bytes


def test_sdk_spelling_takes_url_safe_base64() -> None:
    raw = b"ab?>~" * 10
    url = base64.urlsafe_b64encode(raw).decode()
    contents = [{"role": "user", "parts": [{"inlineData": {"mimeType": "image/png", "data": url}}]}]
    (_, written) = to_gemini(from_gemini(None, contents), spelling="sdk")
    assert written[0]["parts"][0]["inline_data"]["data"] == raw


# -- 5. a response written anew carries the id its call was sent with -------------------------------------------


def _turn(t: int, call_id: str) -> list[dict[str, Any]]:
    return [
        {"role": "user", "parts": [{"text": f"turn {t}"}]},
        {"role": "model", "parts": [{"functionCall": {"name": "get", "args": {"t": t}, "id": call_id}}]},
        {"role": "user", "parts": [{"functionResponse": {"name": "get", "id": call_id, "response": {"v": t}}}]},
        {"role": "model", "parts": [{"text": f"ok {t}"}]},
    ]


def _pairs(out: list[Any]) -> list[tuple[Any, Any]]:
    pairs = []
    for before, content in itertools.pairwise(out):
        calls = [p["functionCall"] for p in before["parts"] if "functionCall" in p]
        responses = [p["functionResponse"] for p in content["parts"] if "functionResponse" in p]
        pairs += [(c.get("id"), r.get("id")) for c, r in zip(calls, responses, strict=False)]
    return pairs


def _cleared(read: list[Message]) -> list[Message]:
    out = []
    for m in read:
        if m.role == "tool":
            (block,) = m.tool_result_blocks()
            m = m.with_content([ToolResultBlock(call_id=block.call_id, output="[cleared]", name=block.name)])
        out.append(m)
    return out


@pytest.mark.parametrize(
    "ids", [["call_0_0", "call_1_0"], ["id-0", "id-0"]], ids=["synthesized-looking", "repeated-per-turn"]
)
def test_a_rewritten_response_keeps_its_calls_id(ids: list[str]) -> None:
    items = [*_turn(0, ids[0]), *_turn(1, ids[1])]
    out = GEMINI.write_plain(_cleared(GEMINI.read(items)))
    assert len(out) == len(items)
    assert _pairs(out) == [(ids[0], ids[0]), (ids[1], ids[1])]
    assert json.dumps(out).count("[cleared]") == 2


def test_a_rewritten_model_content_keeps_the_callers_call_id() -> None:
    items = _turn(0, "call_0_0")
    read = GEMINI.read(items)
    call = read[1].tool_call_blocks()[0]
    read[1] = read[1].with_content([TextBlock(text="let me look"), call])
    out = GEMINI.write_plain(read)
    assert out[2] is items[2] or out[2] == items[2]  # the caller's response, with its id
    assert _pairs(out) == [("call_0_0", "call_0_0")]


def test_ids_made_up_when_reading_are_still_not_written() -> None:
    contents = [
        {"role": "model", "parts": [{"functionCall": {"name": "get", "args": {}}}]},
        {"role": "user", "parts": [{"functionResponse": {"name": "get", "response": {"v": 1}}}]},
    ]
    out = to_gemini(_cleared(from_gemini(None, contents)))[1]
    assert _pairs(out) == [(None, None)]


def test_a_result_written_alone_keeps_the_id_it_came_with() -> None:
    read = GEMINI.read(_turn(0, "call_0_0"))
    (content,) = to_gemini([read[2]])[1]  # as `Window.restore` writes a restored result: without its call
    assert content["parts"][0]["functionResponse"]["id"] == "call_0_0"
