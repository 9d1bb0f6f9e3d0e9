"""Server-side recall: the gateway's own tool, offered to the model once a thread has been cut and answered by the
gateway inside the same client request.

The client never defined it and never sees it: the tool is added to the upstream request only, a call to it is
answered here (search of what left the view, or a cleared original by its pointer id) and the conversation goes
upstream again with the answer, up to `MAX_ROUNDS` times; the client receives the model's final turn.

Every follow-up stays within the budget (`Room`): the model's turn and the answers are what a follow-up adds, so
each answer is cut, in the middle with a marker saying how much was left out, to its share of what the budget has
left once the turn is paid for. A recalled tool output restored whole, or five passages, appended to a request
already near the budget went over it (and over the model's context window).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .._cut import cut_to_tokens
from ..context import TokenBudgetContextManager
from ..context.pointers import TRUNCATE_CUT
from ..errors import ConfigurationError
from ..tokens import TokenCounter
from ..tools.recall import TOOL_DESCRIPTION
from .protocols import Protocol, ToolCall
from .threads import Thread

logger = logging.getLogger(__name__)

NAMES = ("recall", "windowkeeper_recall")
MAX_ROUNDS = 4


def tool_name(protocol: Protocol, body: Mapping[str, Any]) -> str | None:
    """The name the gateway's tool takes in this request: ``recall`` unless the client has a tool of that name;
    None when the client said ``tool_choice: none``, uses both names or sent a body the tool cannot join
    (`Protocol.can_offer_tools`); then the window is not told of the tool either, so no pointer names it."""
    choice = body.get("tool_choice")
    if choice == "none" or (isinstance(choice, Mapping) and choice.get("type") == "none"):
        return None
    if not protocol.can_offer_tools(body):
        return None
    taken = protocol.tool_names(body.get("tools"))
    return next((name for name in NAMES if name not in taken), None)


def offer(protocol: Protocol, body: dict[str, Any], thread: Thread, name: str) -> dict[str, Any]:
    """``body`` with the recall tool added to its tools (`Protocol.add_tool`: the client's tools unchanged)."""
    schema = {**thread.window.recall_tool().schema, "name": name}
    return {**body, "tools": protocol.add_tool(body.get("tools"), protocol.tool_schema(schema))}


def declared(protocol: Protocol, tools: list[Any] | None, name: str | None) -> list[Any] | None:
    """The tools to tell the window about: the client's, plus the recall tool when it keeps its own name (then
    the window's pointers name the tool, the way the model will see it declared)."""
    if name != "recall":
        return tools
    schema = {"name": name, "description": TOOL_DESCRIPTION, "parameters": {"type": "object"}}
    return [*(tools or []), protocol.tool_schema(schema)]


async def answer(thread: Thread, calls: Sequence[ToolCall]) -> dict[str, str]:
    """The gateway's answers to the model's recall calls, by call id."""
    tool = thread.window.recall_tool()
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


@dataclass
class Room:
    """What the follow-ups of one client request may still add: the budget less half the room the window keeps
    for the reply, less what the request costs so far (the first request's count, then each round's turn and
    answers).

    Half, not all of the reply's room: the window keeps a long thread near the top of its budget (the model's
    context window less that room), so a follow-up held to it would leave a recall answer a few tokens, nothing
    the model could use; the other half stays for the reply, and the request within the model's context window.
    """

    left: int
    counter: TokenCounter

    @classmethod
    def after(cls, thread: Thread, tokens: int) -> Room | None:
        """The room a first request of ``tokens`` leaves in ``thread``'s budget; None for a window without one."""
        manager = thread.window.manager
        if not isinstance(manager, TokenBudgetContextManager):
            return None
        reply = manager.max_tokens - manager.budget
        return cls(manager.max_tokens - reply // 2 - tokens, manager.counter)

    def fit(self, answers: Mapping[str, str], turn: int) -> dict[str, str]:
        """``answers`` cut to fit what is left once the model's ``turn`` (its tokens, with the answers' frames)
        is paid for, each to an equal share; the room shrinks by what they cost."""
        self.left -= turn
        share = max(self.left, 0) // max(len(answers), 1)
        out: dict[str, str] = {}
        for call_id, text in answers.items():
            out[call_id] = cut_to_tokens(text, share, self.counter.count_text, TRUNCATE_CUT)
            self.left -= self.counter.count_text(out[call_id])
        return out
