"""`Window`: a provider-format list in, the managed list out, for every format."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from windowkeeper import AgentState, ExtractiveSummarizer, Message, TokenBudgetContextManager
from windowkeeper.errors import ConfigurationError, FormatError
from windowkeeper.integrations import Window
from windowkeeper.integrations import window as window_module
from windowkeeper.llm.formats import (
    from_anthropic,
    from_gemini,
    from_langchain,
    from_openai_chat,
    from_responses_input,
    to_anthropic,
    to_gemini,
    to_langchain,
    to_openai_chat,
    to_responses_input,
)
from windowkeeper.prompt import SUMMARY_HEADER
from windowkeeper.testing.sessiongen import generate_session
from windowkeeper.units import validate

SESSION = generate_session(40, seed=2).messages
SYSTEM = SESSION[0].text()
CONVERSATION = SESSION[1:]
BUDGET = 8000


def _provider_list(fmt: str, messages: list[Message]) -> list[Any]:
    if fmt == "openai_chat":
        return to_openai_chat(messages)
    if fmt == "openai_responses":
        return to_responses_input(messages)[1]
    if fmt == "anthropic":
        return to_anthropic(messages)[1]
    if fmt == "gemini":
        return to_gemini(messages)[1]
    return to_langchain(messages)


def _call_points(items: list[Any], fmt: str) -> list[int]:
    """Lengths of the list at which the caller calls the model: before each assistant turn."""
    if fmt == "langchain":
        return [k for k, m in enumerate(items) if type(m).__name__ == "AIMessage"]
    if fmt == "openai_responses":
        points = []
        for k, item in enumerate(items):
            starts = item.get("type") in ("function_call", "reasoning") or item.get("role") == "assistant"
            before = items[k - 1] if k else {}
            continues = before.get("type") in ("function_call", "reasoning") or before.get("role") == "assistant"
            if starts and not continues:
                points.append(k)
        return points
    role = "model" if fmt == "gemini" else "assistant"
    return [k for k, m in enumerate(items) if m["role"] == role]


def _read_back(fmt: str, result: Any) -> tuple[str | None, list[Message]]:
    """``(system text, messages)`` of a fit result, read with the format's own converter."""
    if fmt == "openai_chat":
        messages = from_openai_chat(result.messages)
    elif fmt == "openai_responses":
        messages = from_responses_input(result.messages, result.system)
    elif fmt == "anthropic":
        messages = from_anthropic(result.system, result.messages)
    elif fmt == "gemini":
        messages = from_gemini(result.system, result.messages)
    else:
        messages = from_langchain(result.messages)
    system = "\n\n".join(m.text() for m in messages if m.role == "system") or None
    return system, [m for m in messages if m.role != "system"]


FORMATS = ["openai_chat", "openai_responses", "anthropic", "gemini", "langchain"]


def _session_in(fmt: str) -> tuple[list[Any], Any]:
    """The conversation in ``fmt`` and the ``system=`` to pass (in the list for Chat Completions and LangChain)."""
    if fmt in ("openai_chat", "langchain"):
        return _provider_list(fmt, SESSION), None
    return _provider_list(fmt, CONVERSATION), SYSTEM


@pytest.mark.parametrize("fmt", FORMATS)
def test_fit_every_call_gives_a_valid_request_with_the_summary_in_the_native_place(fmt: str) -> None:
    items, system = _session_in(fmt)
    window = Window(budget=BUDGET, format=fmt)
    points = _call_points(items, fmt)
    assert len(points) >= 20
    summarized = False
    stable = 0
    for k in points:
        before = copy.deepcopy(items[:k])
        result = window.fit(items[:k], system=system)
        assert items[:k] == before  # the caller's list is never changed
        text, messages = _read_back(fmt, result)
        assert validate(messages, "anthropic" if fmt == "anthropic" else "openai") == []
        assert text is not None and text.startswith(SYSTEM)
        if result.summary:
            summarized = True
        if summarized:
            assert SUMMARY_HEADER in text and result.summary is not None and result.summary in text
        stable += bool(result.metrics and result.metrics.prefix_stable)
        assert result.input_tokens <= BUDGET
    assert summarized
    assert stable >= len(points) // 2


