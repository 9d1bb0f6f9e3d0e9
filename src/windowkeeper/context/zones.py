"""The five zones of a context window, each with its token cost, and how they are rendered for a model.

A prompt is easier to budget when its parts are named: (1) the system prompt with the tool schemas, (2) the
compressed history (the running summary), (3) the recent messages, (4) the scratchpad of curated notes and
(5) the reserve left for the reply. `build_zones` measures each from an `AgentState`; `render_zones` turns them
into the message list a model receives. The summary and the scratchpad are rendered as system messages in the
system zone, never as user or assistant turns, so a model cannot mistake them for something a person said.

The rendered summary and scratchpad messages have ids derived from their text, so an unchanged summary renders
byte-identically call after call (which keeps provider prompt caches hitting) and its token count stays cached.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from ..errors import ConfigurationError
from ..messages import Message
from ..state import AgentState
from ..tokens import TokenCounter, default_counter

SUMMARY_HEADER = "Summary of the earlier conversation (older turns were condensed to save context):"
SCRATCHPAD_HEADER = "Scratchpad (working notes kept across turns; update them as you learn more):"
ZONE_NAMES: tuple[str, ...] = ("system", "summary", "recent", "scratchpad", "reserve")


def _stable_id(kind: str, text: str) -> str:
    digest = hashlib.blake2b(text.encode("utf-8"), digest_size=8).hexdigest()
    return f"windowkeeper:{kind}:{digest}"


def system_prompt_message(prompt: str) -> Message:
    return Message.text_message(prompt, role="system", message_id=_stable_id("system", prompt), timestamp=None)


def summary_message(summary: str) -> Message:
    """The running summary as the system message a model reads, labelled so it is not taken for instructions."""
    text = f"{SUMMARY_HEADER}\n{summary}"
    return Message.text_message(text, role="system", message_id=_stable_id("summary", text), timestamp=None)


def scratchpad_message(scratchpad: str) -> Message:
    text = f"{SCRATCHPAD_HEADER}\n{scratchpad}"
    return Message.text_message(text, role="system", message_id=_stable_id("scratchpad", text), timestamp=None)


def tool_schema_tokens(tools: Sequence[dict[str, Any]] | None, counter: TokenCounter) -> int:
    """Tokens of the tool schemas as a provider serializes them (compact JSON)."""
    if not tools:
        return 0
    return counter.count_text(json.dumps(list(tools), ensure_ascii=False, separators=(",", ":"), default=str))


class ContextZones(BaseModel):
    """One view of a prompt split into the five zones, with the tokens each costs.

    ``system`` holds the system prompt (if given) followed by the state's own system messages; ``system_tokens``
    includes ``tool_tokens``. ``input_tokens`` is what is sent; ``total_tokens`` adds the reply reserve.
    """

    model_config = ConfigDict(frozen=True)

    system: list[Message] = Field(default_factory=list)
    tools: list[dict[str, Any]] = Field(default_factory=list)
    system_tokens: int = 0
    tool_tokens: int = 0
    summary: str | None = None
    summary_tokens: int = 0
    recent: list[Message] = Field(default_factory=list)
    recent_tokens: int = 0
    scratchpad: str | None = None
    scratchpad_tokens: int = 0
    reserve_tokens: int = 0
    priming_tokens: int = 0

    @property
    def input_tokens(self) -> int:
        return (
            self.system_tokens
            + self.summary_tokens
            + self.recent_tokens
            + self.scratchpad_tokens
            + (self.priming_tokens)
        )

    @property
    def total_tokens(self) -> int:
        return self.input_tokens + self.reserve_tokens

    def breakdown(self) -> dict[str, int]:
        """Tokens per zone in zone order (reply priming is counted with the recent messages)."""
        return {
            "system": self.system_tokens,
            "summary": self.summary_tokens,
            "recent": self.recent_tokens + self.priming_tokens,
            "scratchpad": self.scratchpad_tokens,
            "reserve": self.reserve_tokens,
        }

    def to_messages(self) -> list[Message]:
        return render_zones(self)


def build_zones(
    state: AgentState,
    *,
    system_prompt: str | None = None,
    tools: Sequence[dict[str, Any]] | None = None,
    counter: TokenCounter | None = None,
    reserve_tokens: int = 2000,
) -> ContextZones:
    """Split ``state`` into the five zones and count each with ``counter`` (the exact shared one by default).

    System messages found anywhere in ``state.context`` belong to zone 1: providers hoist them into the system
    instructions anyway, and that is where they cost tokens.
    """
    if not isinstance(reserve_tokens, int) or isinstance(reserve_tokens, bool) or reserve_tokens < 0:
        raise ConfigurationError(f"reserve_tokens must be a non-negative integer, got {reserve_tokens!r}")
    tc = counter if counter is not None else default_counter()
    system: list[Message] = [system_prompt_message(system_prompt)] if system_prompt else []
    recent: list[Message] = []
    for msg in state.context:
        (system if msg.role == "system" else recent).append(msg)
    tool_list = [dict(t) for t in tools] if tools else []
    tool_tokens = tool_schema_tokens(tool_list, tc)
    summary = state.context_summary or None
    scratchpad = state.scratchpad or None
    return ContextZones(
        system=system,
        tools=tool_list,
        system_tokens=sum(tc.count_message(m) for m in system) + tool_tokens,
        tool_tokens=tool_tokens,
        summary=summary,
        summary_tokens=tc.count_message(summary_message(summary)) if summary else 0,
        recent=recent,
        recent_tokens=sum(tc.count_message(m) for m in recent),
        scratchpad=scratchpad,
        scratchpad_tokens=tc.count_message(scratchpad_message(scratchpad)) if scratchpad else 0,
        reserve_tokens=reserve_tokens,
        priming_tokens=tc.count_messages([]),
    )


def render_zones(zones: ContextZones) -> list[Message]:
    """The message list to send: system zone (prompt, system messages, summary, scratchpad), then recent turns.

    Tool schemas are not messages; pass ``zones.tools`` to the client's ``tools`` parameter. The scratchpad
    comes last in the system zone because it changes most often, so a change to it leaves the longest possible
    cached prefix in front of it.
    """
    out = list(zones.system)
    if zones.summary:
        out.append(summary_message(zones.summary))
    if zones.scratchpad:
        out.append(scratchpad_message(zones.scratchpad))
    out.extend(zones.recent)
    return out


__all__ = [
    "SCRATCHPAD_HEADER",
    "SUMMARY_HEADER",
    "ZONE_NAMES",
    "ContextZones",
    "build_zones",
    "render_zones",
    "scratchpad_message",
    "summary_message",
    "system_prompt_message",
    "tool_schema_tokens",
]
