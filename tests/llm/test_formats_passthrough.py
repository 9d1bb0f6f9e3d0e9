"""Lossless pass-through and what windowkeeper writes, per provider format (issue 19's formats half).

An item windowkeeper did not change leaves exactly as it came (`to_X(from_X(items)) == items` through the
registry's format objects, and through `Window.fit` at a budget that trims nothing); what windowkeeper writes over
long managed runs at small budgets (pointers, summaries, recall) validates against the official SDKs' request
types with no key they lack.
"""

from __future__ import annotations

import copy
import json
import warnings
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from windowkeeper.blocks import TextBlock, ToolResultBlock
from windowkeeper.integrations import Window
from windowkeeper.llm.formats import from_anthropic, to_anthropic, to_gemini, to_openai_chat, to_responses_input
from windowkeeper.llm.formats.registry import convert, formats, get_format
from windowkeeper.messages import Message
from windowkeeper.prompt.recall import MARK_KEY, RECALL_MARK
from windowkeeper.prompt.recall import RECALL_MARK as RECALL_MARK_VALUE
from windowkeeper.testing.sessiongen import generate_session

from .formats_data import tau_trajectories
from .sdk_types import sdk_problems

CHAT_ITEMS: list[dict[str, Any]] = [
    {"role": "developer", "content": "Be brief.", "name": "policy"},
    {
        "role": "user",
        "content": [
            {"type": "text", "text": "What is this?"},
            {"type": "image_url", "image_url": {"url": "https://x.test/a.png", "detail": "low"}},
            {"type": "hologram", "depth": 3},  # a content kind nobody modelled
        ],
        "x_trace": {"span": "s1"},  # an unknown key
    },
    {"role": "assistant", "content": None, "refusal": "I can't identify people."},
    {"role": "user", "content": "Then look it up."},
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "search", "arguments": '{"q":"a"}'}}],
        "reasoning_content": "need a search",
    },
    {"role": "tool", "tool_call_id": "call_1", "content": "Error: search backend down", "name": "search"},
    {"role": "function", "name": "legacy", "content": "an old role"},
    {"role": "assistant", "content": "The search failed.", "annotations": [], "audio": None},
]

RESPONSES_ITEMS: list[dict[str, Any]] = [
    {
        "type": "message",
        "role": "user",
        "content": [{"type": "input_text", "text": "News on X?"}],
        "status": "completed",
    },
    {
        "type": "reasoning",
        "id": "rs_1",
        "summary": [{"type": "summary_text", "text": "search"}],
        "encrypted_content": "e",
    },
    {"type": "web_search_call", "id": "ws_1", "status": "completed", "action": {"type": "search", "query": "X"}},
    {
        "type": "message",
        "role": "assistant",
        "id": "msg_1",
        "status": "completed",
        "content": [
            {
                "type": "output_text",
                "text": "X launched.",
                "annotations": [
                    {"type": "url_citation", "url": "https://n.test", "title": "N", "start_index": 0, "end_index": 10}
                ],
            }
        ],
    },
    {
        "type": "function_call",
        "id": "fc_1",
        "call_id": "call_1",
        "name": "lookup",
        "arguments": "{}",
        "status": "completed",
    },
    {
        "type": "function_call_output",
        "id": "fco_1",
        "call_id": "call_1",
        "output": "Error: not found",
        "status": "completed",
    },
    {"role": "user", "content": "thanks"},
]

