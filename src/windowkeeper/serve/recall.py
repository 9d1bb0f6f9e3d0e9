"""Server-side recall: the gateway's own tool, offered to the model once a thread has been cut and answered by the
gateway inside the same client request.

The client never defined it and never sees it: the tool is added to the upstream request only, a call to it is
answered here (search of what left the view, or a cleared original by its pointer id) and the conversation goes
upstream again with the answer, up to `MAX_ROUNDS` times; the client receives the model's final turn.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any

from ..errors import ConfigurationError
from ..tools.recall import RecallTool
from .protocols import Protocol, ToolCall
from .threads import Thread

logger = logging.getLogger(__name__)

NAMES = ("recall", "windowkeeper_recall")
MAX_ROUNDS = 4


def tool_name(protocol: Protocol, body: Mapping[str, Any]) -> str | None:
    """The name the gateway's tool takes in this request: ``recall`` unless the client has a tool of that name;
    None when the client said ``tool_choice: none`` or uses both names."""
    choice = body.get("tool_choice")
    if choice == "none" or (isinstance(choice, Mapping) and choice.get("type") == "none"):
        return None
    taken = protocol.tool_names(body.get("tools"))
    return next((name for name in NAMES if name not in taken), None)


def _tool(thread: Thread) -> RecallTool:
    window = thread.window
    # the window's own recall tool when it has one (bound to its manager's key for the thread)
    make = getattr(window, "recall_tool", None)
    if callable(make):
        tool = make()
        if isinstance(tool, RecallTool):
            return tool
    key = window._manager_key(window.thread_id)  # the key the window's manager files the thread under
    return RecallTool(window.manager, thread_id=key)


def offer(protocol: Protocol, body: dict[str, Any], thread: Thread, name: str) -> dict[str, Any]:
    """``body`` with the recall tool appended to its tools (the client's tools first and unchanged)."""
    schema = {**_tool(thread).schema, "name": name}
    tools = body.get("tools")
    return {**body, "tools": [*(tools if isinstance(tools, list) else []), protocol.tool_schema(schema)]}


async def answer(thread: Thread, calls: Sequence[ToolCall]) -> dict[str, str]:
    """The gateway's answers to the model's recall calls, by call id."""
    tool = _tool(thread)
    out: dict[str, str] = {}
    for call in calls:
        try:
            out[call.id] = await tool.ainvoke(call.arguments or None)
        except ConfigurationError as exc:
            out[call.id] = f"recall could not run: {exc}"
        except Exception as exc:
            logger.warning(
                "thread %s: the recall tool failed (%s); the model is told so",
                thread.window.thread_id,
                type(exc).__name__,
            )
            out[call.id] = "recall failed inside the gateway; continue without it"
    return out
