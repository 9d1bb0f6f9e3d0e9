"""`LLMSummarizer`: asks a model (any `LLMClient`) for the summary.

The old messages go in as one transcript inside a single user message rather than as a replayed conversation:
the model should describe the conversation, not continue it, and a transcript cannot trip provider rules about
tool-call pairing. The previous summary is sent along so a re-summary carries earlier facts forward.

Each request stays within ``input_limit`` tokens (system prompt, previous summary and transcript together, as
counted by ``counter``): the transcript keeps the newest lines that fit and says how many earlier messages it
left out, a single line too long for the room left is cut in the middle, and an oversized previous summary is
cut the same way first. A request that cannot fit is never sent as is.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from .._bridge import Closing
from .._cut import Cut, cut_to_tokens
from .._validate import check_int
from ..errors import ConfigurationError
from ..llm.client import LLMClient, LLMRequest
from ..messages import Message
from ..tokens import TokenCounter, default_counter
from .limits import newest_within
from .transcript import render_message, render_transcript

logger = logging.getLogger(__name__)

DEFAULT_SUMMARY_PROMPT = (
    "You write the running memory of a conversation between a user and an AI assistant. "
    "Summarize the transcript you are given in the third person, briefly and only with what it states. "
    "Keep every concrete fact: names, numbers with their units, dates, file paths, identifiers, URLs, "
    "what tools were called and what they returned, errors, decisions taken and questions still open. "
    "If an earlier summary is provided, fold its facts into the new summary instead of dropping them. "
    "Reply with the summary text only, no preamble."
)
DEFAULT_LLM_INPUT_LIMIT = 100_000
"""Tokens of one summary request by default: under every current frontier model's window with room to spare."""
_REQUEST_SLACK = 64
"""Tokens kept free for the request framing a counter cannot see (role markers, the output instruction line)."""
INPUT_LIMIT_CUT = Cut(
    marker=" … [cut: over the summarizer's input limit] … ",
    search="geometric",
    alone="… [cut: over the summarizer's input limit] …",
)
"""How a text over the summarizer's input limit is cut: an empty result when not even the marker fits, which
the prompt builder then leaves out."""


def build_summary_prompt(
    messages: Sequence[Message],
    *,
    previous_summary: str | None,
    max_tokens: int,
    max_result_chars: int = 2000,
) -> str:
    """The user-message text a summarizer model receives."""
    transcript = render_transcript(messages, max_result_chars=max_result_chars)
    return _compose(previous_summary, transcript, max_tokens)


def _compose(previous_summary: str | None, transcript: str, max_tokens: int, omitted: int = 0) -> str:
    sections: list[str] = []
    if previous_summary and previous_summary.strip():
        sections.append(f"Earlier summary:\n{previous_summary.strip()}")
    if omitted:
        transcript = f"({omitted} earlier messages are not shown: over the summarizer's input limit)\n{transcript}"
    sections.append(f"Transcript:\n{transcript}")
    sections.append(f"Write the updated summary in at most {max_tokens} tokens.")
    return "\n\n".join(sections)