ANTHROPIC_ITEMS: list[dict[str, Any]] = [
    {
        "role": "user",
        "content": [
            {
                "type": "document",
                "source": {"type": "text", "media_type": "text/plain", "data": "The sky is blue."},
                "title": "Facts",
                "citations": {"enabled": True},
            },
            {"type": "text", "text": "What colour is the sky?", "cache_control": {"type": "ephemeral"}},
        ],
    },
    {
        "role": "assistant",
        "content": [
            {
                "type": "text",
                "text": "Blue.",
                "citations": [
                    {
                        "type": "char_location",
                        "cited_text": "The sky is blue.",
                        "document_index": 0,
                        "document_title": "Facts",
                        "start_char_index": 0,
                        "end_char_index": 16,
                    }
                ],
            },
            {"type": "tool_use", "id": "toolu_1", "name": "check", "input": {"q": "sky"}},
        ],
    },
    {
        "role": "user",
        "content": [
            {
                "type": "tool_result",
                "tool_use_id": "toolu_1",
                "content": "confirmed",
                "is_error": True,
                "cache_control": {"type": "ephemeral"},
            },
            {"type": "text", "text": "Sure?"},
        ],
    },
    {
        "role": "assistant",
        "content": [{"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {"query": "sky"}}],
    },
]

GEMINI_ITEMS: list[dict[str, Any]] = [
    {"role": "user", "parts": [{"text": "Weather?"}]},
    {
        "role": "model",
        "parts": [
            {"functionCall": {"id": "fc-1", "name": "weather", "args": {"city": "Oslo"}}, "thoughtSignature": "c2ln"}
        ],
    },
    {
        "role": "user",
        "parts": [
            {"functionResponse": {"id": "fc-1", "name": "weather", "response": {"error": "down"}}},
            {"text": "And tomorrow?"},
        ],
    },
    {"role": "model", "parts": [{"executableCode": {"language": "PYTHON", "code": "print(1)"}}]},
]


def _langchain_items() -> list[Any]:
    from langchain_core.messages import AIMessage, ChatMessage, HumanMessage, ToolMessage

    return [
        HumanMessage(content="hi", id="h1", additional_kwargs={"x": 1}),
        AIMessage(
            content=[{"type": "text", "text": "calling"}],
            id="a1",
            response_metadata={"model": "m"},
            tool_calls=[{"name": "f", "args": {}, "id": "c1", "type": "tool_call"}],
        ),
        ToolMessage(content="bad", tool_call_id="c1", status="error", id="t1", artifact={"raw": 1}),
        ChatMessage(role="critic", content="meh", id="x1"),
    ]


def documented(fmt: str) -> list[Any]:
    return {
        "openai_chat": CHAT_ITEMS,
        "openai_responses": RESPONSES_ITEMS,
        "anthropic": ANTHROPIC_ITEMS,
        "gemini": GEMINI_ITEMS,
    }.get(fmt) or _langchain_items()


FORMATS = ("openai_chat", "openai_responses", "anthropic", "gemini", "langchain")


@pytest.mark.parametrize("fmt", FORMATS)
def test_unchanged_items_pass_through_the_format_object(fmt: str) -> None:
    items = documented(fmt)
    before = copy.deepcopy(items) if fmt != "langchain" else None
    format_ = get_format(fmt)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # nothing is lost, so nothing is said
        written = format_.write_plain(format_.read(items))
    assert written == items
    if before is not None:
        assert items == before  # the caller's items are never edited


@pytest.mark.parametrize("fmt", FORMATS)
def test_window_fit_passes_unchanged_items_through(fmt: str) -> None:
    items = documented(fmt)
    window = Window(budget=200_000, format=fmt, prompt_cache=False)
    result = window.fit(items)
    assert list(result.messages) == items  # Chat system and developer messages included, ``name`` and all


def test_chat_system_messages_pass_through_beside_the_summary_and_the_system_prompt() -> None:
    """The caller's own system and developer messages leave as they came when windowkeeper adds to the system
    zone: the ``system=`` prompt before them, the summary after them, each a message of its own (developer role,
    as the caller uses it)."""
    policy = {"role": "developer", "content": [{"type": "text", "text": "Be brief."}], "name": "policy", "x_k": 1}
    rules = {"role": "system", "content": "Cite sources."}
    items: list[Any] = [policy, rules]
    for turn in range(30):
        items += [
            {"role": "user", "content": f"question {turn} " + "lorem ipsum " * 40},
            {"role": "assistant", "content": f"answer {turn} " + "dolor sit " * 40},
        ]
    result = Window(budget=1500, format="openai_chat").fit(items, system="Global rules.")
    assert result.summary is not None
    head = list(result.messages[:4])
    assert head[0] == {"role": "developer", "content": "Global rules."}
    assert head[1:3] == [policy, rules]
    assert head[3]["role"] == "developer" and result.summary in head[3]["content"]
    assert [m["role"] for m in result.messages[4:]].count("developer") == 0
    written = [head[0], head[3], *result.messages[4:]]  # what windowkeeper wrote, the caller's items aside
    assert sdk_problems(written, _sdk_type("openai_chat")) == []


def test_langchain_system_messages_pass_through_beside_the_summary() -> None:
    """A LangChain list's own ``SystemMessage`` (its id, its content blocks) came back as a new message with
    windowkeeper's id, even with nothing to add to the system zone: a host merging messages by id then saw one it
    never sent. The caller's system messages now leave as they came, and the summary follows them as a system
    message of its own, both before the conversation (as ChatAnthropic needs them: consecutive)."""
    from langchain_core.messages import AIMessage, HumanMessage, SystemMessage

    policy = SystemMessage(content=[{"type": "text", "text": "Be brief."}], id="sys-policy")
    messages: list[Any] = [policy]
    assert Window(budget=5_000, format="langchain").fit([policy, HumanMessage("hi")]).messages[0] == policy
    for turn in range(30):
        messages += [HumanMessage(f"question {turn} " + "lorem ipsum " * 40), AIMessage(f"answer {turn} " + "x " * 80)]
    result = Window(budget=1_500, format="langchain").fit(messages)
    assert result.summary is not None
    head = list(result.messages[:2])
    assert head[0] == policy and head[1].type == "system" and result.summary in head[1].text
    assert all(m.type != "system" for m in result.messages[2:])


def test_responses_developer_items_stay_in_the_input_and_instructions_hold_what_windowkeeper_adds() -> None:
    """A developer (or system) message in a Responses ``input`` was taken out of the list and its text moved into
    ``fit.system``: a caller who sends ``input=fit.messages`` alone (it passed no ``system=``) lost it. It stays in
    the input as it came now, first, and ``instructions`` holds the ``system=`` text and the summary."""
    policy = {"type": "message", "role": "developer", "content": [{"type": "input_text", "text": "Be brief."}]}
    items: list[Any] = [policy, {"role": "user", "content": "hi"}]
    fit = Window(budget=5_000, format="openai_responses").fit(items)
    assert fit.messages == items and fit.system is None
    for turn in range(30):
        items += [
            {"role": "user", "content": f"question {turn} " + "lorem ipsum " * 40},
            {"role": "assistant", "content": "dolor " * 80},
        ]
    fit = Window(budget=1_500, format="openai_responses").fit(items, system="Global rules.")
    assert fit.summary is not None and fit.messages[0] == policy
    assert isinstance(fit.system, str) and fit.system.startswith("Global rules.\n\n") and fit.summary in fit.system
    assert "Be brief." not in fit.system
    assert sdk_problems(list(fit.messages), _sdk_type("openai_responses")) == []


@pytest.mark.parametrize("fmt", ["openai_chat", "openai_responses", "langchain"])
def test_a_system_message_said_mid_conversation_stays_where_it_was_said(fmt: str) -> None:
    """An instruction given at turn N ("from now on, read only") was moved to the front, before the turns it came
    after, so it read as given from the start. It stays where it was while the message after it is in the view
    (with nothing to cut the list comes back as it came), and goes to the front once that message is cut."""
    from windowkeeper.llm.formats import to_langchain

    rule = Message.text_message("From now on the user may only read, not write.", role="system")
    rule = rule.model_copy(update={"metadata": {"openai_role": "developer"}}) if fmt != "langchain" else rule
    chat = [Message.text_message("Plan a trip.", role="user"), Message.text_message("Where to?", role="assistant")]
    convert = {"openai_chat": to_openai_chat, "openai_responses": lambda m: to_responses_input(m)[1]}
    write = convert.get(fmt, to_langchain)
    items = list(write([Message.text_message("You plan trips.", role="system"), *chat, rule]))
    items += list(write([Message.text_message("Paris.", role="user")]))
    window = Window(budget=100_000, format=fmt)
    assert list(window.fit(items).messages) == items

    for turn in range(30):
        items += list(write([Message.text_message(f"question {turn} " + "lorem ipsum " * 40, role="user")]))
        items += list(write([Message.text_message(f"answer {turn} " + "dolor sit " * 40, role="assistant")]))
    fit = Window(budget=1_500, format=fmt).fit(items)
    rules = [n for n, item in enumerate(fit.messages) if "only read" in str(item)]
    assert len(rules) == 1 and rules[0] <= 2  # the turns around it were cut: it leads, with the system prompt


def test_anthropic_split_turn_comes_back_as_one_turn_with_its_own_blocks() -> None:
    fmt = get_format("anthropic")
    read = fmt.read(ANTHROPIC_ITEMS)
    roles = [m.role for m in read]
    assert roles == ["user", "assistant", "tool", "user", "assistant"]
    # windowkeeper replaces the tool result (a pointer); the text beside it is unchanged
    pointer = read[2].with_content([ToolResultBlock(call_id="toolu_1", output="[cleared]", status="error")])
    out = fmt.write_plain([*read[:2], pointer, read[3], read[4]])
    assert len(out) == 4
    assert out[2] == {
        "role": "user",
        "content": [
            {"type": "tool_result", "tool_use_id": "toolu_1", "content": "[cleared]", "is_error": True},
            {"type": "text", "text": "Sure?"},
        ],
    }
    assert out[0] is ANTHROPIC_ITEMS[0] and out[3] is ANTHROPIC_ITEMS[3]


@pytest.mark.parametrize("fmt", ["openai_chat", "openai_responses", "anthropic", "gemini"])
def test_recall_joins_the_user_turn_it_serves(fmt: str) -> None:
    format_ = get_format(fmt)
    table: dict[str, list[dict[str, Any]]] = {
        "openai_chat": [{"role": "user", "content": "What did I say about Rome?"}],
        "openai_responses": [{"type": "message", "role": "user", "content": "What did I say about Rome?"}],
        "anthropic": [{"role": "user", "content": "What did I say about Rome?"}],
        "gemini": [{"role": "user", "parts": [{"text": "What did I say about Rome?"}]}],
    }
    items = table[fmt]
    (question,) = format_.read(items)
    recall = Message(
        role="user",
        content=[TextBlock(text="Earlier: Rome in May.")],
        metadata={MARK_KEY: RECALL_MARK, "serves": str(question.message_id)},
    )
    out = format_.write_plain([recall, question])
    assert len(out) == 1  # never two user turns in a row
    text = json.dumps(out[0])
    assert text.index("Earlier: Rome in May.") < text.index("What did I say about Rome?")
    assert {k: v for k, v in out[0].items() if k not in ("content", "parts")} == {
        k: v for k, v in items[0].items() if k not in ("content", "parts")
    }


@settings(max_examples=60, deadline=None)
@given(
    extra=st.dictionaries(
        st.text("abcdefgh_", min_size=1, max_size=8).filter(lambda k: k not in ("role", "content")),
        st.one_of(st.integers(), st.text(max_size=5), st.none(), st.lists(st.integers(), max_size=2)),
        max_size=3,
    ),
    text=st.text(max_size=30),
    kind=st.sampled_from(["text", "mystery", "input_text"]),
)
def test_unknown_keys_and_kinds_survive_chat_and_responses(extra: dict[str, Any], text: str, kind: str) -> None:
    chat = [{"role": "user", "content": [{"type": kind, "text": text, **extra}], **extra}]
    assert get_format("openai_chat").write_plain(get_format("openai_chat").read(chat)) == chat
    responses = [{"type": "message", "role": "user", "content": [{"type": kind, "text": text}], **extra}]
    fmt = get_format("openai_responses")
    assert fmt.write_plain(fmt.read(responses)) == responses


def test_converting_between_formats_warns_naming_what_is_lost() -> None:
    with pytest.warns(UserWarning, match=r"image_url\.detail"):
        convert(CHAT_ITEMS[1:2], "openai_chat", "anthropic")


def test_a_text_only_document_is_written_as_text_by_both_openai_writers() -> None:
    from windowkeeper.blocks import DocumentBlock

    message = Message(role="user", content=[DocumentBlock(text="page one")])
    assert to_openai_chat([message]) == [{"role": "user", "content": "page one"}]
    assert to_responses_input([message])[1] == [
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "page one"}]}
    ]


