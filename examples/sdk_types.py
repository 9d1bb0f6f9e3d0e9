"""A converter's result goes straight into each SDK call, and ``mypy --strict`` accepts it (no casts, no Any).

`to_openai_chat`, `to_anthropic(reasoning="signed")` and `to_gemini(spelling="sdk")` are typed with the SDKs' own
request types (see ``windowkeeper.llm.formats.wire``), so the same conversation is sent to OpenAI, Anthropic and
Gemini below exactly as written. ``tests/docs/test_typecheck.py`` runs mypy --strict on this file; running it
talks to the local fake provider servers, offline.

    python examples/sdk_types.py
"""

from __future__ import annotations

import anthropic
import openai
from google import genai
from google.genai import types as genai_types

from windowkeeper import Message, to_anthropic, to_gemini, to_openai_chat
from windowkeeper.blocks import TextBlock, ToolCallBlock, ToolResultBlock
from windowkeeper.llm.formats import AnthropicMessage, GeminiSDKContent, OpenAIChatMessage
from windowkeeper.testing.fake_servers import FakeAnthropicServer, FakeGeminiServer, FakeOpenAIServer, FakeReply

CONVERSATION = [
    Message.text_message("You answer in one sentence.", role="system"),
    Message.text_message("What is in notes.txt?"),
    Message(role="assistant", content=[ToolCallBlock(id="call_1", name="read_file", args={"path": "notes.txt"})]),
    Message(role="tool", content=[ToolResultBlock(call_id="call_1", name="read_file", output="Buy milk.")]),
    Message(role="assistant", content=[TextBlock(text="It says: buy milk.")]),
    Message.text_message("Anything else?"),
]


def ask_openai(base_url: str) -> str | None:
    messages: list[OpenAIChatMessage] = to_openai_chat(CONVERSATION, include_reasoning=False)
    with openai.OpenAI(base_url=base_url, api_key="test") as client:
        reply = client.chat.completions.create(model="gpt-4o-mini", messages=messages)
    return reply.choices[0].message.content


def ask_anthropic(base_url: str) -> str:
    system, messages = to_anthropic(CONVERSATION, reasoning="signed")
    typed: list[AnthropicMessage] = messages
    with anthropic.Anthropic(base_url=base_url, api_key="test") as client:
        reply = client.messages.create(
            model="claude-haiku-4-5", max_tokens=256, system=system or anthropic.omit, messages=typed
        )
    return "".join(block.text for block in reply.content if block.type == "text")


def ask_gemini(base_url: str) -> str | None:
    system, contents = to_gemini(CONVERSATION, reasoning="signed", spelling="sdk")
    typed: list[GeminiSDKContent] = contents
    with genai.Client(api_key="test", http_options=genai_types.HttpOptions(base_url=base_url)) as client:
        reply = client.models.generate_content(
            model="gemini-2.0-flash", contents=typed, config={"system_instruction": system}
        )
    return reply.text


def main() -> None:
    with FakeOpenAIServer([FakeReply(text="Nothing else.")]) as srv:
        print(f"openai: {ask_openai(srv.base_url)}")
    with FakeAnthropicServer([FakeReply(text="Nothing else.")]) as srv:
        print(f"anthropic: {ask_anthropic(srv.base_url)}")
    with FakeGeminiServer([FakeReply(text="Nothing else.")]) as srv:
        print(f"gemini: {ask_gemini(srv.base_url)}")


if __name__ == "__main__":
    main()
