"""Calls beyond JSON function tools: custom (freeform) tools and Chat Completions' legacy ``function_call``.

In Chat Completions a custom tool call (``{"type": "custom", "custom": {"name", "input"}}``) made the reader refuse
the whole list ("'function' must be an object"), so an agent with a freeform tool could not be managed at all. A
legacy ``function_call`` and the ``function`` message answering it were read as an assistant text and a user turn:
a trim could keep the answer without its call, and recall wrote its note into the function's output as if it were
the user's turn. In Responses, ``custom_tool_call`` and ``custom_tool_call_output`` items were unknown kinds that
joined the assistant turn: a long turn of them was one message, and over the budget it came out as one assistant
message of JSON text instead of the calls and their outputs. All are read as calls and results now, and written
back in their own shapes.
"""

from __future__ import annotations

import base64
import json
from typing import Any

from windowkeeper import Window
from windowkeeper.blocks import ToolCallBlock, ToolResultBlock
from windowkeeper.llm.formats import (
    from_openai_chat,
    from_responses_input,
    to_anthropic,
    to_openai_chat,
    to_responses_input,
)

from .sdk_types import sdk_problems

LOG = "collected 212 items; 3 failed in tests/test_ledger.py\n" * 60


def _session(turns: int) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = [{"role": "system", "content": "You maintain the ledger service."}]
    for t in range(turns):
        if t % 2:
            items += [
                {"role": "user", "content": f"Turn {t}: look up account {t}."},
                {
                    "role": "assistant",
                    "content": None,
                    "function_call": {"name": "lookup", "arguments": f'{{"n": {t}}}'},
                },
                {"role": "function", "name": "lookup", "content": LOG},
                {"role": "assistant", "content": f"Account {t} has 3 failing tests."},
            ]
        else:
            items += [
                {"role": "user", "content": f"Turn {t}: patch module {t}."},
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {"id": f"call_{t}", "type": "custom", "custom": {"name": "apply_patch", "input": f"*** {t}"}}
                    ],
                },
                {"role": "tool", "tool_call_id": f"call_{t}", "content": LOG},
                {"role": "assistant", "content": f"Module {t} patched."},
            ]
    return items


def test_both_are_read_as_calls_and_results_and_written_back_unchanged() -> None:
    items = _session(2)
    messages = from_openai_chat(items)
    custom, legacy = messages[2].content[0], messages[6].content[0]
    assert isinstance(custom, ToolCallBlock) and (custom.name, custom.args, custom.tool_type) == (
        "apply_patch",
        {"input": "*** 0"},
        "custom",
    )
    assert isinstance(legacy, ToolCallBlock) and (legacy.name, legacy.args) == ("lookup", {"n": 1})
    answer = messages[7].content[0]
    assert messages[7].role == "tool" and isinstance(answer, ToolResultBlock) and answer.call_id == legacy.id
    assert to_openai_chat(messages) == items
    from openai.types.chat import ChatCompletionMessageParam

    assert sdk_problems(to_openai_chat(messages), ChatCompletionMessageParam) == []
    # another format gets an ordinary call with the custom tool's text as its one argument
    _, anthropic = to_anthropic(messages, passthrough=False)
    uses = [b for m in anthropic for b in m["content"] if isinstance(b, dict) and b.get("type") == "tool_use"]
    assert [u["input"] for u in uses] == [{"input": "*** 0"}, {"n": 1}]


def test_a_function_message_with_nothing_before_it_stays_an_unknown_turn() -> None:
    first = from_openai_chat([{"role": "function", "name": "lookup", "content": "x"}])[0]
    assert first.role == "user" and first.text().startswith("[unknown role function]")


def test_a_managed_session_never_separates_an_answer_from_its_call() -> None:
    from openai.types.chat import ChatCompletionMessageParam

    items = _session(16)
    sources = {json.dumps(i, sort_keys=True) for i in items}
    window: Window[Any, Any] = Window(budget=2_500, format="openai_chat")
    rewritten = 0
    for k in range(2, len(items) + 1):
        out = list(window.fit(items[:k]).messages)
        assert sdk_problems(out, ChatCompletionMessageParam) == [], k
        ids = {c["id"] for m in out for c in m.get("tool_calls") or []}
        for j, m in enumerate(out):
            if m["role"] == "tool":
                assert m["tool_call_id"] in ids, (k, m)
            if m["role"] == "function":
                assert j and out[j - 1].get("function_call", {}).get("name") == m["name"], (k, m)
            # only what windowkeeper makes is new: a summary, a recall note, a shortened result
            if json.dumps(m, sort_keys=True) not in sources:
                rewritten += 1
                assert m["role"] in ("system", "tool", "function") or "Recalled context" in str(m["content"]), m
        assert not any("Recalled context" in str(m.get("content")) for m in out if m["role"] == "function")
    assert rewritten > 0