def test_the_system_place_of_each_format() -> None:
    items, _ = _session_in("openai_chat")
    chat = Window(budget=BUDGET).fit(items)
    assert chat.system is None and chat.messages[0]["role"] == "system"
    for fmt in ("openai_responses", "gemini"):
        result = Window(budget=BUDGET, format=fmt).fit(_provider_list(fmt, CONVERSATION[:5]), system="Be brief.")
        assert result.system == ("Be brief." if fmt == "openai_responses" else {"parts": [{"text": "Be brief."}]})
    result = Window(budget=BUDGET, format="anthropic").fit(_provider_list("anthropic", CONVERSATION[:5]), system="Hi")
    assert result.system == [{"type": "text", "text": "Hi", "cache_control": {"type": "ephemeral"}}]
    with pytest.raises(FormatError, match="put it in the list as a system"):  # the fix, not only the fault
        Window(budget=BUDGET).fit(items, system=[{"type": "text", "text": "Be brief."}])
    # system blocks of the caller's pass through as they came (with nothing to add, and no cache marker to set)
    blocks = [{"type": "text", "text": "Hi"}, {"type": "text", "text": "Be brief.", "x_k": 1}]
    result = Window(budget=BUDGET, format="anthropic", prompt_cache=False).fit(
        _provider_list("anthropic", CONVERSATION[:5]), system=blocks
    )
    assert result.system == blocks


def test_system_blocks_and_parts_pass_through_with_the_summary_after_them() -> None:
    """An Anthropic ``system`` of blocks (a ``cache_control`` on the stable part) and a Gemini system instruction
    of parts were merged into one text with the summary, losing the caller's cache marker: each time the summary
    changed, the whole system prompt left the provider's cache. They pass through now, the summary a block (part)
    after them; the caller's cache markers count against the four a request may carry."""
    items = _provider_list("anthropic", CONVERSATION)
    stable = {"type": "text", "text": "You are a careful assistant.", "cache_control": {"type": "ephemeral"}}
    blocks = [stable, {"type": "text", "text": "Today is Monday."}]
    result = Window(budget=400, format="anthropic").fit(items, system=blocks)
    assert result.summary is not None and isinstance(result.system, list)
    assert result.system[:2] == blocks and result.summary in result.system[2]["text"] and len(result.system) == 3
    marks = json.dumps([result.system, result.messages]).count('"cache_control"')
    assert 1 <= marks <= 4
    parts = {"parts": [{"text": "You are a careful assistant."}, {"text": "Today is Monday."}]}
    result = Window(budget=400, format="gemini").fit(_provider_list("gemini", CONVERSATION), system=parts)
    assert result.summary is not None and isinstance(result.system, dict)
    assert result.system["parts"][:2] == parts["parts"] and result.summary in result.system["parts"][2]["text"]


def _manager(tools: list[dict[str, Any]] | None = None) -> TokenBudgetContextManager[AgentState]:
    # recall off: its passages carry the minute a message was read, which differs between the two runs compared
    return TokenBudgetContextManager(
        BUDGET, reserve_tokens=BUDGET // 5, summarizer=ExtractiveSummarizer(), recall=False, tools=tools
    )


def _kept_objects_run(
    items: list[dict[str, Any]], points: list[int], tools: list[dict[str, Any]] | None = None
) -> tuple[list[Any], int]:
    """The same calls made by a caller that keeps `Message` objects and one state (the "ideal" integration)."""
    manager = _manager(tools)
    kept = from_openai_chat(items)
    view: list[Message] = []
    summary: str | None = None
    done = 0
    views = []
    stable = 0
    for k in points:
        state = manager.trim_context(AgentState(context=[*view, *kept[done:k]], context_summary=summary))
        view, summary, done = list(state.context), state.context_summary, k
        views.append((summary, to_openai_chat(view)))
        stable += bool(manager.last_metrics and manager.last_metrics.prefix_stable)
    return views, stable


def test_reconverting_the_whole_list_every_call_matches_keeping_message_objects() -> None:
    items = to_openai_chat(SESSION)
    points = _call_points(items, "openai_chat")
    recall = [Window(_manager()).recall_tool().definition("openai_chat")]  # pointers name it, as the manager wrote
    window = Window(_manager(recall))  # the request carries it: both runs count it
    views = []
    stable = 0
    for k in points:
        result = window.fit(items[:k], tools=recall)
        views.append((result.summary, to_openai_chat(result.view)))
        stable += bool(result.metrics and result.metrics.prefix_stable)
    kept_views, kept_stable = _kept_objects_run(items, points, recall)
    assert len(points) >= 20
    assert stable == kept_stable
    assert [(s, [m for m in v if m["role"] != "system"]) for s, v in views] == [
        (s, [m for m in v if m["role"] != "system"]) for s, v in kept_views
    ]


