"""`assemble`: the one place a state becomes the request a model receives, with the tokens of each zone.

Zones, in the order they are sent: ``tools`` (schemas, passed beside the messages), ``system`` (the agent's system
prompt and the state's system messages), ``summary``, ``scratchpad`` (these three form the one system text),
then the conversation, whose messages are ``recall`` (see `is_recall`) or ``recent``, and last ``reserve``, the
room left for the reply (never sent). The `Agent`, the context managers' accounting, the metrics, the replay and
``windowkeeper inspect`` all go through here, so what a budget counts is what is sent: ``input_tokens`` equals
`count_request` of ``to_request()`` exactly, and is the sum of every zone but the reserve.

System messages anywhere in the state are moved into the system text (the place every provider but OpenAI Chat
puts them anyway), so every provider receives the same request and the count does not depend on the format.
"""

from __future__ import annotations

import itertools
import json
import operator
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any

from .._validate import check_int
from ..messages import Message
from ..state import AgentState
from ..tokens import RunningCount, TokenCounter, default_counter
from .cost import system_costs, tool_schema_tokens
from .recall import is_recall, recall_notes
from .sections import (
    join_sections,
    scratchpad_section,
    stable_id,
    summary_section,
    system_flags,
    system_message,
    system_message_text,
)

if TYPE_CHECKING:
    from ..llm.client import LLMRequest

ZONES: tuple[str, ...] = ("system", "tools", "summary", "scratchpad", "recall", "recent", "reserve")
"""Every key of `AssembledPrompt.zone_tokens`, in the order the request is laid out."""


@dataclass(frozen=True)
class AssembledPrompt:
    """One request, ready to send, and what each of its zones costs (counted on first access).

    ``system`` is the system text: the system prompt, the state's system messages, the summary section and the
    scratchpad section, each once and in that order. ``messages`` is the conversation as sent (no system
    messages). ``system_parts`` are the system prompt and system-message texts that open ``system``.
    """

    system: str | None
    messages: list[Message]
    tools: list[dict[str, Any]]
    system_parts: tuple[str, ...] = ()
    summary: str | None = None
    scratchpad: str | None = None
    reserve_tokens: int = 0
    counter: TokenCounter = field(default_factory=default_counter, repr=False, compare=False)
    running: RunningCount | None = field(default=None, repr=False, compare=False)
    """The conversation's running count of its recent zone (`RunningCount`), kept by a caller that assembles the
    same conversation call after call, so counting it costs what is new; None counts it whole."""

    @cached_property
    def zone_tokens(self) -> dict[str, int]:
        """Tokens per zone, keys in `ZONES` order; the reply priming is counted with ``recent``."""
        tc = self.counter
        costs = system_costs(self.system_parts, self.summary, self.scratchpad, tc)
        # metrics assemble every view of every call: split with comprehensions and count the (usually whole)
        # recent part with the counter's batch loop
        messages = self.messages
        recalled = recall_notes(messages)
        recent_messages = [m for m in messages if not is_recall(m)] if recalled else messages
        recall = sum(tc.count_message(m) for m in recalled)
        # the reply priming included
        running = self.running
        recent = running.total(tc, recent_messages) if running is not None else tc.count_messages(recent_messages)
        return {
            "system": costs.system,
            "tools": tool_schema_tokens(self.tools, tc),
            "summary": costs.summary,
            "scratchpad": costs.scratchpad,
            "recall": recall,
            "recent": recent,
            "reserve": self.reserve_tokens,
        }

    @property
    def input_tokens(self) -> int:
        """The exact count of the request as sent: every zone but the reserve."""
        return sum(n for zone, n in self.zone_tokens.items() if zone != "reserve")

    @property
    def total_tokens(self) -> int:
        """What the call occupies in the context window: the input plus the reply reserve."""
        return self.input_tokens + self.reserve_tokens

    def to_request(self, max_output_tokens: int | None = None, temperature: float | None = None) -> LLMRequest:
        """The provider-neutral request every `LLMClient` accepts."""
        from ..llm.client import LLMRequest  # the llm layer (asyncio, the client base) only when a request is made

        return LLMRequest(
            messages=list(self.messages),
            system=self.system,
            tools=[dict(t) for t in self.tools] or None,
            max_output_tokens=max_output_tokens,
            temperature=temperature,
        )

    def to_messages(self) -> list[Message]:
        """A flat list: the system text as one leading system message (stable id), then the conversation."""
        head = [system_message(self.system)] if self.system else []
        return [*head, *self.messages]

    def pieces(self) -> list[tuple[str, int]]:
        """``(key, tokens)`` of each part of the request in send order, for measuring a cacheable prefix.

        Tool schemas, then each section of the system text, then each message; equal keys mean equal content,
        and the pieces' tokens plus the reply priming make ``input_tokens``. A provider cache matches a prefix
        of tokens, so a changed scratchpad still leaves the prompt and the summary before it cacheable.
        """
        zones = self.zone_tokens
        out: list[tuple[str, int]] = []
        if self.tools:
            tools_json = json.dumps(self.tools, ensure_ascii=False, separators=(",", ":"), default=str)
            out.append((stable_id("tools", tools_json), zones["tools"]))
        for zone, text in (
            ("system", join_sections(self.system_parts)),
            ("summary", summary_section(self.summary)),
            ("scratchpad", scratchpad_section(self.scratchpad)),
        ):
            if text:
                out.append((stable_id(zone, text), zones[zone]))
        count = self.counter.count_message
        out.extend((m.fingerprint(), count(m)) for m in self.messages)
        return out