def test_a_long_turn_of_custom_tool_items_keeps_its_calls_and_clears_old_outputs() -> None:
    from openai.types.responses import ResponseInputItemParam

    items: list[dict[str, Any]] = [{"type": "message", "role": "user", "content": "Fix every module."}]
    for t in range(24):
        items.append({"type": "custom_tool_call", "call_id": f"ct{t}", "name": "apply_patch", "input": f"*** {t}"})
        items.append({"type": "custom_tool_call_output", "call_id": f"ct{t}", "output": LOG})
    messages = from_responses_input(items)
    assert [m.role for m in messages[:3]] == ["user", "assistant", "tool"]
    assert messages[2].metadata["openai_item"] == "custom_tool_call_output"
    sources = [json.dumps(i, sort_keys=True) for i in items]
    out = list(Window(budget=8_000, format="openai_responses").fit(items).messages)
    assert sdk_problems(out, ResponseInputItemParam) == []
    assert [i["type"] for i in out[1:]] == [i["type"] for i in items[1:]]  # every call and output, in order
    changed = [i for i in out if json.dumps(i, sort_keys=True) not in sources]
    assert changed and all(i["type"] == "custom_tool_call_output" for i in changed)
    assert all(i["output"].startswith("[tool result cleared") for i in changed)


SHOT = base64.b64encode(bytes(range(256)) * 240).decode()  # an 80 KB screenshot


def _computer_use(fmt: str, turns: int) -> list[dict[str, Any]]:
    """A computer-use run: every tool call returns a screenshot (text and an image) in the format's result."""
    items: list[dict[str, Any]] = [{"role": "user", "content": "Open the settings page and enable dark mode."}]
    for t in range(turns):
        if fmt == "anthropic":
            items.append(
                {
                    "role": "assistant",
                    "content": [
                        {"type": "tool_use", "id": f"tu{t}", "name": "computer", "input": {"action": "screenshot"}}
                    ],
                }
            )
            image = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": SHOT}}
            items.append(
                {
                    "role": "user",
                    "content": [
                        {
                            "type": "tool_result",
                            "tool_use_id": f"tu{t}",
                            "content": [{"type": "text", "text": f"step {t}"}, image],
                        }
                    ],
                }
            )
        else:
            items.append(
                {
                    "type": "function_call",
                    "call_id": f"fc{t}",
                    "name": "computer",
                    "arguments": '{"action": "screenshot"}',
                }
            )
            image = {"type": "input_image", "image_url": f"data:image/png;base64,{SHOT}", "detail": "auto"}
            items.append(
                {
                    "type": "function_call_output",
                    "call_id": f"fc{t}",
                    "output": [{"type": "input_text", "text": f"step {t}"}, image],
                }
            )
    return items


def test_a_screenshot_a_tool_returned_counts_as_an_image_not_as_its_base64() -> None:
    """An image inside a tool result was read as the JSON text of an unknown part: 1 screenshot of 80 KB counted
    as ~55,000 tokens, so any computer-use turn looked far over budget and was cut into text."""
    from anthropic.types import MessageParam
    from openai.types.responses import ResponseInputItemParam

    from windowkeeper.blocks import ImageBlock
    from windowkeeper.llm.formats.registry import get_format
    from windowkeeper.tokens import default_counter

    counter = default_counter()
    for fmt, sdk_type in (("anthropic", MessageParam), ("openai_responses", ResponseInputItemParam)):
        items = _computer_use(fmt, 12)
        read = get_format(fmt).read(items)
        results = [m for m in read if m.role == "tool"]
        assert len(results) == 12 and all(isinstance(m.content[1], ImageBlock) for m in results)
        assert all(counter.count_message(m) < 2_000 for m in results), fmt
        # written anew (no pass-through), the image goes back inside the result
        written = to_anthropic(read)[1] if fmt == "anthropic" else to_responses_input(read)[1]
        assert sdk_problems(written, sdk_type) == [], fmt
        assert SHOT in json.dumps(written[2])
        # managed: the newest screenshots stay whole, older results are cleared; every result keeps its call
        out = list(Window(budget=2_000, format=fmt).fit(items).messages)
        assert sdk_problems(out, sdk_type) == [], fmt
        newest = json.loads(json.dumps(out[-1]).replace(', "cache_control": {"type": "ephemeral"}', ""))
        assert newest == items[-1]  # (the Anthropic writer marks the newest block as a cache breakpoint)
        assert len(json.dumps(out)) < len(json.dumps(items)) / 2  # old screenshots left the view