def test_anthropic_breakpoints_mark_the_stable_prefix_within_the_limit() -> None:
    items = _provider_list("anthropic", CONVERSATION)
    window = Window(budget=BUDGET, format="anthropic")
    previous: list[Any] | None = None
    for k in _call_points(items, "anthropic"):
        result = window.fit(items[:k], system=SYSTEM)
        marks = [
            (i, j) for i, m in enumerate(result.messages) for j, b in enumerate(m["content"]) if "cache_control" in b
        ]
        assert isinstance(result.system, list) and result.system[0]["cache_control"] == {"type": "ephemeral"}
        assert 1 <= len(marks) + 1 <= 4
        assert marks[-1][0] == len(result.messages) - 1  # the newest message is written to the cache
        if previous is not None and len(marks) == 2:
            # the other marker ends the part unchanged since the previous call
            i = marks[0][0]
            strip = [
                {**m, "content": [{k2: v for k2, v in b.items() if k2 != "cache_control"} for b in m["content"]]}
                for m in result.messages[: i + 1]
            ]
            old = [
                {**m, "content": [{k2: v for k2, v in b.items() if k2 != "cache_control"} for b in m["content"]]}
                for m in previous[: i + 1]
            ]
            assert strip == old
        previous = result.messages


def test_restore_returns_the_original_byte_for_byte() -> None:
    items = to_openai_chat(SESSION)
    window = Window(budget=BUDGET)
    pointers: list[dict[str, Any]] = []
    for k in _call_points(items, "openai_chat"):
        result = window.fit(items[:k])
        pointers.extend(m for m in result.messages if m["role"] == "tool" and "cleared from context" in m["content"])
    assert pointers
    originals = {m["tool_call_id"]: m for m in items if m["role"] == "tool"}
    for pointer in pointers:
        assert window.restore(pointer) == originals[pointer["tool_call_id"]]
    untouched = items[1]
    assert window.restore(untouched) is untouched


def test_a_list_that_does_not_continue_starts_the_thread_over() -> None:
    items = to_openai_chat(SESSION)
    window = Window(budget=BUDGET)
    for k in _call_points(items, "openai_chat"):
        result = window.fit(items[:k])
    assert result.summary
    fresh = window.fit([{"role": "user", "content": "A new topic."}])
    assert fresh.summary is None
    assert [m["content"] for m in fresh.messages] == ["A new topic."]


async def test_sync_fit_works_inside_a_running_loop_and_afit_matches_it() -> None:
    items = to_openai_chat(SESSION[:30])
    sync_result = Window(budget=BUDGET).fit(items)
    async_result = await Window(budget=BUDGET).afit(items)
    assert sync_result.messages == async_result.messages


def test_threads_are_kept_apart() -> None:
    window = Window(budget=BUDGET)
    a = window.fit([{"role": "user", "content": "about apples"}], thread_id="a")
    b = window.fit([{"role": "user", "content": "about pears"}], thread_id="b")
    again = window.fit(
        [{"role": "user", "content": "about apples"}, {"role": "assistant", "content": "ok"}], thread_id="a"
    )
    assert a.messages[0]["content"] == "about apples" and b.messages[0]["content"] == "about pears"
    assert again.metrics is not None and again.metrics.prefix_stable


def test_a_window_keeps_the_views_of_a_bounded_number_of_threads(monkeypatch: pytest.MonkeyPatch) -> None:
    """A server fits many threads: the least recently used view goes, and that thread is managed afresh after."""
    monkeypatch.setattr(window_module, "MAX_WINDOW_THREADS", 2)
    window = Window(budget=BUDGET)
    items, _ = _session_in("openai_chat")
    first = window.fit(items[:20], thread_id="a")
    window.fit([{"role": "user", "content": "about pears"}], thread_id="b")
    window.fit([{"role": "user", "content": "about plums"}], thread_id="c")
    assert list(window._threads) == ["b", "c"]
    again = window.fit(items[:24], thread_id="a")  # evicted: fitted from the caller's list again
    assert list(window._threads) == ["c", "a"]
    assert validate(from_openai_chat(again.messages), "openai") == []
    assert again.metrics is not None and again.metrics.tokens_after <= BUDGET
    assert first.messages and again.messages == Window(budget=BUDGET).fit(items[:24]).messages  # as a new thread


