"""Replay a recorded session call by call through several strategies and measure each one.

A "call" is every point where the recorded agent produced an assistant message: the model was called with the
history before it. Each strategy is given what is new since its previous call and returns its view; the replay
counts the view exactly, compares it with the strategy's previous prompt to find the cacheable prefix, prices it,
validates it for each provider (a view is invalid when it has a structural problem the recorded history did not
already have), and at the end checks which ground-truth facts the final view still contains.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

from ..blocks import ToolCallBlock
from ..messages import Message
from ..prompt import AssembledPrompt, assemble_messages
from ..tokens import TokenCounter, default_counter
from ..units import validate
from .pricing import Prices
from .strategies import Strategy, View


@dataclass(frozen=True)
class CallRecord:
    tokens: int
    cached_tokens: int
    prefix_stable: bool | None
    valid: bool
    messages: int


@dataclass
class StrategyReport:
    name: str
    calls: list[CallRecord] = field(default_factory=list)
    seconds: float = 0.0
    facts_total: int = 0
    facts_retained: int = 0
    problems: list[str] = field(default_factory=list)

    @property
    def tokens_sent(self) -> int:
        return sum(c.tokens for c in self.calls)

    @property
    def cached_tokens(self) -> int:
        return sum(c.cached_tokens for c in self.calls)

    @property
    def invalid_calls(self) -> int:
        return sum(1 for c in self.calls if not c.valid)

    @property
    def prefix_stable_share(self) -> float:
        judged = [c.prefix_stable for c in self.calls if c.prefix_stable is not None]
        return sum(judged) / len(judged) if judged else 1.0

    @property
    def facts_retained_share(self) -> float:
        return self.facts_retained / self.facts_total if self.facts_total else 1.0

    def cost(self, prices: Prices, *, caching: bool) -> float:
        if not caching:
            return prices.cost(self.tokens_sent)
        return prices.cost(self.tokens_sent - self.cached_tokens, self.cached_tokens)


@dataclass
class ReplayReport:
    strategies: list[StrategyReport]
    calls: int
    prices: Prices

    def baseline(self) -> StrategyReport:
        return self.strategies[0]

    def saved_share(self, report: StrategyReport) -> float:
        base = self.baseline().tokens_sent
        return 1.0 - report.tokens_sent / base if base else 0.0


def assembled(view: View, counter: TokenCounter | None = None) -> AssembledPrompt:
    """The request an `Agent` sends for this view (`windowkeeper.prompt.assemble`: one system text, then the rest)."""
    return assemble_messages(view.messages, summary=view.summary, counter=counter)


def prompt_messages(view: View) -> list[Message]:
    """The view as the model receives it: the system text (system messages, summary) as one message, then the rest."""
    return assembled(view).to_messages()


def view_text(view: View) -> str:
    """All text a model could read in a view, used to check which facts survived."""
    parts = [view.summary or ""]
    for msg in view.messages:
        parts.append(msg.text())
        parts.append(msg.reasoning_text())
        for block in msg.content:
            if isinstance(block, ToolCallBlock):
                parts.append(f"{block.name} {block.args}")
    return "\n".join(parts)


def call_points(messages: Sequence[Message]) -> list[int]:
    """Indices of the assistant messages: each one is a model call whose prompt is everything before it."""
    return [i for i, m in enumerate(messages) if m.role == "assistant" and i > 0]


class _PromptTracker:
    """Remembers one strategy's previous prompt to find how much of the new one a prompt cache would serve."""

    def __init__(self) -> None:
        self.previous: list[tuple[str, int]] | None = None

    def observe(self, items: list[tuple[str, int]]) -> tuple[int, bool | None]:
        prev = self.previous
        self.previous = items
        if prev is None:
            return 0, None
        cached = 0
        shared = 0
        for (fp_prev, _), (fp_now, tokens) in zip(prev, items, strict=False):
            if fp_prev != fp_now:
                break
            cached += tokens
            shared += 1
        return cached, shared == len(prev)


async def replay(
    messages: Sequence[Message],
    strategies: Iterable[Strategy],
    *,
    counter: TokenCounter | None = None,
    prices: Prices | None = None,
    facts: Sequence[str] = (),
    providers: Sequence[str] = ("openai", "anthropic"),
    max_calls: int | None = None,
    on_call: Callable[[int, int], None] | None = None,
) -> ReplayReport:
    """Drive every strategy through the session and return one report per strategy, in the given order."""
    counter = counter or default_counter()
    prices = prices or Prices()
    strategies = list(strategies)
    points = call_points(messages)
    if max_calls is not None:
        points = points[:max_calls]
    reports = [StrategyReport(s.name, facts_total=len(facts)) for s in strategies]
    trackers = [_PromptTracker() for _ in strategies]
    last_views: dict[int, View] = {}
    # Problems the recorded history itself has at a call (e.g. tool call ids reused across turns) are not
    # charged to a strategy; only problems its view introduces count as invalid.
    inherited: dict[int, set[tuple[str, str]]] = {}
    start = 0
    for n, point in enumerate(points):
        new = list(messages[start:point])
        start = point
        for idx, strategy in enumerate(strategies):
            t0 = time.perf_counter()
            view = await strategy.step(new)
            reports[idx].seconds += time.perf_counter() - t0
            request = assembled(view, counter)
            prompt = request.to_messages()
            items = request.pieces()
            cached, stable = trackers[idx].observe(items)
            problems = [p for prov in providers for p in validate(prompt, prov)]
            if problems:
                if n not in inherited:
                    history = messages[:point]
                    inherited[n] = {(prov, p.code) for prov in providers for p in validate(history, prov)}
                problems = [
                    p for prov in providers for p in validate(prompt, prov) if (prov, p.code) not in inherited[n]
                ]
            if problems and len(reports[idx].problems) < 5:
                reports[idx].problems.append(f"call {n}: {problems[0]}")
            reports[idx].calls.append(
                CallRecord(
                    tokens=request.input_tokens,
                    cached_tokens=cached,
                    prefix_stable=stable,
                    valid=not problems,
                    messages=len(prompt),
                )
            )
            last_views[idx] = view
        if on_call is not None:
            on_call(n + 1, len(points))
    if facts:
        for idx, view in last_views.items():
            report = reports[idx]
            text = view_text(view).casefold()
            report.facts_retained = sum(1 for f in facts if f.casefold() in text)
    return ReplayReport(reports, len(points), prices)


__all__ = [
    "CallRecord",
    "ReplayReport",
    "StrategyReport",
    "assembled",
    "call_points",
    "prompt_messages",
    "replay",
    "view_text",
]