def test_a_screenshot_inside_an_item_not_modelled_is_priced_as_an_image() -> None:
    """An item of a type no format models (as ``computer_call_output`` was, see test_formats_computer_use) stands as
    a text holding its JSON, and a screenshot's data URI in it was tokenized as text (~55,000 tokens for 80 KB)."""
    from windowkeeper.tokens import default_counter

    items: list[dict[str, Any]] = [{"role": "user", "content": "Open the settings page."}]
    for t in range(10):
        items.append({"type": "remote_screen_call", "call_id": f"rs{t}", "id": f"rsc_{t}", "status": "completed",
                      "action": {"type": "click", "x": 10, "y": 20}})  # fmt: skip
        screenshot = {"type": "screen_capture", "image_url": f"data:image/png;base64,{SHOT}"}
        items.append({"type": "remote_screen_call_output", "call_id": f"rs{t}", "output": screenshot})
    turn = from_responses_input(items)[1]
    tokens = default_counter().count_message(turn)
    assert 10 * 100 < tokens < 10 * 2_000  # ten images and the calls' JSON, not 10 x 55 KB of base64 text
    fit = Window(budget=8_000, format="openai_responses").fit(items)
    assert [json.dumps(i, sort_keys=True) for i in fit.messages] == [json.dumps(i, sort_keys=True) for i in items]


def test_a_gemini_function_response_keeps_the_media_of_its_own_parts() -> None:
    """A function response may carry media in its own ``parts`` (a screenshot): it was not counted at all."""
    from google.genai import types

    from windowkeeper.llm.formats import from_gemini, to_gemini
    from windowkeeper.tokens import default_counter

    screenshot = {"inlineData": {"mimeType": "image/png", "data": SHOT}}
    contents = [
        {"role": "user", "parts": [{"text": "Take a screenshot."}]},
        {"role": "model", "parts": [{"functionCall": {"id": "f1", "name": "computer", "args": {}}}]},
        {"role": "user", "parts": [{"functionResponse": {"id": "f1", "name": "computer", "response": {"ok": True},
                                                         "parts": [screenshot]}}]},
    ]  # fmt: skip
    read = from_gemini(None, contents)
    assert [type(b).__name__ for b in read[2].content] == ["ToolResultBlock", "ImageBlock"]
    assert default_counter().count_message(read[2]) > 100  # the image is priced
    assert to_gemini(read)[1] == contents
    sdk = to_gemini(read, spelling="sdk")[1]
    response = types.Content.model_validate(sdk[2]).parts[0].function_response  # type: ignore[index]
    assert response is not None and response.parts is not None and response.parts[0].inline_data is not None