# -- bad input ----------------------------------------------------------------------------------------------------


def test_unknown_format_and_bad_configuration_are_refused() -> None:
    with pytest.raises(ConfigurationError, match="format='bedrock' is not supported; use one of 'openai_chat'"):
        Window(budget=BUDGET, format="bedrock")
    with pytest.raises(ConfigurationError, match="budget="):
        Window()
    with pytest.raises(ConfigurationError, match="not both"):
        Window(TokenBudgetContextManager(1000, reserve_tokens=100), budget=100)


@pytest.mark.parametrize(
    ("fmt", "items", "index", "key", "looks_like"),
    [
        (
            "openai_chat",
            [{"role": "user", "content": "hi"}, {"type": "function_call_output", "call_id": "c", "output": "x"}],
            1,
            "type",
            "openai_responses",
        ),
        (
            "anthropic",
            [{"role": "user", "content": "hi"}, {"role": "model", "parts": [{"text": "x"}]}],
            1,
            "parts",
            "gemini",
        ),
        (
            "anthropic",
            [{"role": "user", "content": "hi"}, {"role": "tool", "tool_call_id": "c", "content": "x"}],
            1,
            "tool_call_id",
            "openai_chat",
        ),
        ("gemini", [{"role": "user", "content": "hi"}], 0, "content", None),
        (
            "openai_responses",
            [{"role": "assistant", "content": None, "tool_calls": []}],
            0,
            "tool_calls",
            "openai_chat",
        ),
        (
            "openai_chat",
            [{"role": "user", "content": [{"type": "tool_result", "tool_use_id": "c"}]}],
            0,
            "content[0].type",
            "anthropic",
        ),
    ],
)
def test_a_list_in_another_providers_shape_names_index_key_and_expected_shape(
    fmt: str, items: list[Any], index: int, key: str, looks_like: str | None
) -> None:
    frozen = json.dumps(items)
    with pytest.raises(FormatError) as info:
        Window(budget=BUDGET, format=fmt).fit(items)
    assert (info.value.index, info.value.key) == (index, key)
    text = str(info.value)
    assert f"Window(format={fmt!r}) expects" in text
    if looks_like:
        assert f"format={looks_like!r}" in text
    assert json.dumps(items) == frozen


def test_langchain_messages_given_to_a_dict_format_and_dicts_to_langchain() -> None:
    from langchain_core.messages import HumanMessage

    with pytest.raises(FormatError, match="format='langchain'") as info:
        Window(budget=BUDGET).fit([{"role": "user", "content": "hi"}, HumanMessage("x")])
    assert info.value.index == 1
    with pytest.raises(FormatError, match="langchain_core message objects") as info:
        Window(budget=BUDGET, format="langchain").fit([{"role": "user", "content": "hi"}])
    assert info.value.index == 0


@pytest.mark.parametrize(
    ("items", "index", "key"),
    [
        ([{"role": "user", "content": "hi"}, {"content": "no role"}], 1, "role"),
        ([{"role": "user", "content": "hi"}, {"role": 5, "content": "x"}], 1, "role"),
        (
            [
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [{"id": "c", "function": {"name": "f", "arguments": "{bad"}}],
                }
            ],
            0,
            "tool_calls[0].function.arguments",
        ),
        ([{"role": "user", "content": "hi"}, "not a message"], 1, "role"),
    ],
)
def test_a_malformed_message_names_index_key_and_expected_shape(items: list[Any], index: int, key: str) -> None:
    frozen = json.dumps(items)
    with pytest.raises(FormatError) as info:
        Window(budget=BUDGET).fit(items)
    assert (info.value.index, info.value.key) == (index, key)
    assert "expects Chat Completions messages such as" in str(info.value)
    assert json.dumps(items) == frozen


def test_not_a_list_is_refused_with_the_expected_shape() -> None:
    with pytest.raises(FormatError, match="takes the whole conversation as a list of Anthropic messages"):
        Window(budget=BUDGET, format="anthropic").fit({"role": "user", "content": "hi"})


