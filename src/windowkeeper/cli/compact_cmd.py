"""``windowkeeper compact``: apply one strategy to a conversation and produce the view that would be sent."""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from ..context.base import BaseContextManager
from ..context.baselines import sliding_window
from ..context.budget import TokenBudgetContextManager
from ..context.message import MessageContextManager
from ..context.summary import SummaryContextManager
from ..io import Conversation
from ..llm.formats import to_anthropic, to_gemini, to_openai_chat, to_responses_input
from ..prompt import assemble
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


class OutFormat(StrEnum):
    """The shape ``compact`` writes."""

    WINDOWKEEPER = "windowkeeper"
    OPENAI = "openai"
    RESPONSES = "responses"
    ANTHROPIC = "anthropic"
    GEMINI = "gemini"


def _manager(strategy: Strategy, budget: int) -> BaseContextManager[AgentState] | None:
    counter = default_counter()
    if strategy is Strategy.BUDGET:
        return TokenBudgetContextManager(
            max_tokens=budget, reserve_tokens=0, counter=counter, summarizer=ExtractiveSummarizer(counter=counter)
        )
    if strategy is Strategy.SUMMARY:
        return SummaryContextManager(model="extractive", max_messages=None, token_budget=budget, keep_recent=8)
    if strategy is Strategy.MESSAGE:
        return MessageContextManager(max_messages=max(1, budget // 1000))
    return None


@dataclass
class Compacted:
    """The result of one compaction: the payload to write and the numbers the JSON document reports."""

    payload: Any
    summary: dict[str, Any]

    @property
    def ok(self) -> bool:
        return not self.summary["over_budget"] and not self.summary["problems"]


def run_compact(conversation: Conversation, *, strategy: Strategy, budget: int, out_format: OutFormat) -> Compacted:
    counter = default_counter()
    state = conversation.state()
    tools = conversation.tools
    manager = _manager(strategy, budget)
    before: int | None = None
    if not isinstance(manager, TokenBudgetContextManager):
        before = assemble(state, tools=tools, counter=counter).input_tokens
    if manager is None:
        state.context = sliding_window(state.context, budget, counter=counter)
    else:
        state = asyncio.run(manager.atrim_context(state))
    exact = before is not None
    if before is None:
        # the budget manager reads a long history from its newest end and estimates the tokens of the part it
        # drops unread; counting all of it exactly here would cost more than the whole compaction
        metrics = manager.last_metrics if manager is not None else None
        if metrics is not None:
            before = metrics.tokens_before
        else:
            before = assemble(state, tools=tools, counter=counter).input_tokens
    prompt = assemble(state, tools=tools, counter=counter)  # the request an Agent would send
    rendered = prompt.to_messages()
    payload: Any
    if out_format is OutFormat.WINDOWKEEPER:
        payload = state.model_dump(mode="json", include={"context", "context_summary", "scratchpad"})
        if tools:
            payload["tools"] = tools
    elif out_format is OutFormat.OPENAI:
        payload = {"messages": to_openai_chat(rendered)}
    elif out_format is OutFormat.RESPONSES:
        instructions, items = to_responses_input(rendered)
        payload = {"instructions": instructions, "input": items}
    elif out_format is OutFormat.ANTHROPIC:
        system, msgs = to_anthropic(rendered)
        payload = {"system": system, "messages": msgs}
    else:
        system_instruction, contents = to_gemini(rendered)
        payload = {"system_instruction": system_instruction, "contents": contents}
    if isinstance(payload, dict):
        # a request without a system prompt leaves the key out: the APIs reject an explicit null
        payload = {k: v for k, v in payload.items() if v is not None or k == "context_summary"}
        if tools and out_format is not OutFormat.WINDOWKEEPER and out_format is not OutFormat.GEMINI:
            payload["tools"] = tools
    after = prompt.input_tokens
    problems = [str(p) for p in validate(rendered, "anthropic" if out_format is OutFormat.ANTHROPIC else "openai")]
    summary = {
        "conversation": conversation.name,
        "strategy": strategy.value,
        "budget": budget,
        "out_format": out_format.value,
        "messages_before": len(conversation.messages),
        "messages_after": len(state.context),
        "tokens_before": before,
        "tokens_before_exact": exact,
        "tokens_after": after,
        "saved_share": round(1 - after / before, 6) if before else 0.0,
        "summary": bool(state.context_summary),
        "over_budget": after > budget,
        "problems": problems,
    }
    return Compacted(payload, summary)


def encode_payload(payload: Any) -> bytes:
    return (json.dumps(payload, ensure_ascii=False, indent=1, allow_nan=False) + "\n").encode("utf-8")


__all__ = ["Compacted", "OutFormat", "Strategy", "encode_payload", "run_compact"]
