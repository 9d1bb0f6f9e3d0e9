"""``windowkeeper simulate``: the demo's comparison on recorded trajectories, aggregated over all of them.

A call's prompt is what a request would carry: the messages before it and the file's tool definitions, counted as
`inspect` counts its tools zone. The tools go out unchanged with every call, so each budgeted strategy manages the
messages in what the budget leaves beside them, and a call's tokens (sent, and cached once anything of its prefix
is: the tools open the prompt) include them.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Callable

from ..evaluation.lineup import standard_lineup
from ..evaluation.replay import ReplayReport, StrategyReport, replay
from ..io import Conversation
from ..prompt.cost import tool_schema_tokens
from ..tokens import default_counter


def _merge(into: list[StrategyReport] | None, report: ReplayReport) -> list[StrategyReport]:
    if into is None:
        into = [StrategyReport(r.name) for r in report.strategies]
    for total, part in zip(into, report.strategies, strict=True):
        total.calls.extend(part.calls)
        total.seconds += part.seconds
        total.problems.extend(part.problems[: max(0, 5 - len(total.problems))])
    return into


def _with_tools(report: ReplayReport, tools: int) -> ReplayReport:
    """``report`` with ``tools`` tokens added to every call (and to its cached tokens when it had any)."""
    if tools:
        for strategy in report.strategies:
            strategy.calls = [
                dataclasses.replace(
                    call,
                    tokens=call.tokens + tools,
                    cached_tokens=call.cached_tokens + (tools if call.cached_tokens else 0),
                )
                for call in strategy.calls
            ]
    return report


def run_simulate(
    conversations: list[Conversation], *, budget: int, on_done: Callable[[int, int], None] | None = None
) -> ReplayReport | None:
    """Replay every conversation through the standard lineup; None when there was nothing to replay."""
    totals: list[StrategyReport] | None = None
    calls = 0
    prices = None
    counter = default_counter()
    for done, conversation in enumerate(conversations, start=1):
        tools = tool_schema_tokens(conversation.tools, counter)
        room = max(budget - tools, 1)
        report = _with_tools(asyncio.run(replay(conversation.messages, standard_lineup(room), counter=counter)), tools)
        if report.calls:
            totals = _merge(totals, report)
            calls += report.calls
            prices = report.prices
        if on_done is not None:
            on_done(done, len(conversations))
    if totals is None or prices is None:
        return None
    return ReplayReport(totals, calls, prices)