def test_a_result_written_when_read_equals_one_written_at_once() -> None:
    """The adapters' results write provider items only when ``messages`` is read; the items are the same."""
    items = to_openai_chat(generate_session(20, seed=3).messages)
    points = [k for k, m in enumerate(items) if m["role"] == "assistant"]
    eager, lazy = Window(budget=3000), Window(budget=3000)
    for k in points:
        now = eager.fit(items[:k], system="Be brief.")
        later = lazy._fit_unwritten(items[:k], system="Be brief.")
        assert "_written" not in later.__dict__
        assert [(m.message_id, m.fingerprint()) for m in later.prompt.messages] == [
            (m.message_id, m.fingerprint()) for m in now.prompt.messages
        ]
        assert later.messages == now.messages and later.system == now.system


RECALLED_FACT = "Remember this: the staging server is kestrel-4 and it listens on port 8443."


def _wire_count(fmt: str, result: Any, counter: Any) -> int:
    """The request as the provider receives it, read back and counted message by message."""
    from windowkeeper.prompt import system_message

    if fmt == "openai_chat":
        return int(counter.count_messages(from_openai_chat(result.messages)))
    if fmt == "openai_responses":
        wire = from_responses_input(result.messages)
        text = result.system
    elif fmt == "anthropic":
        wire = from_anthropic(None, result.messages)
        text = result.system if isinstance(result.system, str) else "".join(b["text"] for b in result.system)
    else:
        wire = from_gemini(None, result.messages)
        text = result.system["parts"][0]["text"]
    return int(counter.count_messages([system_message(text), *wire]))