def test_recall_indexes_a_stand_in_without_the_base64_it_embeds() -> None:
    """Recall indexes what leaves the view; 80 KB of a screenshot's base64 in each item no format models is neither
    searchable nor readable, so the index keeps the item's JSON without the payload."""
    import asyncio

    from windowkeeper.context.budget import TokenBudgetContextManager
    from windowkeeper.context.metrics import thread_key
    from windowkeeper.state import AgentState
    from windowkeeper.tokenizing.media import without_embedded_data

    assert without_embedded_data(f"see data:image/png;base64,{SHOT} here") == "see data:image/png;base64, here"
    items: list[dict[str, Any]] = []
    for t in range(12):
        items.append({"role": "user", "content": f"Step {t}: open the settings page."})
        items.append({"type": "remote_screen_call", "call_id": f"rs{t}", "id": f"rsc_{t}", "status": "completed",
                      "action": {"type": "click", "x": t, "y": 20}})  # fmt: skip
        screenshot = {"type": "screen_capture", "image_url": f"data:image/png;base64,{SHOT}"}
        items.append({"type": "remote_screen_call_output", "call_id": f"rs{t}", "output": screenshot})
    messages = from_responses_input(items)
    manager: TokenBudgetContextManager[AgentState] = TokenBudgetContextManager(3_000, 500, recall=True)
    state = AgentState(context=messages)
    state = asyncio.run(manager.atrim_context(state))
    assert manager.recall is not None
    # the oldest steps left the view or were cleared to pointers: either way their originals are indexed
    view = {v.message_id: v for v in state.context}
    turn = next(m for m in messages if m.role == "assistant" and view.get(m.message_id) is not m)
    manager.recall.flush(thread_key(state), None, 10**9)
    found = manager.recall.index.message_text(thread_key(state), str(turn.message_id))
    assert found is not None and "screen_capture" in found[1] and SHOT[:64] not in found[1]


def test_openai_hosted_tool_calls_are_calls_whose_old_outputs_can_be_cleared() -> None:
    """``local_shell_call`` and ``apply_patch_call`` (OpenAI's own tools, outputs in text) joined the assistant turn
    as unknown kinds: a long agent turn of shell runs was one message whose outputs could not be cleared."""
    from openai.types.responses import ResponseInputItemParam

    items: list[dict[str, Any]] = [{"type": "message", "role": "user", "content": "Fix the failing tests."}]
    for t in range(16):
        if t % 2:
            action = {"type": "exec", "command": ["pytest", "-q"], "env": {}}
            items.append({"type": "local_shell_call", "id": f"lsh_{t}", "call_id": f"ls{t}", "status": "completed",
                          "action": action})  # fmt: skip
            items.append({"type": "local_shell_call_output", "id": f"ls{t}", "output": LOG})
        else:
            operation = {
                "type": "update_file",
                "path": f"src/m{t}.py",
                "diff": f"@@ -1 +1 @@\n-x = {t}\n+x = {t + 1}\n",
            }
            items.append({"type": "apply_patch_call", "id": f"apc_{t}", "call_id": f"ap{t}", "status": "completed",
                          "operation": operation})  # fmt: skip
            items.append({"type": "apply_patch_call_output", "call_id": f"ap{t}", "status": "completed", "output": LOG})
    read = from_responses_input(items)
    assert [m.role for m in read[:4]] == ["user", "assistant", "tool", "assistant"]
    assert read[1].tool_call_blocks()[0].tool_type == "apply_patch_call"
    out = list(Window(budget=6_000, format="openai_responses").fit(items).messages)
    assert sdk_problems(out, ResponseInputItemParam) == []
    sent = [json.dumps(i, sort_keys=True) for i in items]
    assert [i["type"] for i in out[1:]] == [i["type"] for i in items[1:]]  # every call and output, in order
    changed = [i for i in out if json.dumps(i, sort_keys=True) not in sent]
    assert changed and {i["type"] for i in changed} <= {"local_shell_call_output", "apply_patch_call_output"}
    assert all(i["output"].startswith("[tool result cleared") for i in changed)
    # written anew (no pass-through), a call goes back as the item it was
    assert to_responses_input(read)[1][1] == items[1]


def test_a_shell_call_output_is_a_result_whose_outcome_survives_clearing() -> None:
    """``shell_call`` (OpenAI's shell tool): one stdout, stderr and outcome per command. Read as a call and a result
    (text: stdout then stderr); a cleared output keeps the command's outcome."""
    from openai.types.responses import ResponseInputItemParam

    items: list[dict[str, Any]] = [
        {"type": "message", "role": "user", "content": "Run the test suite until it passes."}
    ]
    for t in range(10):
        items.append({"type": "shell_call", "call_id": f"sh{t}", "action": {"commands": ["pytest -q"]},
                      "status": "completed"})  # fmt: skip
        outcome = {"type": "exit", "exit_code": 1 if t < 9 else 0}
        items.append({"type": "shell_call_output", "call_id": f"sh{t}",
                      "output": [{"stdout": LOG, "stderr": "warning: slow test", "outcome": outcome}]})  # fmt: skip
    read = from_responses_input(items)
    result = read[2].tool_result_blocks()[0]
    assert result.status == "error" and str(result.output).endswith("\nwarning: slow test")
    out = list(Window(budget=5_000, format="openai_responses").fit(items).messages)
    assert sdk_problems(out, ResponseInputItemParam) == []
    assert [i["type"] for i in out[1:]] == [i["type"] for i in items[1:]]
    sent = [json.dumps(i, sort_keys=True) for i in items]
    changed = [i for i in out if json.dumps(i, sort_keys=True) not in sent]
    assert changed and all(i["type"] == "shell_call_output" for i in changed)
    assert all(i["output"][0]["outcome"] == {"type": "exit", "exit_code": 1} for i in changed)
    assert all(i["output"][0]["stdout"].startswith("[tool result cleared") for i in changed)


