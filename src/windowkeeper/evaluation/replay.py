"""Replay a recorded session call by call through several strategies and measure each one.

A "call" is every point where the recorded agent produced an assistant message: the model was called with the
history before it. Each strategy is given what is new since its previous call and returns its view; the replay
counts the view exactly, compares it with the strategy's previous prompt to find the cacheable prefix, prices it,
validates it for each provider (a view is invalid when it has a structural problem the recorded history did not
already have), and at the end checks which ground-truth facts the final view still contains.
"""

from __future__ import annotations

import operator
import re
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace

from ..blocks import ToolCallBlock
from ..messages import Message, participant_name
from ..prompt import AssembledPrompt, assemble_messages
from ..prompt.recall import is_recall
from ..tokens import TokenCounter, default_counter
from ..units import Problem, group_units, validate
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


def unit_floor(view: View, counter: TokenCounter | None = None) -> int:
    """The smallest prompt that still answers the view's turn: its system messages, the user message that opened
    the newest turn and the newest unit (a tool call with its results, or one message), with no summary and no
    recall.

    A prompt over its budget only because this is (one tool result larger than the budget beside the system
    text, say) is the one case no manager can hold without rewriting what the model is working on; measures of
    "over budget" count it apart."""
    history = [m for m in view.messages if not is_recall(m)]
    systems = [m for m in history if m.role == "system"]
    others = [m for m in history if m.role != "system"]
    minimal = systems
    if others:
        last = group_units(others)[-1].start
        opener = next((i for i in range(last, -1, -1) if others[i].role == "user"), last)
        minimal = [*systems, *([others[opener]] if opener < last else []), *others[last:]]
    return assembled(View(minimal, None), counter).input_tokens


def prompt_messages(view: View) -> list[Message]:
    """The view as the model receives it: the system text (system messages, summary) as one message, then the rest."""
    return assembled(view).to_messages()


def view_text(view: View) -> str:
    """All text a model could read in a view, used to check which facts survived."""
    parts = [view.summary or ""]
    for msg in view.messages:
        name = participant_name(msg)
        if name:
            parts.append(name)
        parts.append(msg.text())
        parts.append(msg.reasoning_text())
        for block in msg.content:
            if isinstance(block, ToolCallBlock):
                parts.append(f"{block.name} {block.args}")
    return "\n".join(parts)


_STAMP = re.compile(r"\b\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?")
"""An ISO 8601 date-time as a machine writes it (the stamps a memory puts in its summary headers)."""


def answer_shown(answer: str, text: str) -> bool:
    """Whether ``answer`` is in ``text`` (a `view_text`) as words of its own, ignoring case.

    Machine time stamps are taken out first and the answer must not be part of a longer word or number: a short
    answer such as ``33`` or ``2`` otherwise "appears" in the wall-clock second a replay happened to summarize
    (``2026-12-04T18:33:05``) or in any larger number, which made answer-in-view scores change from run to run.
    """
    wanted = answer.strip().casefold()
    if not wanted:
        return False
    # not inside a longer word or number ("$400" is not shown by "$400,000", nor "33" by "1335" or "2.33")
    pattern = re.compile(rf"(?<!\w)(?<!\d[.,]){re.escape(wanted)}(?!\w)(?![.,]\d)")
    return pattern.search(_STAMP.sub(" ", text).casefold()) is not None


def call_points(messages: Sequence[Message]) -> list[int]:
    """Indices of the assistant messages: each one is a model call whose prompt is everything before it."""
    return [i for i, m in enumerate(messages) if m.role == "assistant" and i > 0]


@dataclass
class _Measured:
    """What one call of a strategy sent: its pieces, its count and its problems per provider."""

    messages: Sequence[Message]
    summary: str | None
    items: list[tuple[str, int]]
    tokens: int
    problems: list[tuple[str, Problem]]
    prompt_len: int


class _Measure:
    """Measures one strategy's calls; a view that only appends to the previous one costs only what it appended.

    Most calls of most strategies send the previous view plus the new messages (that is the point of a
    cache-friendly strategy, and the full-history baseline does nothing else), so re-assembling, re-counting and
    re-validating the whole view each call would make a replay quadratic in the session's length. For such an
    extension the pieces, the count and the cacheable prefix follow from the previous call's; validation runs on
    the tail from the last user message before the new part (the unit it may complete, and what follows).
    """

    def __init__(self, counter: TokenCounter, providers: Sequence[str]) -> None:
        self.counter = counter
        self.providers = providers
        self.previous: _Measured | None = None

    def observe(self, view: View) -> tuple[_Measured, int, bool | None]:
        prev = self.previous
        current = self._extend(view, prev) if prev is not None else None
        if current is None:
            current = self._full(view)
        self.previous = current
        if prev is None:
            return current, 0, None
        cached = 0
        shared = 0
        for (key_prev, _), (key_now, tokens) in zip(prev.items, current.items, strict=False):
            if key_prev != key_now:
                break
            cached += tokens
            shared += 1
        return current, cached, shared == len(prev.items)

    def _full(self, view: View) -> _Measured:
        request = assembled(view, self.counter)
        prompt = request.to_messages()
        head = len(prompt) - len(request.messages)  # the system text sent as one leading message
        problems = [(prov, replace(p, index=p.index - head)) for prov in self.providers for p in validate(prompt, prov)]
        return _Measured(view.messages, view.summary, request.pieces(), request.input_tokens, problems, len(prompt))

    def _extend(self, view: View, prev: _Measured) -> _Measured | None:
        messages, old = view.messages, prev.messages
        n = len(old)
        if view.summary != prev.summary or len(messages) < n or not all(map(operator.is_, messages, old)):
            return None
        new = messages[n:]
        if any(m.role == "system" for m in new):
            return None
        count = self.counter.count_message
        added = [(m.fingerprint(), count(m)) for m in new]
        start = n
        while start > 0 and messages[start - 1].role != "user":
            start -= 1
        start = max(start - 1, 0)
        tail = messages[start:]
        if not new:
            return prev
        problems = [(prov, replace(p, index=p.index + start)) for prov in self.providers for p in validate(tail, prov)]
        kept = [item for item in prev.problems if item[1].index < start]
        return _Measured(
            messages,
            view.summary,
            [*prev.items, *added],
            prev.tokens + sum(t for _, t in added),
            [*kept, *problems],
            prev.prompt_len + len(new),
        )


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
    measures = [_Measure(counter, providers) for _ in strategies]
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
            measured, cached, stable = measures[idx].observe(view)
            problems = [p for _, p in measured.problems]
            if problems:
                if n not in inherited:
                    history = messages[:point]
                    inherited[n] = {(prov, p.code) for prov in providers for p in validate(history, prov)}
                problems = [p for prov, p in measured.problems if (prov, p.code) not in inherited[n]]
            if problems and len(reports[idx].problems) < 5:
                reports[idx].problems.append(f"call {n}: {problems[0]}")
            reports[idx].calls.append(
                CallRecord(
                    tokens=measured.tokens,
                    cached_tokens=cached,
                    prefix_stable=stable,
                    valid=not problems,
                    messages=measured.prompt_len,
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