@pytest.mark.parametrize("fmt", ["openai_chat", "openai_responses", "anthropic", "gemini"])
def test_input_tokens_count_recall_notes_as_written_into_the_turn_they_serve(fmt: str) -> None:
    """A recall note goes out inside the user turn it serves (one message on the wire, not two): the count
    `FitResult.input_tokens` reports is the count of what is sent, one message frame less per note."""
    from windowkeeper.prompt import is_recall

    def user(text: str) -> dict[str, Any]:
        if fmt == "openai_responses":
            return {"type": "message", "role": "user", "content": text}
        return {"role": "user", "parts": [{"text": text}]} if fmt == "gemini" else {"role": "user", "content": text}

    def reply(text: str) -> dict[str, Any]:
        if fmt == "openai_responses":
            return {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": text}]}
        if fmt == "gemini":
            return {"role": "model", "parts": [{"text": text}]}
        return {"role": "assistant", "content": text}

    manager: TokenBudgetContextManager[AgentState] = TokenBudgetContextManager(max_tokens=2500, reserve_tokens=500)
    window: Window[Any, Any] = Window(manager, format=fmt)
    items: list[dict[str, Any]] = []
    for turn in range(120):
        text = RECALLED_FACT if turn == 0 else f"Turn {turn}: let us talk about topic {turn} and its many details."
        items.append(user(text))
        window.fit(items, system="You are helpful.")
        items.append(reply(f"Answer {turn}: noted, topic {turn} is clear."))
    items.append(user("Which host and port does staging use?"))
    result = window.fit(items, system="You are helpful.")
    notes = sum(is_recall(m) for m in result.prompt.messages)
    assert notes >= 1
    assert result.input_tokens == _wire_count(fmt, result, manager.counter)
    assert result.prompt.input_tokens - result.input_tokens == notes * 4  # one frame of the o200k counter each


def test_the_manager_is_asked_for_originals_only_when_the_views_pointers_change(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A base export without recall gives each pointer's original, so while a view holds the same pointers the
    window keeps what the last export gave and does not ask again; every pointer still restores byte for byte."""
    items = to_openai_chat(SESSION)
    manager = TokenBudgetContextManager(BUDGET, 1000, recall=False)
    window = Window(manager)
    asked: list[int] = []
    export = manager.export_thread

    def counted(thread_id: str, view: Any) -> Any:
        asked.append(len(view))
        return export(thread_id, view)

    monkeypatch.setattr(manager, "export_thread", counted)
    points = _call_points(items, "openai_chat")
    pointers: list[dict[str, Any]] = []
    for k in points:
        result = window.fit(items[:k])
        pointers.extend(m for m in result.messages if m["role"] == "tool" and "cleared from context" in m["content"])
    assert pointers
    calls = len(asked)
    for _ in range(3):  # the same list again: the same view, the same pointers
        again = window.fit(items[: points[-1]])
    assert len(asked) == calls
    assert again.messages == result.messages
    originals = {m["tool_call_id"]: m for m in items if m["role"] == "tool"}
    for pointer in pointers:
        assert window.restore(pointer) == originals[pointer["tool_call_id"]]


def test_a_manager_with_recall_is_asked_on_every_call(monkeypatch: pytest.MonkeyPatch) -> None:
    items = to_openai_chat(SESSION)
    manager = TokenBudgetContextManager(BUDGET, 1000)  # recall on: the turn it served moves from call to call
    window = Window(manager)
    asked: list[int] = []
    export = manager.export_thread
    monkeypatch.setattr(manager, "export_thread", lambda tid, view: asked.append(1) or export(tid, view))
    points = _call_points(items, "openai_chat")
    for k in points:
        window.fit(items[:k])
    window.fit(items[: points[-1]])
    assert len(asked) == len(points) + 1


def test_tools_a_request_carries_beyond_the_managers_own_are_counted() -> None:
    """A manager's ``tools`` are fixed when it is made, but a request may carry more: the recall tool a host
    adapter adds, a handoff's tools, a middleware's. They were not counted, so the request went over the budget
    by their size. The window's ``tools=`` of each call are counted now, and only that call's."""
    big = {
        "type": "function",
        "function": {
            "name": "search_catalog",
            "description": "Search the product catalog. " + "Mind the filters and the units. " * 60,
            "parameters": {"type": "object", "properties": {"query": {"type": "string"}}},
        },
    }
    items = _provider_list("openai_chat", CONVERSATION)
    for with_tools in (False, True):
        manager = TokenBudgetContextManager(BUDGET, reserve_tokens=1000, keep_tool_results=1)  # knows no tools
        window: Window[Any, Any] = Window(manager, format="openai_chat")
        for end in range(10, len(items), 7):
            fit = window.fit(items[:end], tools=[big] if with_tools else None)
            assert fit.input_tokens <= BUDGET - 1000, (with_tools, end, fit.input_tokens)
        if with_tools:
            assert fit.prompt.zone_tokens["tools"] > 400


@pytest.mark.parametrize("fmt", ["openai_chat", "openai_responses"])
def test_restore_gives_back_the_item_the_caller_sent_with_its_own_keys(fmt: str) -> None:
    """`restore` wrote the original anew from windowkeeper's model of it, so what a provider sends that no model
    holds (a key of the caller's own, a Responses output's id and status) came back without it. (A result that
    shared its turn with others, in Anthropic and Gemini, comes back as its own block in a turn of its own.)"""
    items = _provider_list(fmt, CONVERSATION)
    key = "x_meta"
    tagged = [{**item, key: n} if isinstance(item, dict) else item for n, item in enumerate(items)]
    window = Window(budget=BUDGET, format=fmt)
    pointers: list[Any] = []
    for end in range(10, len(tagged), 5):
        fit = window.fit(tagged[:end])
        pointers.extend(m for m in fit.messages if "cleared from context" in json.dumps(m) and key not in m)
    assert pointers
    for pointer in pointers[:5]:
        restored = window.restore(pointer)
        restored = restored if isinstance(restored, list) else [restored]
        assert any(isinstance(r, dict) and r.get(key) is not None and r in tagged for r in restored)


def test_a_thread_that_starts_takes_the_summary_it_is_given_and_one_that_goes_on_keeps_its_own() -> None:
    """``summary=``: what came before the list, summarized elsewhere; a thread that starts from the list starts with
    it (one summary goes out, which the thread's cuts extend), a thread that goes on ignores it."""
    window: Window[Any, Any] = Window(
        TokenBudgetContextManager(3000, reserve_tokens=500, summarizer=ExtractiveSummarizer()), format="openai_chat"
    )
    chat = to_openai_chat(CONVERSATION)
    first = window.fit(chat[:4], summary="The user named the project Kestrel.")
    assert first.summary == "The user named the project Kestrel."
    assert first.messages[0]["role"] == "system" and "Kestrel" in first.messages[0]["content"]
    assert json.dumps(first.messages).count(SUMMARY_HEADER) == 1
    goes_on = window.fit(chat[:6], summary="Something else.")
    assert goes_on.summary == "The user named the project Kestrel."
    for end in range(8, len(chat), 2):
        result = window.fit(chat[:end])
        assert json.dumps(result.messages).count(SUMMARY_HEADER) == 1
    assert result.summary is not None and result.summary != "The user named the project Kestrel."
    restarted = window.fit(chat[10:14], summary="A new start.")
    assert restarted.summary == "A new start."