def test_every_format_is_one_registered_object() -> None:
    registered = formats()
    assert set(FORMATS) <= set(registered)
    for name, fmt in registered.items():
        assert fmt.name == name and fmt.title and fmt.expected
        assert fmt.tool("recall", "Restore a cleared result", {"type": "object", "properties": {}})


# -- what Window.fit writes validates against the SDKs' own request types --------------------------------------


def _sdk_type(fmt: str) -> Any:
    if fmt == "openai_chat":
        from openai.types.chat import ChatCompletionMessageParam

        return ChatCompletionMessageParam
    if fmt == "openai_responses":
        from openai.types.responses import ResponseInputItemParam

        return ResponseInputItemParam
    from anthropic.types import MessageParam

    return MessageParam


def _gemini_problems(items: list[Any]) -> list[str]:
    from google.genai import types

    problems = []
    for i, item in enumerate(items):
        try:  # google-genai's pydantic Content takes the REST (camelCase) spelling and forbids unknown keys
            types.Content.model_validate(item)
        except Exception as exc:
            problems.append(f"item {i}: {exc}")
    return problems


def _runs(fmt: str) -> list[tuple[list[Any], Any]]:
    """Long agent sessions in ``fmt``: two tau-bench trajectories and two generated tool-using sessions."""
    runs: list[list[Message]] = []
    from windowkeeper.llm.formats import from_openai_chat

    for record in tau_trajectories()[:2]:
        runs.append(from_openai_chat(record["traj"]))
    for seed in (3, 4):
        runs.append(list(generate_session(60, seed=seed).messages))
    out: list[tuple[list[Any], Any]] = []
    for messages in runs:
        system = next((m.text() for m in messages if m.role == "system"), None)
        body = [m for m in messages if m.role != "system"]
        if fmt == "openai_chat":
            out.append((to_openai_chat(body, include_reasoning=False, passthrough=False), system))
        elif fmt == "openai_responses":
            out.append((to_responses_input(body, reasoning="signed", passthrough=False)[1], system))
        elif fmt == "anthropic":
            out.append((to_anthropic(body, reasoning="signed", passthrough=False)[1], system))
        else:
            out.append((to_gemini(body, reasoning="signed", passthrough=False)[1], system))
    return out