def bounded_summary_prompt(
    messages: Sequence[Message],
    *,
    previous_summary: str | None,
    max_tokens: int,
    room: int,
    counter: TokenCounter,
    max_result_chars: int = 2000,
) -> tuple[str, int]:
    """The prompt text for the newest messages that fit in ``room`` tokens, and how many messages it covers.

    The previous summary is kept first (cut in the middle when it alone takes more than half the room), then
    transcript lines are taken from the newest end; the newest line is cut when even it does not fit.
    """
    count_text = counter.count_text
    previous = previous_summary.strip() if previous_summary else None
    if previous and count_text(previous) > room // 2:
        previous = cut_to_tokens(previous, room // 2, count_text, INPUT_LIMIT_CUT) or None
    frame = count_text(_compose(previous, "", max_tokens, omitted=len(messages)))
    left = max(room - frame, 0)
    lines: dict[int, str] = {}

    def cost(index: int) -> int:
        lines[index] = render_message(messages[index], max_result_chars=max_result_chars)
        return count_text(lines[index]) + 1

    rendered = [lines[i] for i in newest_within(range(len(messages)), left, cost)]
    if not rendered and messages:
        newest = render_message(messages[-1], max_result_chars=max_result_chars)
        cut = cut_to_tokens(newest, left - 1, count_text, INPUT_LIMIT_CUT)
        rendered = [cut] if cut else []
    omitted = len(messages) - len(rendered)
    return _compose(previous, "\n".join(rendered), max_tokens, omitted=omitted), len(rendered)


class LLMSummarizer(Closing):
    """`Summarizer` backed by a model; ``max_tokens`` becomes the call's ``max_output_tokens``.

    ``system_prompt`` replaces the default instruction for every call; a call's ``instructions`` argument
    replaces it for that call only (this is how `SummaryContextManager`'s ``summary_system_prompt`` arrives).
    Provider failures propagate as `ProviderError`: the caller decides to leave its state unchanged.

    The summarizer owns its client: `aclose` (or ``async with``; `close`/``with`` from sync code) closes it too,
    so a summarizer built by `get_summarizer` leaves no connection open.
    """

    closing_name = "summarizer"

    def __init__(
        self,
        client: LLMClient,
        *,
        system_prompt: str | None = None,
        max_result_chars: int = 2000,
        input_limit: int = DEFAULT_LLM_INPUT_LIMIT,
        counter: TokenCounter | None = None,
    ) -> None:
        if not hasattr(client, "acomplete"):
            raise ConfigurationError(
                f"client must be an LLMClient with an async acomplete(request) method, got {type(client).__name__}",
            )
        if max_result_chars < 0:
            raise ConfigurationError(f"max_result_chars must be >= 0, got {max_result_chars}")
        self.client = client
        self.system_prompt = system_prompt or DEFAULT_SUMMARY_PROMPT
        self.max_result_chars = max_result_chars
        self.input_limit = check_int("input_limit", input_limit, minimum=_REQUEST_SLACK + 64)
        self.counter: TokenCounter = counter if counter is not None else default_counter()

    def __repr__(self) -> str:
        return f"LLMSummarizer(client={self.client!r})"

    async def aclose(self) -> None:
        """Close the client's connections on the running loop (a client without ``aclose`` holds none)."""
        close = getattr(self.client, "aclose", None)
        if close is not None:
            await close()

    def request_tokens(self, system: str, prompt: str) -> int:
        """Input tokens of a request with ``system`` and one user message ``prompt``, as ``counter`` counts them."""
        user = Message.text_message(prompt, role="user", timestamp=None)
        return self.counter.count_text(system) + self.counter.count_messages([user])

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
        system = instructions or self.system_prompt
        room = self.input_limit - _REQUEST_SLACK - self.request_tokens(system, "")
        if room <= 0:
            raise ConfigurationError(
                f"the summarizer's system prompt alone costs more than input_limit={self.input_limit} tokens; "
                "raise input_limit or shorten the prompt",
            )
        prompt, covered = bounded_summary_prompt(
            messages,
            previous_summary=previous_summary,
            max_tokens=max_tokens,
            room=room,
            counter=self.counter,
            max_result_chars=self.max_result_chars,
        )
        if covered < len(messages):
            logger.info(
                "summary request covers the newest %d of %d messages (input_limit=%d tokens)",
                covered,
                len(messages),
                self.input_limit,
            )
        request = LLMRequest(
            messages=[Message.text_message(prompt, role="user")],
            system=system,
            max_output_tokens=max_tokens,
        )
        response = await self.client.acomplete(request)
        summary = response.text.strip()
        logger.debug("summarized %d messages into %d chars", len(messages), len(summary))
        return summary
