"""The per-turn sliding window: the baseline a cache-aware budget is measured against.

It is what most agents do: before every call, keep the system messages and as many of the newest units as fit
the budget. The view is always as full as it can be, but its start moves on every call once the budget is
reached, so a provider's prompt cache can serve only the system messages. It follows the same validity rules as
the budget manager (whole units only; when the oldest kept unit does not start with a user message, the user
message that started it is kept too) so that comparisons measure the caching difference and nothing else.
"""

from __future__ import annotations

from collections.abc import Sequence

from .._validate import check_positive_int
from ..messages import Message
from ..tokens import TokenCounter, default_counter
from ..units import Unit, group_units


def sliding_window(messages: Sequence[Message], budget: int, *, counter: TokenCounter | None = None) -> list[Message]:
    """System messages plus the newest units that fit ``budget`` tokens (the newest unit is always kept)."""
    check_positive_int("budget", budget)
    tc = counter if counter is not None else default_counter()
    units = group_units(messages)
    sizes = [sum(tc.count_message(m) for m in u.messages) for u in units]
    total = sum(sizes) + tc.count_messages([])
    if total <= budget:
        return list(messages)
    return window_of(units, sizes, total, budget)[0]


def window_of(units: Sequence[Unit], sizes: Sequence[int], total: int, budget: int) -> tuple[list[Message], int]:
    """The window of ``units`` (of ``total`` tokens, over ``budget``) and the index of the newest user unit at or
    before its first fitting unit: no later call on a longer history keeps anything before that unit, except
    system messages (`windowkeeper.evaluation.strategies.SlidingWindow` restarts from it)."""
    others = [i for i, u in enumerate(units) if u.kind != "system"]
    used = total - sum(sizes[i] for i in others)
    first = len(others)
    while first > 0 and (first == len(others) or used + sizes[others[first - 1]] <= budget):
        first -= 1
        used += sizes[others[first]]
    keep = set(others[first:])
    if first < len(others) and units[others[first]].kind != "user":
        pin = next((others[j] for j in range(first - 1, -1, -1) if units[others[j]].kind == "user"), None)
        if pin is not None:
            keep.add(pin)
            used += sizes[pin]
            for i in others[first:-1]:
                if used <= budget:
                    break
                if units[i].kind == "user":
                    continue
                keep.discard(i)
                used -= sizes[i]
    anchor = next((others[j] for j in range(first, -1, -1) if j < len(others) and units[others[j]].kind == "user"), 0)
    out: list[Message] = []
    for i, unit in enumerate(units):
        if unit.kind == "system" or i in keep:
            out.extend(unit.messages)
    return out, anchor