def _call_points(fmt: str, items: list[Any]) -> list[int]:
    role = {"openai_chat": "assistant", "anthropic": "assistant", "gemini": "model"}.get(fmt)
    if role is not None:
        return [k for k, m in enumerate(items) if m.get("role") == role]
    return [k for k, m in enumerate(items) if m.get("type") == "function_call_output"] + [len(items)]


@pytest.mark.parametrize("fmt", ["openai_chat", "openai_responses", "anthropic", "gemini"])
def test_what_window_fit_writes_validates_against_the_sdk_types(fmt: str) -> None:
    written = 0
    for items, system in _runs(fmt):
        window = Window(budget=3_000, format=fmt)
        points = _call_points(fmt, items)
        for k in points[:: max(1, len(points) // 25)]:
            result = window.fit(items[:k], system=system)
            out = list(result.messages)
            problems = _gemini_problems(out) if fmt == "gemini" else sdk_problems(out, _sdk_type(fmt))
            assert problems == [], f"call at {k}: {problems[:3]}"
            written += sum(1 for m in result.view if m.raw is None or m.fingerprint() != m.raw["source"]["fingerprint"])
            if fmt == "anthropic" and isinstance(result.system, list):
                from anthropic.types import TextBlockParam

                assert sdk_problems(result.system, TextBlockParam) == []
    assert written > 0  # pointers, recall or changed messages were written anew, not only passed through


_EXTRA: st.SearchStrategy[dict[str, Any]] = st.dictionaries(
    st.sampled_from(["cache_control", "citations", "x_meta", "title"]),
    st.one_of(st.just({"type": "ephemeral"}), st.just([]), st.integers(0, 3), st.text("ab", max_size=3)),
    max_size=2,
)


@st.composite
def anthropic_turns(draw: st.DrawFn) -> list[dict[str, Any]]:
    """A valid Anthropic conversation: a user question, then tool rounds whose results share a turn with text."""
    turns: list[dict[str, Any]] = [{"role": "user", "content": [{"type": "text", "text": "q", **draw(_EXTRA)}]}]
    for r in range(draw(st.integers(1, 3))):
        calls = [f"toolu_{r}_{k}" for k in range(draw(st.integers(1, 2)))]
        assistant: list[dict[str, Any]] = [{"type": "text", "text": "working", **draw(_EXTRA)}]
        assistant += [{"type": "tool_use", "id": c, "name": "f", "input": {"k": k}} for k, c in enumerate(calls)]
        if draw(st.booleans()):
            assistant.append({"type": "mystery_block", "payload": draw(st.integers())})
        turns.append({"role": "assistant", "content": assistant})
        user: list[dict[str, Any]] = [
            {"type": "tool_result", "tool_use_id": c, "content": "out", "is_error": draw(st.booleans()), **draw(_EXTRA)}
            for c in calls
        ]
        if draw(st.booleans()):
            user.append({"type": "text", "text": "and?", **draw(_EXTRA)})
        turns.append({"role": "user", "content": user, **({"x_turn": 1} if draw(st.booleans()) else {})})
    return turns


@settings(max_examples=60, deadline=None)
@given(turns=anthropic_turns(), cleared=st.integers(0, 5))
def test_anthropic_turns_pass_through_and_a_cleared_result_keeps_its_turn(
    turns: list[dict[str, Any]], cleared: int
) -> None:
    fmt = get_format("anthropic")
    read = fmt.read(turns)
    assert fmt.write_plain(read) == turns
    tools = [k for k, m in enumerate(read) if m.role == "tool"]
    k = tools[cleared % len(tools)]
    (result,) = read[k].tool_result_blocks()
    changed = [
        *read[:k],
        read[k].with_content([ToolResultBlock(call_id=result.call_id, output="[cleared]")]),
        *read[k + 1 :],
    ]
    out = fmt.write_plain(changed)
    assert len(out) == len(turns)  # the turn holding the cleared result is still one turn
    assert [t["role"] for t in out] == [t["role"] for t in turns]
    differing = [j for j, (a, b) in enumerate(zip(out, turns, strict=True)) if a != b]
    assert len(differing) == 1  # only the turn with the cleared result changed
    assert from_anthropic(None, out)[k].text() == "[cleared]"


def test_the_formats_recall_mark_is_the_prompt_layers() -> None:
    from windowkeeper.llm.formats._source import RECALL_MARK

    assert RECALL_MARK == (MARK_KEY, RECALL_MARK_VALUE)


def _every_dict(value: Any, out: list[dict[str, Any]]) -> list[dict[str, Any]]:
    if isinstance(value, dict):
        out.append(value)
        for inner in value.values():
            _every_dict(inner, out)
    elif isinstance(value, list):
        for inner in value:
            _every_dict(inner, out)
    return out


@pytest.mark.parametrize("fmt", ["openai_chat", "openai_responses", "anthropic", "gemini"])
def test_unknown_keys_anywhere_survive_a_managed_run(fmt: str) -> None:
    """Real conversations (tau-bench) in each format, with keys nobody models put on random objects at any depth
    (an item, a content part, a call's function, a source): every item `Window.fit` sends is either one the caller
    sent, byte for byte, or one windowkeeper made (a summary, a pointer, a recall note, a result cut to fit the
    turn in progress)."""
    import random

    from windowkeeper.llm.formats import from_openai_chat

    rnd = random.Random(11)
    made = (
        "tool result cleared",
        "Recalled context",
        "Summary of the earlier",
        "earlier assistant reply",
        "earlier assistant turn",
        "[truncated ",
    )
    for record in tau_trajectories()[:6]:
        messages = from_openai_chat(record["traj"])
        system, items = _written(fmt, messages)
        nodes = _every_dict(items, [])
        for node in rnd.sample(nodes, min(6, len(nodes))):
            node[f"x_{rnd.randint(0, 99)}"] = rnd.choice([1, "s", {"a": [1]}, None, [], 2.5])
        sent = {json.dumps(i, sort_keys=True) for i in items}
        window = Window(budget=2_500, format=fmt)
        for n in range(2, len(items) + 1, 3):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # a conversion may say what it could not carry; not what is tested
                out = window.fit(items[:n], system=system).messages
            for item in out:
                text = json.dumps(item, sort_keys=True)  # less the cache breakpoints the Anthropic writer marks
                text = text.replace('"cache_control": {"type": "ephemeral"}, ', "").replace(
                    ', "cache_control": {"type": "ephemeral"}', ""
                )
                assert text in sent or any(mark in text for mark in made), (fmt, n, text[:300])


def _written(fmt: str, messages: list[Message]) -> tuple[Any, list[Any]]:
    if fmt == "openai_chat":
        return None, copy.deepcopy(to_openai_chat(messages, passthrough=False))
    if fmt == "openai_responses":
        system, items = to_responses_input(messages, passthrough=False)
    elif fmt == "anthropic":
        system, items = to_anthropic(messages, reasoning="signed", passthrough=False)
    else:
        system, items = to_gemini(messages, passthrough=False)
    return system, copy.deepcopy(items)


@pytest.mark.parametrize("fmt", ["openai_chat", "openai_responses", "gemini"])
def test_a_turn_cut_to_fit_keeps_the_parts_it_did_not_cut_as_the_caller_sent_them(fmt: str) -> None:
    """A user turn larger than the budget (a pasted log, an image, a question) is cut in its text. Written anew,
    its image lost the caller's keys: Chat's ``detail`` ("low": ~85 tokens) went, Responses' became "auto"
    (1,000 and more), Gemini's ``mediaResolution`` went, at the moment the request was already at its limit."""
    log = "ERROR something failed at line 42\n" * 2000
    if fmt == "openai_chat":
        image = {"type": "image_url", "image_url": {"url": "https://x.test/screen.png", "detail": "low"}}
        turn: dict[str, Any] = {"role": "user", "content": [{"type": "text", "text": log}, image]}
    elif fmt == "openai_responses":
        image = {"type": "input_image", "image_url": "https://x.test/screen.png", "detail": "low"}
        turn = {"role": "user", "content": [{"type": "input_text", "text": log}, image]}
    else:
        image = {
            "fileData": {"fileUri": "https://x.test/files/screen", "mimeType": "image/png"},
            "mediaResolution": {"level": "MEDIA_RESOLUTION_LOW"},
        }
        turn = {"role": "user", "parts": [{"text": log}, image]}
    key = "parts" if fmt == "gemini" else "content"
    fit = Window(budget=4_000, format=fmt).fit([turn])
    sent = fit.messages[-1][key]
    assert "[truncated " in json.dumps(sent[0])  # the text was cut
    assert sent[1] == image
