"""LangChain conversion: message types, tool calls and results, reasoning, media, ids, missing dependency."""

from __future__ import annotations

import builtins
from typing import Any

import pytest

from windowkeeper.blocks import ImageBlock, MediaRef, ReasoningBlock, TextBlock, ToolCallBlock, ToolResultBlock
from windowkeeper.errors import FormatError, MissingDependencyError
from windowkeeper.llm.formats import first_difference, from_langchain, from_openai_chat, to_langchain, to_openai_chat
from windowkeeper.messages import Message

from .formats_data import tau_trajectories


def test_types_ids_calls_and_results() -> None:
    from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage

    messages = [
        Message.text_message("sys", role="system", message_id="m0"),
        Message(
            role="user",
            content=[TextBlock(text="look"), ImageBlock(media=MediaRef(url="https://x/i.png"))],
            message_id="m1",
        ),
        Message(
            role="assistant",
            message_id="m2",
            content=[ReasoningBlock(text="need tool", signature="s"), ToolCallBlock(id="c1", name="f", args={"q": 1})],
        ),
        Message.tool_message([ToolResultBlock(call_id="c1", output="bad", status="error", name="f")], message_id="m3"),
    ]
    lc = to_langchain(messages)
    assert [type(m) for m in lc] == [SystemMessage, HumanMessage, AIMessage, ToolMessage]
    assert [m.id for m in lc] == ["m0", "m1", "m2", "m3"]
    assert lc[1].content == [{"type": "text", "text": "look"}, {"type": "image", "url": "https://x/i.png"}]
    ai = lc[2]
    assert isinstance(ai, AIMessage)
    assert ai.tool_calls == [{"name": "f", "args": {"q": 1}, "id": "c1", "type": "tool_call"}]
    assert ai.content == [{"type": "reasoning", "reasoning": "need tool", "extras": {"signature": "s"}}]
    tool = lc[3]
    assert isinstance(tool, ToolMessage)
    assert (tool.tool_call_id, tool.status, tool.content, tool.name) == ("c1", "error", "bad", "f")
    back = from_langchain(lc)
    assert [m.message_id for m in back] == ["m0", "m1", "m2", "m3"]
    assert first_difference(messages, back, "langchain") is None


def test_reads_openai_style_parts_and_reasoning_kwargs() -> None:
    from langchain_core.messages import AIMessage, HumanMessage

    human = HumanMessage(content=[{"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBO"}}, "hi"])
    ai = AIMessage(content="answer", additional_kwargs={"reasoning_content": "because"})
    user, assistant = from_langchain([human, ai])
    assert user.content == [
        ImageBlock(media=MediaRef(kind="data", data_base64="iVBO", mime_type="image/png")),
        TextBlock(text="hi"),
    ]
    assert assistant.content == [ReasoningBlock(text="because"), TextBlock(text="answer")]


def test_tau_bench_round_trips_with_ids() -> None:
    for record in tau_trajectories()[:40]:
        ours = from_openai_chat(record["traj"])
        back = from_langchain(to_langchain(ours, passthrough=False))
        assert first_difference(ours, back, "langchain") is None
        assert [m.message_id for m in back] == [m.message_id for m in ours]


def test_unknown_langchain_block_and_message_type_pass_through() -> None:
    from langchain_core.messages import ChatMessage, HumanMessage

    from windowkeeper.llm.formats.registry import get_format

    items = [
        HumanMessage(content="ok"),
        HumanMessage(content=[{"type": "hologram", "x": 1}], id="h"),
        ChatMessage(role="critic", content="y", id="c"),
    ]
    fmt = get_format("langchain")
    read = fmt.read(items)
    assert read[1].text().startswith("[unknown hologram]") and read[2].role == "user"
    assert fmt.write_plain(read) == items
    with pytest.raises(FormatError) as err:
        from_langchain([HumanMessage(content="ok"), HumanMessage(content=[{"text": "no type"}])])
    assert (err.value.index, err.value.key) == (1, "content[0].type")


def test_missing_langchain_raises_install_hint(monkeypatch: pytest.MonkeyPatch) -> None:
    real_import = builtins.__import__

    def fake_import(name: str, *args: Any, **kwargs: Any) -> Any:
        if name.startswith("langchain_core"):
            raise ImportError(f"No module named {name!r}")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", fake_import)
    with pytest.raises(MissingDependencyError) as err:
        to_langchain([Message.text_message("hi")])
    assert err.value.package == "langchain-core" and err.value.extra == "langchain"
    assert 'pip install "windowkeeper[langchain]"' in str(err.value)