def assemble_messages(
    messages: Sequence[Message],
    *,
    summary: str | None = None,
    scratchpad: str | None = None,
    system_prompt: str | None = None,
    tools: Sequence[dict[str, Any]] | None = None,
    counter: TokenCounter | None = None,
    reserve_tokens: int = 0,
    running: RunningCount | None = None,
) -> AssembledPrompt:
    """`assemble` from the parts of a state: a view's messages, its summary and scratchpad."""
    reserve = check_int("reserve_tokens", reserve_tokens, minimum=0)
    parts: list[str] = [system_prompt] if system_prompt else []
    # split in C (every call assembles the whole view): which messages are system ones, then each side
    flags = system_flags(messages)
    if any(flags):  # positions only for naming a bad block: the common view has no system message
        for index in itertools.compress(itertools.count(), flags):
            if text := system_message_text(messages[index], index=index):
                parts.append(text)
        conversation = list(itertools.compress(messages, map(operator.not_, flags)))
    else:
        conversation = list(messages)
    summary = summary if summary and summary.strip() else None
    scratchpad = scratchpad if scratchpad and scratchpad.strip() else None
    return AssembledPrompt(
        system=join_sections([*parts, summary_section(summary), scratchpad_section(scratchpad)]),
        messages=conversation,
        tools=[dict(t) for t in tools] if tools else [],
        system_parts=tuple(parts),
        summary=summary,
        scratchpad=scratchpad,
        reserve_tokens=reserve,
        counter=counter if counter is not None else default_counter(),
        running=running,
    )


def assemble(
    state: AgentState,
    *,
    system_prompt: str | None = None,
    tools: Sequence[dict[str, Any]] | None = None,
    counter: TokenCounter | None = None,
    reserve_tokens: int = 0,
    running: RunningCount | None = None,
) -> AssembledPrompt:
    """The request for one model call on ``state`` (its context, summary and scratchpad), with its zone counts.

    ``system_prompt`` and ``tools`` are the agent's; ``counter`` is the exact shared counter by default;
    ``reserve_tokens`` is only reported (zone ``reserve``), never sent; ``running`` (one per conversation, see
    `AssembledPrompt.running`) makes the count of a conversation assembled call after call cost what is new.
    """
    return assemble_messages(
        state.context,
        summary=state.context_summary,
        scratchpad=state.scratchpad,
        system_prompt=system_prompt,
        tools=tools,
        counter=counter,
        reserve_tokens=reserve_tokens,
        running=running,
    )
