"""What one summarizer request may hold: every summarizer states an input limit, and callers stay under it.

A first call on a long history, or a big compaction, can drop tens of thousands of messages at once. Sent whole,
that is one request of millions of tokens: a model rejects it (and the history would leave the view with no
summary) and even the offline extractive summarizer spends a minute on it. A summarizer therefore states
``input_limit`` (tokens of one request, system prompt and previous summary included), and a request covers only
the newest dropped messages that fit, next to the previous summary. The older ones stay in the store (the
checkpointer's log, the memory's records), where recall can still find them.

`newest_within` is the one selection rule; the context managers and the summarizers themselves call it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TypeVar

DEFAULT_INPUT_LIMIT = 32_000
"""Input limit assumed for a summarizer that states none (a plain function, a user's object)."""

T = TypeVar("T")


def input_limit_of(summarizer: object, default: int | None = DEFAULT_INPUT_LIMIT) -> int | None:
    """The ``input_limit`` a summarizer states, or the one of the object or function an adapter wraps, else
    ``default``."""
    for candidate in (summarizer, getattr(summarizer, "obj", None), getattr(summarizer, "fn", None)):
        value = getattr(candidate, "input_limit", None)
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return value
    return default


def newest_within(items: Sequence[T], limit: int, cost: Callable[[T], int]) -> list[T]:
    """The longest run of newest ``items`` whose costs sum to at most ``limit`` (possibly none).

    Reads from the newest end and stops at the first item that does not fit, so the work is proportional to
    what is kept, not to how many items there are.
    """
    total = 0
    start = len(items)
    while start > 0:
        size = cost(items[start - 1])
        if total + size > limit:
            break
        total += size
        start -= 1
    return list(items[start:])
