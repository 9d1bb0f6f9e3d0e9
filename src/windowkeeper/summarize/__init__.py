"""Summarizers: turn old messages into text that keeps their facts.

`Summarizer` is the protocol context managers call; `LLMSummarizer` asks a model, `ExtractiveSummarizer` works
offline and deterministically, `as_summarizer` adapts user objects and functions, and `get_summarizer` picks one
from a name. `call_summarizer` / `guarded_call` (`windowkeeper.summarize.failsafe`) are the one fail-safe way every
layer calls a summarizer: never raising, with a real timeout. The memory layer's structured summaries live in
`windowkeeper.memory.structured`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import lazy_exports

if TYPE_CHECKING:
    from .base import CallableSummarizer, MethodSummarizer, Summarizer, as_summarizer
    from .extractive import ExtractiveSummarizer
    from .factory import OFFLINE_NAMES, get_summarizer
    from .failsafe import FAILURE_LOG, Attempt, call_summarizer, guarded_call
    from .llm import DEFAULT_SUMMARY_PROMPT, LLMSummarizer, build_summary_prompt
    from .transcript import render_message, render_transcript

__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        ".base": ("CallableSummarizer", "MethodSummarizer", "Summarizer", "as_summarizer"),
        ".extractive": ("ExtractiveSummarizer",),
        ".factory": ("OFFLINE_NAMES", "get_summarizer"),
        ".failsafe": ("FAILURE_LOG", "Attempt", "call_summarizer", "guarded_call"),
        ".llm": ("DEFAULT_SUMMARY_PROMPT", "LLMSummarizer", "build_summary_prompt"),
        ".transcript": ("render_message", "render_transcript"),
    },
)

__all__ = [
    "DEFAULT_SUMMARY_PROMPT",
    "FAILURE_LOG",
    "OFFLINE_NAMES",
    "Attempt",
    "CallableSummarizer",
    "ExtractiveSummarizer",
    "LLMSummarizer",
    "MethodSummarizer",
    "Summarizer",
    "as_summarizer",
    "build_summary_prompt",
    "call_summarizer",
    "get_summarizer",
    "guarded_call",
    "render_message",
    "render_transcript",
]