def test_an_apply_patch_output_without_text_is_read() -> None:
    """Its ``output`` is optional: a null one (a status alone) was refused as "must be a string"."""
    items: list[dict[str, Any]] = [
        {"type": "message", "role": "user", "content": "Apply it."},
        {
            "type": "apply_patch_call",
            "call_id": "ap1",
            "status": "completed",
            "operation": {"type": "delete_file", "path": "src/old.py"},
        },
        {"type": "apply_patch_call_output", "call_id": "ap1", "status": "completed", "output": None},
    ]
    result = from_responses_input(items)[2].tool_result_blocks()[0]
    assert (result.call_id, result.output, result.status) == ("ap1", "", "completed")
    out = Window(budget=2_000, format="openai_responses").fit(items).messages
    assert [json.dumps(i, sort_keys=True) for i in out] == [json.dumps(i, sort_keys=True) for i in items]


PNG = base64.b64encode(b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 120).decode()  # a 30 KB generated image
PDF = base64.b64encode(b"%PDF-1.7\n" + bytes(range(256)) * 120).decode()  # a fetched one-page PDF


def test_media_files_embedded_as_bare_base64_in_items_not_modelled_are_priced_as_media() -> None:
    """A Responses ``image_generation_call`` holds its image as a bare base64 ``result``, and an Anthropic
    ``web_fetch_tool_result`` a fetched PDF as a base64 ``source``: both item kinds are not modelled, and their
    stand-ins' base64 was tokenized as text (~27,000 tokens for 30 KB), so one generated image made every request
    look three times over an 8k budget and the rest of the conversation was cut to fit it. A payload whose first
    bytes announce a media file is priced as that media now; any other base64 (an encrypted blob) is still text."""
    from windowkeeper.llm.formats import from_anthropic
    from windowkeeper.tokenizing.media import without_embedded_data
    from windowkeeper.tokens import default_counter

    counter = default_counter()
    items: list[dict[str, Any]] = [{"role": "user", "content": "Draw a lighthouse at dusk."}]
    for t in range(4):
        items.append({"type": "image_generation_call", "id": f"ig_{t}", "status": "completed", "result": PNG})
        items.append({"type": "message", "role": "user", "content": f"Warmer colours, take {t + 2}."})
    turn = from_responses_input(items)[1]
    assert 85 <= counter.count_message(turn) < 2_000  # one image, not 30 KB of base64 text
    fit = Window(budget=8_000, format="openai_responses").fit(items)
    assert fit.messages == items  # four images fit: nothing is cut to make room for phantom tokens

    fetched = {"type": "document", "source": {"type": "base64", "media_type": "application/pdf", "data": PDF}}
    page = {"type": "web_fetch_result", "url": "https://example.test/a.pdf", "content": fetched}
    result = {"type": "web_fetch_tool_result", "tool_use_id": "srvtoolu_1", "content": page}
    reply = from_anthropic(None, [{"role": "user", "content": "Read it."}, {"role": "assistant", "content": [result]}])
    assert 1_000 < counter.count_message(reply[1]) < 2_000  # one page of a PDF

    sealed = base64.b64encode(bytes(range(256)) * 12).decode()  # no file signature: an encrypted blob stays text
    blob = {"type": "image_generation_call", "id": "ig_x", "status": "completed", "result": sealed}
    assert counter.count_message(from_responses_input([blob])[0]) > len(sealed) // 4
    stand_in = from_responses_input([items[1]])[0].text()
    assert PNG[:64] in stand_in and PNG[:64] not in without_embedded_data(stand_in)
