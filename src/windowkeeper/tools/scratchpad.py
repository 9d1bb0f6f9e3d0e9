"""`scratchpad_tool`: a tool the model calls to keep its own working notes in ``state.scratchpad``.

The scratchpad is zone 4 of the prompt: `windowkeeper.prompt.assemble` sends it at the end of the system text on
every call, so notes survive compaction and summaries word for word. The model maintains it through this tool:
``mode="append"`` adds lines after the current notes, ``mode="replace"`` rewrites them (an empty text clears
them). A token limit keeps the zone bounded; a write that would pass it is refused with an error the model reads
as the tool's result (and can act on: shorten, or replace with a condensed version), and the notes stay as they
were.

Parallel calls in one model turn apply in call order: the tool is a coroutine without awaits, so each call runs
to its end before the next one starts, and each writes on top of the notes the previous one left.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Literal

from .._validate import check_positive_int
from ..errors import ConfigurationError
from ..state import AgentState, ToolResult
from ..tokens import TokenCounter, default_counter

logger = logging.getLogger(__name__)

DEFAULT_SCRATCHPAD_TOKENS = 1000
ScratchpadMode = Literal["append", "replace"]


class ScratchpadFullError(ValueError):
    """A scratchpad write that would pass the tool's token limit (the model receives the message as an error)."""


def scratchpad_tool(
    max_tokens: int = DEFAULT_SCRATCHPAD_TOKENS,
    *,
    name: str = "scratchpad",
    counter: TokenCounter | None = None,
) -> Callable[..., Awaitable[ToolResult]]:
    """A `ToolNode` tool that appends to or replaces ``state.scratchpad``, holding at most ``max_tokens`` tokens.

    ``counter`` measures the notes (the exact shared counter by default); ``name`` is the tool name the model sees.
    Give the same tool's spec to a `TokenBudgetContextManager` (``tools=tool_node.tool_specs()``) so its budget
    counts the schema the agent sends; the notes themselves are counted there as the scratchpad zone.
    """
    limit = check_positive_int("max_tokens", max_tokens)
    if not isinstance(name, str) or not name.isidentifier():
        raise ConfigurationError(f"name must be a Python identifier usable as a tool name, got {name!r}")
    tc = counter if counter is not None else default_counter()

    async def scratchpad(notes: str, state: AgentState, mode: ScratchpadMode = "append") -> ToolResult:
        """Keep working notes that stay in your context across turns, even after older messages are summarized.

        The current notes are shown to you under "Scratchpad" in the system prompt. Record facts, decisions,
        file paths, numbers and open tasks you will need later. The notes hold at most {limit} tokens.

        Args:
            notes: The text to write. With mode "append" it is added as new lines after the current notes; with
                mode "replace" it becomes the whole scratchpad (an empty text clears it).
            mode: "append" to add to the notes, "replace" to rewrite them (use it to condense notes near the limit).
        """
        current = (state.scratchpad or "").strip()
        text = notes.strip()
        appended = f"{current}\n{text}" if current and text else (current or text)
        new = text if mode == "replace" else appended
        used = tc.count_text(new) if new else 0
        if used > limit:
            current_tokens = tc.count_text(current) if current else 0
            raise ScratchpadFullError(
                f"the scratchpad would hold {used} tokens, over its limit of {limit} (it holds {current_tokens} now); "
                "nothing was written. Call it again with mode='replace' and a condensed version of the notes, or "
                "append less"
            )
        state.scratchpad = new or None  # the next call of this batch writes on top of these notes
        logger.debug("scratchpad %s: %d of %d tokens", mode, used, limit)
        action = "replaced" if mode == "replace" else "appended to"
        return ToolResult(
            message=f"Scratchpad {action}: it now holds {used} of {limit} tokens.",
            state={"scratchpad": new or None},
        )

    scratchpad.__doc__ = (scratchpad.__doc__ or "").replace("{limit}", str(limit))
    scratchpad.__name__ = name
    scratchpad.__qualname__ = name
    return scratchpad
