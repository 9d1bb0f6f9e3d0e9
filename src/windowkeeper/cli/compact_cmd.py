"""``windowkeeper compact``: apply one strategy to a conversation and produce the view that would be sent."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from ..context.base import BaseContextManager
from ..context.baselines import sliding_window
from ..context.budget import TokenBudgetContextManager
from ..context.message import MessageContextManager
from ..context.summary import SummaryContextManager
from ..io import Conversation
from ..io.writer import OutFormat, encode, payload
from ..prompt import assemble
from ..prompt.cost import tool_schema_tokens
from ..state import AgentState
from ..summarize import ExtractiveSummarizer
from ..tokens import default_counter
from ..units import validate


class Strategy(StrEnum):
    """What ``compact --strategy`` applies."""

    BUDGET = "budget"
    SUMMARY = "summary"
    MESSAGE = "message"
    WINDOW = "window"


class Cut(StrEnum):
    """How far ``compact --strategy budget`` cuts: to the budget (a file gets no later call that would need the
    headroom), or to the low watermark as a running agent's manager does, leaving room for the calls to come."""

    BUDGET = "budget"
    WATERMARK = "watermark"


BUDGET_CUT_LOW_WATERMARK = 0.95
"""The low watermark of a cut to the budget: the view ends within 5% under it (whole messages and a summary
decide where exactly)."""


def _manager(
    strategy: Strategy, budget: int, cut: Cut, tools: list[dict[str, Any]]
) -> BaseContextManager[AgentState] | None:
    """The manager of ``strategy``, planning under ``tools`` (the file's tool definitions go out with the view, so
    the budget is what the messages may take beside them)."""
    counter = default_counter()
    if strategy is Strategy.BUDGET:
        marks = {"high_watermark": 1.0, "low_watermark": BUDGET_CUT_LOW_WATERMARK} if cut is Cut.BUDGET else {}
        return TokenBudgetContextManager(
            max_tokens=budget,
            reserve_tokens=0,
            counter=counter,
            summarizer=ExtractiveSummarizer(counter=counter),
            tools=tools,
            **marks,  # type: ignore[arg-type]
        )
    if strategy is Strategy.SUMMARY:
        room = max(budget - tool_schema_tokens(tools, counter), 1)
        return SummaryContextManager(model="extractive", max_messages=None, token_budget=room, keep_recent=8)
    if strategy is Strategy.MESSAGE:
        return MessageContextManager(max_messages=max(1, budget // 1000))
    return None


@dataclass
class Compacted:
    """The result of one compaction: the file to write and the numbers the JSON document reports."""

    data: bytes
    summary: dict[str, Any]

    @property
    def ok(self) -> bool:
        return not self.summary["over_budget"] and not self.summary["problems"]


def run_compact(
    conversation: Conversation,
    *,
    strategy: Strategy,
    budget: int,
    out_format: OutFormat = OutFormat.INPUT,
    cut: Cut = Cut.BUDGET,
) -> Compacted:
    counter = default_counter()
    state = conversation.state()
    tools = conversation.tools
    manager = _manager(strategy, budget, cut, tools)
    # counted whole even for the budget manager, which reads a long history from its newest end and only
    # estimates the part it drops unread (10% under on tau-bench): the count is what the user compares with
    # `inspect`, and on 200k tau-bench messages it adds 4.5 s to a 16 s command (reading the file is most of it)
    before = assemble(state, tools=tools, counter=counter).input_tokens
    if manager is None:
        state.context = sliding_window(state.context, budget, counter=counter)
    else:
        state = asyncio.run(manager.atrim_context(state))
    prompt = assemble(state, tools=tools, counter=counter)  # the request an Agent would send
    rendered = prompt.to_messages()
    data, fmt = payload(conversation, state, out_format)
    after = prompt.input_tokens
    provider = {OutFormat.ANTHROPIC: "anthropic", OutFormat.CLAUDE_CODE: "anthropic", OutFormat.GEMINI: "gemini"}
    problems = [str(p) for p in validate(rendered, provider.get(fmt, "openai"))]
    summary = {
        "conversation": conversation.name,
        "strategy": strategy.value,
        "budget": budget,
        "out_format": fmt.value,
        "cut": cut.value if strategy is Strategy.BUDGET else None,
        "messages_before": len(conversation.messages),
        "messages_after": len(state.context),
        "tokens_before": before,
        "tokens_before_exact": True,
        "tokens_after": after,
        "saved_share": round(1 - after / before, 6) if before else 0.0,
        "summary": bool(state.context_summary),
        "over_budget": after > budget,
        "problems": problems,
    }
    container = conversation.container if out_format is OutFormat.INPUT else None
    return Compacted(encode(data, fmt, container), summary)
