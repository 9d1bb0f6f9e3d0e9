"""Provider detection, create_client configuration errors, missing SDKs, the sync helper and ScriptedClient."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from windowkeeper.blocks import TextBlock, ToolCallBlock
from windowkeeper.errors import ConfigurationError, MissingDependencyError, ProviderError
from windowkeeper.llm import LLMRequest, ScriptedClient, complete, create_client, detect_provider
from windowkeeper.llm.anthropic_client import AnthropicClient
from windowkeeper.llm.google_client import GoogleClient
from windowkeeper.llm.openai_client import OpenAIClient
from windowkeeper.messages import Message
from windowkeeper.tokens import default_counter


@pytest.mark.parametrize(
    ("model", "provider", "expected"),
    [
        ("gemini-2.0-flash", None, ("google", "gemini-2.0-flash")),
        ("gpt-4o-mini", None, ("openai", "gpt-4o-mini")),
        ("o1-mini", None, ("openai", "o1-mini")),
        ("o3", None, ("openai", "o3")),
        ("o4-mini", None, ("openai", "o4-mini")),
        ("claude-3-5-haiku-latest", None, ("anthropic", "claude-3-5-haiku-latest")),
        ("openai/gpt-4o", None, ("openai", "gpt-4o")),
        ("anthropic/claude-sonnet-4", None, ("anthropic", "claude-sonnet-4")),
        ("google/gemini-1.5-pro", None, ("google", "gemini-1.5-pro")),
        ("gemini/gemini-1.5-pro", None, ("google", "gemini-1.5-pro")),
        ("llama-3.1-70b", None, ("openai", "llama-3.1-70b")),
        ("meta-llama/Llama-3-8b", None, ("openai", "meta-llama/Llama-3-8b")),
        ("my-finetune", "anthropic", ("anthropic", "my-finetune")),
        ("gpt-4o", "gemini", ("google", "gpt-4o")),
        ("  GPT-4o  ", None, ("openai", "GPT-4o")),
    ],
)
def test_detect_provider_table(model: str, provider: str | None, expected: tuple[str, str]) -> None:
    assert detect_provider(model, provider) == expected


def test_detect_provider_rejects_bad_input() -> None:
    with pytest.raises(ConfigurationError, match="non-empty"):
        detect_provider("")
    with pytest.raises(ConfigurationError, match="unknown provider 'azur'"):
        detect_provider("gpt-4o", "azur")
    with pytest.raises(ConfigurationError, match="drop one"):
        detect_provider("anthropic/claude-3", "openai")


def test_create_client_picks_the_class_without_network() -> None:
    assert isinstance(create_client("gpt-4o-mini", api_style="chat"), OpenAIClient)
    assert isinstance(create_client("claude-3-5-haiku-latest"), AnthropicClient)
    google = create_client("google/gemini-2.0-flash")
    assert isinstance(google, GoogleClient)
    assert (google.provider, google.model) == ("google", "gemini-2.0-flash")


@pytest.mark.parametrize(
    ("kwargs", "needle"),
    [
        ({"api_style": "completions"}, "api_style"),
        ({"timeout": 0}, "timeout"),
        ({"max_retries": -1}, "max_retries"),
    ],
)
def test_create_client_bad_configuration(kwargs: dict[str, object], needle: str) -> None:
    with pytest.raises(ValueError, match=needle):
        create_client("gpt-4o-mini", **kwargs)  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError):
        create_client("claude-3-5-haiku-latest", **kwargs)  # type: ignore[arg-type]


def test_missing_sdk_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "anthropic", None)
    with pytest.raises(MissingDependencyError) as info:
        create_client("claude-3-5-haiku-latest")
    assert isinstance(info.value, ImportError)
    assert info.value.extra == "anthropic"
    assert 'pip install "windowkeeper[anthropic]"' in str(info.value)


@pytest.mark.parametrize(
    ("blocked", "model", "extra"),
    [("openai", "gpt-4o", "openai"), ("google.genai", "gemini-2.0-flash", "google")],
)
def test_missing_sdk_in_a_fresh_interpreter(blocked: str, model: str, extra: str) -> None:
    code = textwrap.dedent(
        f"""
        import sys
        sys.modules[{blocked!r}] = None
        import windowkeeper.llm as llm
        try:
            llm.create_client({model!r})
        except ImportError as exc:
            print(type(exc).__name__, exc)
        """,
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert out.stdout.startswith("MissingDependencyError")
    assert f'pip install "windowkeeper[{extra}]"' in out.stdout


def test_request_validation_names_the_field() -> None:
    with pytest.raises(ValueError, match="max_output_tokens"):
        LLMRequest(messages=[], max_output_tokens=0)
    with pytest.raises(ValueError, match=r"tools\[1\] has no 'name'"):
        LLMRequest(messages=[], tools=[{"name": "a"}, {"description": "nameless"}])


async def test_sync_complete_refuses_inside_a_running_loop() -> None:
    client = ScriptedClient(["x"])
    with pytest.raises(RuntimeError, match=r"await client\.acomplete"):
        complete(client, LLMRequest(messages=[]))
    assert client.requests == []


async def test_scripted_client_replies_records_and_counts() -> None:
    scripted_reply = Message(
        role="assistant",
        message_id="a-fixed",
        content=[ToolCallBlock(id="c1", name="search", args={"q": "tea"})],
    )
    client = ScriptedClient(
        ["hello", scripted_reply, lambda req: f"saw {len(req.messages)} messages"],
        default="fallback",
    )
    request = LLMRequest(messages=[Message.text_message("hi there")], system="sys prompt", max_output_tokens=5)
    first = await client.acomplete(request)
    second = await client.acomplete(request)
    third = await client.acomplete(request)
    fourth = await client.acomplete(request)
    fifth = await client.acomplete(request)

    assert [first.text, third.text, fourth.text, fifth.text] == ["hello", "saw 1 messages", "fallback", "fallback"]
    assert second.message.message_id == "a-fixed"
    assert second.message.tools_calls == [
        {"id": "c1", "type": "function", "function": {"name": "search", "arguments": '{"q": "tea"}'}},
    ]
    assert fourth.message.message_id != fifth.message.message_id
    assert len(client.requests) == 5 and client.requests[0].system == "sys prompt"
    counter = default_counter()
    expected_prompt = counter.count_messages(request.messages) + counter.count_text("sys prompt")
    assert first.usages.prompt_tokens == expected_prompt
    assert first.usages.completion_tokens == counter.count_message(first.message)
    assert first.usages.total_tokens == expected_prompt + first.usages.completion_tokens
    assert isinstance(first.message.content[0], TextBlock)


async def test_scripted_client_async_callable_and_exhaustion() -> None:
    async def reply(request: LLMRequest) -> str:
        return request.messages[-1].text().upper()

    def broken(request: LLMRequest) -> str:
        raise KeyError("nope")

    client = ScriptedClient([reply, broken])
    assert (await client.acomplete(LLMRequest(messages=[Message.text_message("shout")]))).text == "SHOUT"
    with pytest.raises(ProviderError, match="KeyError"):
        await client.acomplete(LLMRequest(messages=[]))
    with pytest.raises(ProviderError, match="no reply left after 2"):
        await client.acomplete(LLMRequest(messages=[]))
    with pytest.raises(ConfigurationError, match=r"replies\[0\]"):
        ScriptedClient([42])  # type: ignore[list-item]
