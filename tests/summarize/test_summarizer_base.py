"""as_summarizer adapters, render_transcript lines and get_summarizer."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from windowkeeper.blocks import ImageBlock, MediaRef, ReasoningBlock, TextBlock, ToolCallBlock, ToolResultBlock
from windowkeeper.errors import ConfigurationError
from windowkeeper.llm.openai_client import OpenAIClient
from windowkeeper.messages import Message
from windowkeeper.summarize import (
    ExtractiveSummarizer,
    LLMSummarizer,
    Summarizer,
    as_summarizer,
    get_summarizer,
    render_transcript,
)

MSGS = [Message.text_message("hello", message_id="m1")]


class AsyncOne:
    async def summarize(
        self,
        messages: Sequence[Message],
        *,
        previous_summary: str | None = None,
        max_tokens: int = 600,
        instructions: str | None = None,
    ) -> str:
        return f"async {len(messages)} {previous_summary} {max_tokens} {instructions}"


class SyncOne:
    def summarize(self, messages: Sequence[Message], **kw: object) -> str:
        return f"sync {kw['previous_summary']}"


async def test_objects_with_summarize_are_accepted() -> None:
    one = AsyncOne()
    assert as_summarizer(one) is one
    assert isinstance(one, Summarizer)
    assert await as_summarizer(one).summarize(MSGS, previous_summary="p", max_tokens=9, instructions="i") == (
        "async 1 p 9 i"
    )
    assert await as_summarizer(SyncOne()).summarize(MSGS, previous_summary="old") == "sync old"


async def test_plain_callables_by_signature() -> None:
    def only_messages(messages: list[Message]) -> str:
        return f"n={len(messages)}"

    def with_previous(messages: list[Message], previous_summary: str | None) -> str:
        return f"prev={previous_summary}"

    async def async_with_budget(messages: list[Message], previous: str | None = None, *, max_tokens: int = 0) -> str:
        return f"budget={max_tokens} prev={previous}"

    def returns_none(messages: list[Message]) -> None:
        return None

    assert await as_summarizer(only_messages).summarize(MSGS, previous_summary="x") == "n=1"
    assert await as_summarizer(with_previous).summarize(MSGS, previous_summary="x") == "prev=x"
    assert await as_summarizer(async_with_budget).summarize(MSGS, previous_summary="y", max_tokens=42) == (
        "budget=42 prev=y"
    )
    assert await as_summarizer(lambda m, p: "lam").summarize(MSGS) == "lam"
    assert await as_summarizer(returns_none).summarize(MSGS) == ""


async def test_bad_summarizers_fail_early_or_clearly() -> None:
    with pytest.raises(ConfigurationError, match="summarizer must be"):
        as_summarizer("gpt-4o-mini")
    with pytest.raises(ConfigurationError, match="summarizer must be"):
        as_summarizer(42)
    with pytest.raises(ConfigurationError, match="requires 3 positional"):
        as_summarizer(lambda a, b, c: "x")
    with pytest.raises(ConfigurationError, match="no positional"):
        as_summarizer(lambda: "x")
    with pytest.raises(TypeError, match="must return a str"):
        await as_summarizer(lambda m: 7).summarize(MSGS)


def test_render_transcript_lines_and_caps() -> None:
    messages = [
        Message.text_message("Be brief.", role="system"),
        Message.text_message("Weather in\n  Paris?"),
        Message(
            role="assistant",
            content=[
                ReasoningBlock(text="private thoughts"),
                TextBlock(text="Checking."),
                ToolCallBlock(id="c1", name="get_weather", args={"city": "Paris", "units": "C"}),
                ToolCallBlock(id="c2", name="get_time", args={}),
            ],
        ),
        Message.tool_message([ToolResultBlock(call_id="c1", name="get_weather", output="x" * 2500)]),
        Message.tool_message([ToolResultBlock(call_id="c2", output={"t": "10:00"}, status="error")]),
        Message(role="user", content=[ImageBlock(media=MediaRef(url="https://e.x/cat.png"), alt_text="a cat")]),
        Message(role="assistant", content=[]),
    ]
    lines = render_transcript(messages).split("\n")
    assert lines == [
        "system: Be brief.",
        "user: Weather in Paris?",
        'assistant: Checking. get_weather({"city": "Paris", "units": "C"}) get_time({})',
        "tool: [get_weather] " + "x" * 2000 + "… [truncated 500 chars]",
        'tool: [c2 error] {"t": "10:00"}',
        "user: [image a cat]",
        "assistant:",
    ]
    assert (
        render_transcript(messages[3:4], max_result_chars=10)
        == "tool: [get_weather] xxxxxxxxxx… [truncated 2,490 chars]"
    )
    with pytest.raises(ConfigurationError, match="max_result_chars"):
        render_transcript(messages, max_result_chars=-1)


def test_get_summarizer() -> None:
    assert isinstance(get_summarizer("extractive"), ExtractiveSummarizer)
    llm = get_summarizer("gpt-4o-mini", api_style="chat", base_url="http://127.0.0.1:9/v1", api_key="k")
    assert isinstance(llm, LLMSummarizer)
    assert isinstance(llm.client, OpenAIClient) and llm.client.api_style == "chat"
    with pytest.raises(ConfigurationError, match="base_url"):
        get_summarizer("extractive", base_url="http://x")
    with pytest.raises(ConfigurationError, match="api_style"):
        get_summarizer("gpt-4o-mini", api_style="bogus")
    with pytest.raises(ConfigurationError, match="model name"):
        get_summarizer("")
