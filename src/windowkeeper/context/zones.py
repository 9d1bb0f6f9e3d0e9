"""Deprecated: the five-zone view of a prompt. Use `windowkeeper.prompt.assemble` and `AssembledPrompt.zone_tokens`.

`build_zones`, `render_zones` and `ContextZones` re-express what `assemble` already reports (the tokens of each
zone, the messages sent) in a second shape with coarser zones; they stay, and warn, for code written against
them. `summary_message` (a summary section as a message, for code laying out a list itself) is not deprecated.

A prompt is easier to budget when its parts are named: (1) the system prompt with the tool schemas, (2) the
compressed history (the running summary), (3) the recent messages, (4) the scratchpad of curated notes and
(5) the reserve left for the reply. `build_zones` measures each from an `AgentState` and `render_zones` gives the
message list a model receives; both delegate to `windowkeeper.prompt.assemble`, the one prompt assembly the
`Agent` sends, so the costs here are the costs of what is sent. Use `assemble` directly for the finer zones
(tools and recall apart).

The system prompt, the state's system messages, the summary and the scratchpad are sent as one system text
(stable id, so an unchanged text renders byte-identically), never as user or assistant turns.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from ..messages import Message
from ..prompt import (
    assemble,
    assemble_messages,
    scratchpad_section,
    stable_id,
    summary_section,
)
from ..state import AgentState
from ..tokens import TokenCounter

ZONE_NAMES: tuple[str, ...] = ("system", "summary", "recent", "scratchpad", "reserve")


def system_prompt_message(prompt: str) -> Message:
    """The system prompt alone as a system message (stable id)."""
    return Message.text_message(prompt, role="system", message_id=stable_id("system", prompt), timestamp=None)


def summary_message(summary: str) -> Message:
    """The summary section (header and summary) as a system message, for code that lays out messages itself."""
    text = summary_section(summary) or ""
    return Message.text_message(text, role="system", message_id=stable_id("summary", text), timestamp=None)


def scratchpad_message(scratchpad: str) -> Message:
    """The scratchpad section (header and notes) as a system message."""
    text = scratchpad_section(scratchpad) or ""
    return Message.text_message(text, role="system", message_id=stable_id("scratchpad", text), timestamp=None)


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

    Deprecated: ``assemble(state, ...)`` gives the same counts (`AssembledPrompt.zone_tokens`, tools and recall
    apart) and the request itself.
    """
    _deprecated("build_zones(state, ...)", "assemble(state, ...) and its .zone_tokens")
    prompt = assemble(state, system_prompt=system_prompt, tools=tools, counter=counter, reserve_tokens=reserve_tokens)
    zones = prompt.zone_tokens
    priming = prompt.counter.count_messages([])
    system: list[Message] = [system_prompt_message(system_prompt)] if system_prompt else []
    system.extend(m for m in state.context if m.role == "system")
    return ContextZones(
        system=system,
        tools=prompt.tools,
        system_tokens=zones["system"] + zones["tools"],
        tool_tokens=zones["tools"],
        summary=prompt.summary,
        summary_tokens=zones["summary"],
        recent=prompt.messages,
        recent_tokens=zones["recall"] + zones["recent"] - priming,
        scratchpad=prompt.scratchpad,
        scratchpad_tokens=zones["scratchpad"],
        reserve_tokens=reserve_tokens,
        priming_tokens=priming,
    )


def _deprecated(old: str, new: str) -> None:
    warnings.warn(
        f"{old} is deprecated; use windowkeeper.prompt.{new}, which counts the same prompt",
        DeprecationWarning,
        stacklevel=3,
    )


def render_zones(zones: ContextZones) -> list[Message]:
    """The message list to send: the one system text (prompt, system messages, summary, scratchpad), then the rest.

    Tool schemas are not messages; pass ``zones.tools`` to the client's ``tools`` parameter. The scratchpad
    comes last in the system text because it changes most often, so a change to it leaves the longest possible
    cached prefix in front of it.

    Deprecated: ``assemble(state, ...).to_messages()`` is the same list.
    """
    _deprecated("render_zones(zones)", "assemble(state, ...).to_messages()")
    return assemble_messages(
        [*zones.system, *zones.recent], summary=zones.summary, scratchpad=zones.scratchpad
    ).to_messages()
