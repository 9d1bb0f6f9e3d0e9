"""What a request costs, and how that cost splits into zones so that the zones add up to it exactly.

The count of a request is defined once, in `count_request`: the system text as one system message, every
conversation message, the reply priming (all with the given counter), plus the tool schemas as compact JSON text.
The system text is one string on the wire, and a tokenizer does not split a joined string into the tokens of its
parts (``".\\n\\n"`` can be a single token), so each section of the system zone is charged its marginal cost: the
count of the system text up to and including it, minus the count up to before it. The first non-empty section
carries the message framing. The zones therefore sum to the count of what is sent, for any tokenizer.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..llm.client import LLMRequest
from ..tokens import CachingCounter, TokenCounter, default_counter
from .sections import join_sections, scratchpad_section, summary_section, system_message


def tool_schema_tokens(tools: Sequence[dict[str, Any]] | None, counter: TokenCounter) -> int:
    """Tokens of the tool schemas as a provider serializes them (compact JSON of the neutral specs)."""
    if not tools:
        return 0
    return counter.count_text(json.dumps(list(tools), ensure_ascii=False, separators=(",", ":"), default=str))


def system_text_tokens(text: str | None, counter: TokenCounter) -> int:
    """Tokens of a system text sent as one system message (0 for none); memoized by the counter per text."""
    return counter.count_message(system_message(text)) if text else 0


@dataclass(frozen=True)
class SystemCost:
    """Marginal tokens of the three parts of the system text: prompt and system messages, summary, scratchpad."""

    system: int
    summary: int
    scratchpad: int

    @property
    def total(self) -> int:
        return self.system + self.summary + self.scratchpad


def system_costs(
    parts: Sequence[str], summary: str | None, scratchpad: str | None, counter: TokenCounter
) -> SystemCost:
    """What each part of the system text costs: ``parts`` are the system prompt and system-message texts.

    Memoized for the built-in counters (their counts never change): metrics and managers price the same system
    text on call after call.
    """
    if isinstance(counter, CachingCounter):
        return _cached_costs(tuple(parts), summary, scratchpad, counter)
    # other counters may change their counts over time (a calibrated counter learns its ratio): count afresh
    return _system_costs(tuple(parts), summary, scratchpad, counter)


def _system_costs(
    parts: tuple[str, ...], summary: str | None, scratchpad: str | None, counter: TokenCounter
) -> SystemCost:
    base = join_sections(parts)
    with_summary = join_sections((base, summary_section(summary)))
    full = join_sections((with_summary, scratchpad_section(scratchpad)))
    a = system_text_tokens(base, counter)
    b = system_text_tokens(with_summary, counter) if with_summary != base else a
    c = system_text_tokens(full, counter) if full != with_summary else b
    return SystemCost(a, b - a, c - b)


_cached_costs = functools.lru_cache(maxsize=512)(_system_costs)


def summary_tokens(summary: str | None, counter: TokenCounter, parts: Sequence[str] = ()) -> int:
    """The marginal cost of ``summary`` in a system text that starts with ``parts`` (and has no scratchpad)."""
    return system_costs(parts, summary, None, counter).summary


def count_request(request: LLMRequest, counter: TokenCounter | None = None) -> int:
    """The exact count of ``request`` as sent: the definition every zone accounting is checked against."""
    tc = counter if counter is not None else default_counter()
    messages = [system_message(request.system), *request.messages] if request.system else list(request.messages)
    return tc.count_messages(messages) + tool_schema_tokens(request.tools, tc)
