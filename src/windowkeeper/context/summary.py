"""`SummaryContextManager`: replace old turns by a summary so earlier facts survive at a fraction of the tokens.

The split between "summarize" and "keep" is made on a user-message boundary at or before the ``keep_recent``
point. That keeps every tool call with its results, and the kept part starts with a user turn, which Anthropic
and Gemini require and which no manager may fake by inventing a message. So the kept part may hold more than
``keep_recent`` messages.

Failure is never fatal: a summarizer that raises, times out or returns nothing leaves the state exactly as it was
(logged as "Summarisation LLM call failed"), because a context that is too long is recoverable and a lost
history is not.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from typing import Any

from .._validate import check_positive_int
from ..errors import ConfigurationError
from ..messages import Message
from ._policy import remove_completed_tool_sequences, split_system, summary_cut
from .base import BaseContextManager, S, adapt_summarizer
from .message import check_non_negative_int

logger = logging.getLogger(__name__)

API_STYLES = ("responses", "chat")
FAILURE_LOG = "Summarisation LLM call failed"


def estimate_tokens(messages: Sequence[Message]) -> int:
    """The documented trigger estimate: one token per four characters of text plus tool calls' string form.

    Deliberately not the exact counter, so the token trigger fires where the reference says it does.
    """
    chars = 0
    for msg in messages:
        chars += len(msg.text())
        calls = msg.tools_calls or [{"id": c.id, "name": c.name, "args": c.args} for c in msg.tool_call_blocks()]
        if calls:
            chars += len(str(calls))
    return chars // 4


def _is_offline_name(name: str) -> bool:
    from ..summarize import OFFLINE_NAMES

    return name.strip().lower() in OFFLINE_NAMES


def _is_summarizer_like(obj: object) -> bool:
    return callable(getattr(obj, "summarize", None)) or callable(obj)


def _append_summary(previous: str | None, summary: str) -> str:
    """Append ``summary`` after a blank line, without lines the earlier summary already holds word for word.

    Summarizers are shown the earlier summary so they can carry its facts forward, and they often repeat some of
    it; appending those lines again would make the summary grow with every call without adding anything.
    """
    if not previous:
        return summary
    known = {line.strip() for line in previous.splitlines() if line.strip()}
    fresh = "\n".join(line for line in summary.splitlines() if line.strip() not in known).strip()
    return f"{previous}\n\n{fresh}" if fresh else previous


class SummaryContextManager(BaseContextManager[S]):
    """Summarize messages older than the ``keep_recent`` newest ones once the context passes a threshold.

    Triggers (either one): more than ``max_messages`` messages in the context, or an estimated token count (see
    `estimate_tokens`) above ``token_budget``. Both None disables summarizing. On a trigger, the non-system
    messages before the cut (see module docs) are summarized together with the existing summary; the new text is
    appended to ``context_summary`` after a blank line, and ``context`` becomes the system messages followed by
    the kept messages.

    Who summarizes: ``summarizer=`` (an object with an async ``summarize``, a sync/async callable
    ``(messages, previous_summary) -> str``, or the name ``"extractive"``), else ``model``: ``"extractive"`` for the
    offline summarizer, otherwise a model name whose LLM client is created once, on first use (so no API key is
    needed to construct the manager).

    ``remove_tool_msgs=True`` strips finished tool sequences before the thresholds are checked and before
    summarizing; like every other change, that only happens when a summary is actually made.
    """

    def __init__(
        self,
        model: str | None = None,
        *,
        max_messages: int | None = 30,
        token_budget: int | None = None,
        keep_recent: int = 8,
        remove_tool_msgs: bool = False,
        summary_system_prompt: str | None = None,
        max_summary_tokens: int = 600,
        api_style: str = "responses",
        summarizer: Any = None,
        provider: str | None = None,
        base_url: str | None = None,
        api_key: str | None = None,
        timeout: float = 60.0,
        max_retries: int = 2,
    ) -> None:
        check_non_negative_int("max_messages", max_messages, allow_none=True)
        if token_budget is not None:
            check_positive_int("token_budget", token_budget, hint=" or None to disable it")
        check_non_negative_int("keep_recent", keep_recent)
        check_positive_int("max_summary_tokens", max_summary_tokens)
        if api_style not in API_STYLES:
            raise ConfigurationError(
                f"api_style must be 'responses' or 'chat', got {api_style!r}; "
                "use 'chat' for models served only through Chat Completions",
            )
        if not isinstance(timeout, int | float) or isinstance(timeout, bool) or timeout <= 0:
            raise ConfigurationError(f"timeout must be a positive number of seconds, got {timeout!r}")
        check_non_negative_int("max_retries", max_retries)
        if summary_system_prompt is not None and not isinstance(summary_system_prompt, str):
            raise ConfigurationError(
                f"summary_system_prompt must be a string or None, got {type(summary_system_prompt).__name__}",
            )
        if model is not None and (not isinstance(model, str) or not model.strip()):
            raise ConfigurationError(f"model must be a non-empty model name such as 'gpt-4o-mini', got {model!r}")
        if summarizer is None and model is None:
            raise ConfigurationError(
                "SummaryContextManager needs model= (e.g. 'gpt-4o-mini', or 'extractive' for the offline "
                "summarizer) or summarizer= (an object with async summarize(...) or a callable)",
            )
        if isinstance(summarizer, str):
            if not _is_offline_name(summarizer):
                raise ConfigurationError(
                    f"summarizer={summarizer!r} is not a known summarizer name; use 'extractive', pass an object "
                    "with an async summarize(...) method, or a callable (messages, previous_summary) -> str",
                )
        elif summarizer is not None and not _is_summarizer_like(summarizer):
            raise ConfigurationError(
                f"summarizer must have an async summarize(...) method or be callable, got {type(summarizer).__name__}",
            )

        self.model = model
        self.max_messages = max_messages
        self.token_budget = token_budget
        self.keep_recent = keep_recent
        self.remove_tool_msgs = bool(remove_tool_msgs)
        self.summary_system_prompt = summary_system_prompt
        self.max_summary_tokens = max_summary_tokens
        self.api_style = api_style
        self.provider = provider
        self.base_url = base_url
        self.api_key = api_key
        self.timeout = float(timeout)
        self.max_retries = max_retries
        self._summarizer_spec: Any = summarizer
        self._summarizer: Any = None
        if summarizer is not None and not isinstance(summarizer, str):
            self._summarizer = adapt_summarizer(summarizer)

    def __repr__(self) -> str:
        who = self.model if self._summarizer_spec is None else self._summarizer_spec
        return (
            f"SummaryContextManager({who!r}, max_messages={self.max_messages}, token_budget={self.token_budget}, "
            f"keep_recent={self.keep_recent})"
        )

    # -- summarizer -----------------------------------------------------------------------------------------

    @property
    def summarizer(self) -> Any:
        """The summarizer in use, built on first access (an LLM client is created only here, once)."""
        if self._summarizer is None:
            from ..summarize import get_summarizer

            name = self._summarizer_spec if isinstance(self._summarizer_spec, str) else self.model
            assert name is not None
            if _is_offline_name(name):
                self._summarizer = get_summarizer(name)
            else:
                self._summarizer = get_summarizer(
                    name,
                    provider=self.provider,
                    api_style=self.api_style,
                    base_url=self.base_url,
                    api_key=self.api_key,
                    timeout=self.timeout,
                    max_retries=self.max_retries,
                )
        return self._summarizer

    # -- decision -------------------------------------------------------------------------------------------

    def should_summarize(self, messages: Sequence[Message]) -> bool:
        """Whether either trigger fires for ``messages`` (after tool-sequence removal when enabled)."""
        if self.max_messages is not None and len(messages) > self.max_messages:
            return True
        return self.token_budget is not None and estimate_tokens(messages) > self.token_budget

    def plan(self, context: Sequence[Message]) -> tuple[list[Message], list[Message], list[Message]] | None:
        """``(system, to_summarize, kept)`` for ``context``, or None when no summary should be made."""
        working = remove_completed_tool_sequences(context) if self.remove_tool_msgs else list(context)
        if not self.should_summarize(working):
            return None
        systems, others = split_system(working)
        cut = summary_cut(others, self.keep_recent)
        if cut == 0:
            return None
        return systems, others[:cut], others[cut:]

    async def _summarize(self, old: list[Message], previous: str | None) -> str | None:
        try:
            summarizer = self.summarizer
            text = await asyncio.wait_for(
                summarizer.summarize(
                    old,
                    previous_summary=previous,
                    max_tokens=self.max_summary_tokens,
                    instructions=self.summary_system_prompt,
                ),
                timeout=self.timeout,
            )
        except Exception:
            logger.exception(FAILURE_LOG)
            return None
        if not isinstance(text, str) or not text.strip():
            logger.warning("summarizer returned no text; context left unchanged")
            return None
        return text.strip()

    # -- API ------------------------------------------------------------------------------------------------

    async def atrim_context(self, state: S) -> S:
        before = self._begin_trim(state)
        made = 0
        planned = self.plan(list(state.context))
        if planned is not None:
            systems, old, kept = planned
            previous = state.context_summary or None
            summary = await self._summarize(old, previous)
            if summary is not None:
                state.context_summary = _append_summary(previous, summary)
                state.context = systems + kept
                made = 1
        self._finish_trim(before, state, summaries_made=made)
        return state

    def trim_context(self, state: S) -> S:
        """Run `atrim_context` to completion; refuses inside a running event loop (await it there instead)."""
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return asyncio.run(self.atrim_context(state))
        raise RuntimeError(
            "SummaryContextManager.trim_context() was called from inside a running event loop; "
            "use `await manager.atrim_context(state)` instead",
        )


__all__ = ["API_STYLES", "FAILURE_LOG", "SummaryContextManager", "estimate_tokens"]
