"""Converters between windowkeeper `Message` lists and provider message formats.

Each ``to_X`` writes plain-JSON dicts a provider SDK accepts; each ``from_X`` reads them back (also single reply
messages, and SDK objects) and raises `windowkeeper.errors.FormatError` naming the message index and key of
malformed input. ``compare`` states what a round trip through each format keeps. ``wire`` types what the
``to_X`` write, so their results pass type-checked to the SDK calls (``windowkeeper.llm.formats.wire``).
"""

from .anthropic import anthropic_blocks_to_message, anthropic_message_to_messages, from_anthropic, to_anthropic
from .compare import FORMATS, Format, canonical, equivalent, first_difference
from .gemini import from_gemini, gemini_content_to_messages, to_gemini
from .langchain import from_langchain, langchain_message_to_message, to_langchain
from .openai_chat import from_openai_chat, message_to_openai_chat, openai_chat_message_to_message, to_openai_chat
from .openai_responses import from_responses_input, message_to_responses_items, to_responses_input
from .wire import (
    AnthropicMessage,
    AnthropicSystem,
    AnthropicTranscriptMessage,
    GeminiContent,
    GeminiSDKContent,
    GeminiSystemInstruction,
    OpenAIChatMessage,
    ResponsesItem,
)

__all__ = [
    "FORMATS",
    "AnthropicMessage",
    "AnthropicSystem",
    "AnthropicTranscriptMessage",
    "Format",
    "GeminiContent",
    "GeminiSDKContent",
    "GeminiSystemInstruction",
    "OpenAIChatMessage",
    "ResponsesItem",
    "anthropic_blocks_to_message",
    "anthropic_message_to_messages",
    "canonical",
    "equivalent",
    "first_difference",
    "from_anthropic",
    "from_gemini",
    "from_langchain",
    "from_openai_chat",
    "from_responses_input",
    "gemini_content_to_messages",
    "langchain_message_to_message",
    "message_to_openai_chat",
    "message_to_responses_items",
    "openai_chat_message_to_message",
    "to_anthropic",
    "to_gemini",
    "to_langchain",
    "to_openai_chat",
    "to_responses_input",
]