def test_read_messages_are_those_the_constructor_makes_field_for_field() -> None:
    """The reader builds its messages without pydantic's second validation pass (`read_message`); each must be the
    message ``Message(...)`` makes from the same values: every field, the fields set, the fingerprint, the content
    a `BlockList` that reports edits."""
    from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage

    from windowkeeper.llm.formats._common import PENDING_ID
    from windowkeeper.llm.formats.langchain import _to_message
    from windowkeeper.messages import BlockList

    calls = [{"name": "f", "args": {"q": 1, "deep": {"x": [1, 2.5, None]}}, "id": "c1"}]
    cases: list[tuple[Any, dict[str, Any]]] = [
        (SystemMessage("be brief"), {"role": "system", "content": [TextBlock(text="be brief")]}),
        (
            HumanMessage("hi \ud83d", name="ann"),
            {"role": "user", "content": [TextBlock(text="hi \ud83d")], "metadata": {"name": "ann"}},
        ),
        (HumanMessage(""), {"role": "user", "content": []}),
        (
            HumanMessage([{"type": "text", "text": "look"}, {"type": "image", "url": "https://x/i.png"}]),
            {
                "role": "user",
                "content": [TextBlock(text="look"), ImageBlock(media=MediaRef(url="https://x/i.png"))],
            },
        ),
        (
            AIMessage("", tool_calls=calls, additional_kwargs={"reasoning_content": "think"}, name="bot"),
            {
                "role": "assistant",
                "content": [ReasoningBlock(text="think"), ToolCallBlock(id="c1", name="f", args=calls[0]["args"])],
                "metadata": {"name": "bot"},
                "tools_calls": [
                    {
                        "id": "c1",
                        "type": "function",
                        "function": {"name": "f", "arguments": '{"q":1,"deep":{"x":[1,2.5,null]}}'},
                    }
                ],
            },
        ),
        (AIMessage("done"), {"role": "assistant", "content": [TextBlock(text="done")], "tools_calls": None}),
        (
            ToolMessage("out", tool_call_id="c1", name="f", status="error"),
            {"role": "tool", "content": [ToolResultBlock(call_id="c1", output="out", status="error", name="f")]},
        ),
    ]
    for lc_message, fields in cases:
        read = _to_message(lc_message, 3)
        made = Message(message_id=PENDING_ID, **fields)
        assert type(read.content) is BlockList
        mine, theirs = dict(read.__dict__), dict(made.__dict__)
        assert isinstance(mine.pop("timestamp"), float) and isinstance(theirs.pop("timestamp"), float)
        assert mine == theirs, lc_message
        assert read.__pydantic_fields_set__ == made.__pydantic_fields_set__, lc_message
        assert read.fingerprint() == made.fingerprint()
        fingerprint = read.fingerprint()
        read.content.append(TextBlock(text="more"))  # the content list reports in-place edits to its message
        assert read.fingerprint() != fingerprint


def test_langchain_0_3_data_blocks_are_read_and_pass_through() -> None:
    """The 0.3 data block shape (``source_type`` with ``data``, ``id``, ``url`` or ``text``), which LangChain 1.x still
    accepts and older code still sends, was refused ("media block needs 'base64', 'file_id' or 'url')."""
    from langchain_core.messages import HumanMessage

    from windowkeeper.blocks import DocumentBlock
    from windowkeeper.llm.formats.registry import get_format

    parts: list[Any] = [
        {"type": "image", "source_type": "base64", "data": "iVBORw0KGgo=", "mime_type": "image/png"},
        {"type": "image", "source_type": "url", "url": "https://example.org/a.png"},
        {"type": "file", "source_type": "id", "id": "file-abc", "mime_type": "application/pdf"},
        {
            "type": "file",
            "source_type": "base64",
            "data": "JVBERi0=",
            "mime_type": "application/pdf",
            "metadata": {"filename": "report.pdf"},
        },
        {"type": "file", "source_type": "text", "text": "plain notes", "mime_type": "text/plain"},
    ]
    items = [HumanMessage(content=[{"type": "text", "text": "Look at these."}, *parts], id="h1")]
    fmt = get_format("langchain")
    read = fmt.read(items)
    blocks = read[0].content[1:]
    assert [type(b).__name__ for b in blocks] == [
        "ImageBlock",
        "ImageBlock",
        "DocumentBlock",
        "DocumentBlock",
        "DocumentBlock",
    ]
    assert isinstance(blocks[0], ImageBlock) and blocks[0].media.data_base64 == "iVBORw0KGgo="
    assert (
        isinstance(blocks[2], DocumentBlock) and blocks[2].media is not None and blocks[2].media.file_id == "file-abc"
    )
    assert isinstance(blocks[3], DocumentBlock) and blocks[3].media is not None
    assert blocks[3].media.filename == "report.pdf"
    assert isinstance(blocks[4], DocumentBlock) and blocks[4].text == "plain notes"
    assert fmt.write_plain(read) == items


