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
from ..io import Conversation, ConversationFileError
from ..io.reader import parse_text
from ..io.source import RawDocument
from ..io.writer import JSONL_FORMATS, OutFormat, encode, payload, resolve
from ..prompt import assemble
from ..prompt.cost import tool_schema_tokens
from ..state import AgentState
from ..summarize import ExtractiveSummarizer
from ..tokens import default_counter
from .inspect_cmd import conversation_report


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


WRITTEN = "<compacted>"
"""The source name of the written file when it is read back to be counted (with the suffix saying whether it
is JSON Lines, as a file's name does)."""

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
        from ..integrations._recall import restore_tool_declared, without_restore_tool  # not for --help: 90 ms

        if not restore_tool_declared(tools):
            # the pointers name ``recall(pointer_id=...)``; the file's request gives the model no such tool (and
            # nothing behind a written file answers it), so they say how else to get the output, in fewer tokens
            state.context = without_restore_tool(state.context, {})
    data, fmt = payload(conversation, state, out_format)
    container = conversation.container if out_format is OutFormat.INPUT else None
    encoded = encode(data, fmt, container)
    provider = {OutFormat.ANTHROPIC: "anthropic", OutFormat.CLAUDE_CODE: "anthropic", OutFormat.GEMINI: "gemini"}
    lines = fmt in JSONL_FORMATS or container is not None
    checked = (provider.get(fmt, "openai"),)
    written: dict[str, Any] | None = None
    if fmt is resolve(OutFormat.INPUT, conversation) and _unchanged(conversation, state):
        # the file written is the input's items in the input's format: its recount is the input's report, whose
        # counts `before` just made (reading 7.4k messages back doubled a window run that kept them all). Not when
        # the input has a problem: the writer mends some (it merges two Gemini user turns in a row)
        written = conversation_report(conversation, reserve=0, providers=checked)
        if any(written["problems"].values()):
            written = None
    if written is None:
        name = f"{WRITTEN}{'.jsonl' if lines else '.json'}"
        written = _recount(encoded, fmt, checked[0], name)
    after = written["tokens"]["input"]
    summary = {
        "conversation": conversation.name,
        "strategy": strategy.value,
        "budget": budget,
        "out_format": fmt.value,
        "cut": cut.value if strategy is Strategy.BUDGET else None,
        "messages_before": len(conversation.messages),
        "messages_after": written["messages"],
        "tokens_before": before,
        "tokens_before_exact": True,
        "tokens_after": after,
        "saved_share": round(1 - after / before, 6) if before else 0.0,
        "summary": bool(state.context_summary),
        "over_budget": after > budget,
        "problems": [
            f"[{p['index']}] {p['code']}: {p['message']}" for found in written["problems"].values() for p in found
        ],
    }
    return Compacted(encoded, summary)


def _unchanged(conversation: Conversation, state: AgentState) -> bool:
    """Whether the strategy left ``conversation`` as it was read (every message, the summary, the scratchpad)."""
    kept = state.context
    return (
        state.context_summary == conversation.summary
        and state.scratchpad == conversation.scratchpad
        and len(kept) == len(conversation.messages)
        and all(a is b or a == b for a, b in zip(kept, conversation.messages, strict=True))
    )


def _recount(encoded: bytes, fmt: OutFormat, provider: str, name: str) -> dict[str, Any]:
    """The `inspect` report of the file about to be written, read back as `inspect` reads it. The numbers
    `compact` prints are this file's: counted from the managed view instead, they missed what writing it in a
    format does (an Anthropic or Gemini turn holding a recall note and the user's text is one message there, a
    session log carries the summary as an event of its own), and the file disagreed with the summary line. The
    problems are the ones a provider would find in the file, its turn order included."""
    try:
        text = encoded.decode("utf-8")
        found = parse_text(RawDocument(name, text), fmt.value)
    except ConversationFileError as exc:  # a writer defect, not the user's: say so rather than write it
        raise ConversationFileError(
            f"the {fmt.value} file compact made does not read back ({exc}); please report this with the input, "
            "or pick another --out-format"
        ) from exc
    return conversation_report(found[0], reserve=0, providers=(provider,))
