"""`LLMSummarizer`: asks a model (any `LLMClient`) for the summary.

The old messages go in as one transcript inside a single user message rather than as a replayed conversation:
the model should describe the conversation, not continue it, and a transcript cannot trip provider rules about
tool-call pairing. The previous summary is sent along so a re-summary carries earlier facts forward.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from ..errors import ConfigurationError
from ..llm.client import LLMClient, LLMRequest
from ..messages import Message
from .transcript import render_transcript

logger = logging.getLogger(__name__)

DEFAULT_SUMMARY_PROMPT = (
    "You write the running memory of a conversation between a user and an AI assistant. "
    "Summarize the transcript you are given in the third person, briefly and only with what it states. "
    "Keep every concrete fact: names, numbers with their units, dates, file paths, identifiers, URLs, "
    "what tools were called and what they returned, errors, decisions taken and questions still open. "
    "If an earlier summary is provided, fold its facts into the new summary instead of dropping them. "
    "Reply with the summary text only, no preamble."
)


def build_summary_prompt(
    messages: Sequence[Message],
    *,
    previous_summary: str | None,
    max_tokens: int,
    max_result_chars: int = 2000,
) -> str:
    """The user-message text a summarizer model receives."""
    sections: list[str] = []
    if previous_summary and previous_summary.strip():
        sections.append(f"Earlier summary:\n{previous_summary.strip()}")
    sections.append(f"Transcript:\n{render_transcript(messages, max_result_chars=max_result_chars)}")
    sections.append(f"Write the updated summary in at most {max_tokens} tokens.")
    return "\n\n".join(sections)


class LLMSummarizer:
    """`Summarizer` backed by a model; ``max_tokens`` becomes the call's ``max_output_tokens``.

    ``system_prompt`` replaces the default instruction for every call; a call's ``instructions`` argument
    replaces it for that call only (this is how `SummaryContextManager`'s ``summary_system_prompt`` arrives).
    Provider failures propagate as `ProviderError`: the caller decides to leave its state unchanged.
    """

    def __init__(self, client: LLMClient, *, system_prompt: str | None = None, max_result_chars: int = 2000) -> None:
        if not hasattr(client, "acomplete"):
            raise ConfigurationError(
                f"client must be an LLMClient with an async acomplete(request) method, got {type(client).__name__}",
            )
        if max_result_chars < 0:
            raise ConfigurationError(f"max_result_chars must be >= 0, got {max_result_chars}")
        self.client = client
        self.system_prompt = system_prompt or DEFAULT_SUMMARY_PROMPT
        self.max_result_chars = max_result_chars

    def __repr__(self) -> str:
        return f"LLMSummarizer(client={self.client!r})"

    async def summarize(
        self,
        messages: Sequence[Message],
        *,
        previous_summary: str | None = None,
        max_tokens: int = 600,
        instructions: str | None = None,
    ) -> str:
        if max_tokens <= 0:
            raise ConfigurationError(f"max_tokens must be a positive integer, got {max_tokens}")
        prompt = build_summary_prompt(
            messages,
            previous_summary=previous_summary,
            max_tokens=max_tokens,
            max_result_chars=self.max_result_chars,
        )
        request = LLMRequest(
            messages=[Message.text_message(prompt, role="user")],
            system=instructions or self.system_prompt,
            max_output_tokens=max_tokens,
        )
        response = await self.client.acomplete(request)
        summary = response.text.strip()
        logger.debug("summarized %d messages into %d chars", len(messages), len(summary))
        return summary


__all__ = ["DEFAULT_SUMMARY_PROMPT", "LLMSummarizer", "build_summary_prompt"]