def test_an_invalid_tool_call_keeps_its_answer() -> None:
    """A call whose arguments did not parse sits in ``invalid_tool_calls``; LangChain still sends it to the provider
    and the agent answers it (an error tool message). It was not read as a call, so the answer was an orphan tool
    result that a trim could send without its call."""
    from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

    from windowkeeper.units import validate

    bad = {"type": "invalid_tool_call", "id": "bad1", "name": "sh", "args": "{not json", "error": "bad json"}
    items = [
        HumanMessage("List the files.", id="h"),
        AIMessage(content="", tool_calls=[{"id": "ok1", "name": "ls", "args": {}}], invalid_tool_calls=[bad], id="a"),
        ToolMessage(content="a.py", tool_call_id="ok1", id="t1"),
        ToolMessage(content="Error: invalid arguments", tool_call_id="bad1", status="error", id="t2"),
    ]
    read = from_langchain(items)
    assert [(b.id, b.tool_type) for b in read[1].tool_call_blocks()] == [("ok1", None), ("bad1", "invalid_tool_call")]
    assert validate(read, "openai") == []
    back = to_langchain(read)
    assert back[1].tool_calls == items[1].tool_calls
    assert [(c["id"], c["args"]) for c in back[1].invalid_tool_calls] == [("bad1", "{not json")]
    assert from_openai_chat(to_openai_chat(read))[1].tool_call_blocks()[1].id == "bad1"


def test_a_tool_message_keeps_the_image_its_tool_returned() -> None:
    from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

    from windowkeeper.tokens import default_counter

    shot = "iVBORw0KGgo" * 8000  # an 88 KB screenshot
    image = {"type": "image", "base64": shot, "mime_type": "image/png"}
    items = [
        HumanMessage("Take a screenshot.", id="h"),
        AIMessage(content="", tool_calls=[{"id": "c1", "name": "computer", "args": {}}], id="a"),
        ToolMessage(content=[{"type": "text", "text": "done"}, image], tool_call_id="c1", id="t"),
    ]
    read = from_langchain(items)
    assert [type(b).__name__ for b in read[2].content] == ["ToolResultBlock", "ImageBlock"]
    assert default_counter().count_message(read[2]) < 2_000  # an image, not 88 KB of base64 text
    back = to_langchain(read)
    assert back[2].content == [{"type": "text", "text": "done"}, image]


def test_a_tool_use_block_that_repeats_a_tool_call_is_read_once() -> None:
    """ChatAnthropic keeps each call both in ``tool_calls`` and as a ``tool_use`` block of the content; the block
    was read as an unknown part, so the call's arguments counted twice."""
    from langchain_core.messages import AIMessage

    from windowkeeper.llm.formats.registry import get_format

    use = {"type": "tool_use", "id": "toolu_1", "name": "read_file", "input": {"path": "src/app.py"}}
    message = AIMessage(
        content=[{"type": "text", "text": "Reading it."}, use],
        tool_calls=[{"id": "toolu_1", "name": "read_file", "args": {"path": "src/app.py"}}],
        id="a1",
    )
    fmt = get_format("langchain")
    read = fmt.read([message])
    assert [type(b).__name__ for b in read[0].content] == ["TextBlock", "ToolCallBlock"]
    assert fmt.write_plain(read) == [message]  # unchanged, it goes out whole
