"""SummaryContextManager with the real OpenAI SDK pointed at a local server speaking the OpenAI wire format."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

import pytest

from windowkeeper.blocks import ToolCallBlock, ToolResultBlock
from windowkeeper.context import SummaryContextManager
from windowkeeper.messages import Message
from windowkeeper.state import AgentState
from windowkeeper.summarize import DEFAULT_SUMMARY_PROMPT
from windowkeeper.testing.fake_servers import FakeOpenAIServer

# Imported here, not on the first summary: the SDK's import (~0.7 s) would otherwise count against the short
# timeouts the failure tests give the summarizer, and the request would never be sent.
pytest.importorskip("openai")

LONG = "x" * 3000


def conversation() -> list[Message]:
    return [
        Message.text_message("You are helpful.", role="system", message_id="s"),
        Message.text_message("My name is Sam.", message_id="u0"),
        Message(
            message_id="c0",
            role="assistant",
            content=[ToolCallBlock(id="call_a", name="lookup", args={"q": "Sam"})],
        ),
        Message.tool_message([ToolResultBlock(call_id="call_a", output=LONG)], message_id="r0"),
        Message.text_message("Sam is a returning user.", role="assistant", message_id="a0"),
        Message.text_message("What do I like?", message_id="u1"),
        Message.text_message("Tea, as far as I know.", role="assistant", message_id="a1"),
    ]


EXPECTED_LINES = [
    "user: My name is Sam.",
    'assistant: lookup({"q": "Sam"})',
    "tool: [call_a] " + "x" * 2000 + "… [truncated 1,000 chars]",
    "assistant: Sam is a returning user.",
]


@pytest.fixture
def server() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer() as srv:
        yield srv  # type: ignore[misc]


def _manager(srv: FakeOpenAIServer, **kwargs: Any) -> SummaryContextManager[AgentState]:
    options: dict[str, Any] = {
        "max_messages": 5,
        "keep_recent": 2,
        "base_url": srv.base_url,
        "api_key": "test-key",
        "max_retries": 0,
        **kwargs,
    }
    return SummaryContextManager("gpt-4o-mini", **options)


MakeManager = Callable[..., SummaryContextManager[AgentState]]


@pytest.fixture
async def manager(server: FakeOpenAIServer) -> AsyncIterator[MakeManager]:
    """Managers on the fake server, each closed when the test ends (the LLM client it built with it)."""
    made: list[SummaryContextManager[AgentState]] = []

    def make(**kwargs: Any) -> SummaryContextManager[AgentState]:
        made.append(_manager(server, **kwargs))
        return made[-1]

    yield make
    for mgr in made:
        await mgr.aclose()


def texts(value: Any) -> list[str]:
    """Every text string inside a wire payload (content strings and ``text`` fields)."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, list):
        return [t for item in value for t in texts(item)]
    if isinstance(value, dict):
        if "text" in value and isinstance(value["text"], str):
            return [value["text"]]
        if "content" in value:
            return texts(value["content"])
    return []


def assert_prompt(prompt: str, previous: str | None) -> None:
    lines = prompt.split("\n")
    start = lines.index("Transcript:")
    assert lines[start + 1 : start + 1 + len(EXPECTED_LINES)] == EXPECTED_LINES
    assert "u1" not in prompt and "What do I like?" not in prompt  # kept messages are not summarized
    if previous:
        assert prompt.startswith(f"Earlier summary:\n{previous}\n\nTranscript:\n")
    else:
        assert prompt.startswith("Transcript:\n")


async def test_responses_request_and_summary(manager: MakeManager, server: FakeOpenAIServer) -> None:
    server.reply("Sam is a returning user; a lookup was run.")
    mgr = manager(summary_system_prompt="Summarize tersely.", max_summary_tokens=123)
    state = AgentState(context=conversation(), context_summary="Earlier: Sam joined.")
    await mgr.atrim_context(state)

    req = server.last_request
    assert req.path == "/v1/responses"
    body = req.json
    assert body["model"] == "gpt-4o-mini"
    assert body["instructions"] == "Summarize tersely."
    assert body["max_output_tokens"] == 123
    prompts = texts(body["input"])
    assert len(prompts) == 1
    assert_prompt(prompts[0], None)  # appended, so the earlier summary is not sent to be folded in
    assert state.context_summary == "Earlier: Sam joined.\n\nSam is a returning user; a lookup was run."
    assert [m.message_id for m in state.context] == ["s", "u1", "a1"]
    assert len(server.requests) == 1


async def test_chat_api_style_request(manager: MakeManager, server: FakeOpenAIServer) -> None:
    server.reply("Chat summary.")
    mgr = manager(api_style="chat")
    state = AgentState(context=conversation())
    await mgr.atrim_context(state)

    req = server.last_request
    assert req.path == "/v1/chat/completions"
    body = req.json
    assert body["model"] == "gpt-4o-mini"
    assert body["max_completion_tokens"] == 600
    assert body["messages"][0] == {"role": "system", "content": DEFAULT_SUMMARY_PROMPT}
    assert [m["role"] for m in body["messages"]] == ["system", "user"]
    (prompt,) = texts(body["messages"][1])
    assert_prompt(prompt, None)
    assert state.context_summary == "Chat summary."
    assert [m.message_id for m in state.context] == ["s", "u1", "a1"]


def test_sync_calls_reuse_one_summarizer(server: FakeOpenAIServer) -> None:
    server.reply("first").reply("second")
    mgr = _manager(server)
    one = mgr.trim_context(AgentState(context=conversation()))
    summarizer = mgr.summarizer
    two = mgr.trim_context(AgentState(context=conversation()))
    assert mgr.summarizer is summarizer
    assert (one.context_summary, two.context_summary) == ("first", "second")
    assert len(server.requests) == 2
    mgr.close()
    assert summarizer.client._clients.closed == 1  # the one SDK client of the sync calls, closed with the manager


@pytest.mark.parametrize("failure", ["500", "timeout", "empty"])
async def test_failures_leave_state_unchanged(
    manager: MakeManager, server: FakeOpenAIServer, failure: str, caplog: pytest.LogCaptureFixture
) -> None:
    if failure == "500":
        server.fail(500)
    elif failure == "timeout":
        server.sleep(6.0)
    else:
        server.empty()
    mgr = manager(timeout=2.0)  # room for the SDK client's first request on a loaded machine; the sleep outlasts it
    ctx = conversation()
    state = AgentState(context=list(ctx), context_summary="keep")
    with caplog.at_level(logging.WARNING, logger="windowkeeper.context.summary"):
        out = await mgr.atrim_context(state)
    assert out.context == ctx
    assert out.context_summary == "keep"
    assert len(server.requests) == 1
    messages = [r.getMessage() for r in caplog.records if r.name == "windowkeeper.context.summary"]
    if failure != "empty":  # an empty reply may be reported by the client as a failure or come back as ""
        assert messages == ["Summarisation LLM call failed"]
    assert mgr.last_metrics is not None and mgr.last_metrics.summaries_made == 0
