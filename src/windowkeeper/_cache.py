"""The two least-recently-used caches every layer uses: one bounded by entry count, one by estimated bytes.

Per-thread state (a manager's track of each conversation, a checkpointer's log positions) and memoized costs (a
passage's tokens, a message's extracted facts) must not grow without end in a process that serves many
conversations, so each holder keeps the most recently used entries up to a bound and rebuilds or re-reads the
rest. `LRUCache` bounds the number of entries, for values of about one size. `SizedCache` bounds their
estimated bytes, for originals of cleared messages and of messages that left a view: those differ in size by
orders of magnitude (a one-line reply, a 2 MB file read), and are handed back byte for byte while kept; older
ones are found elsewhere (the checkpointer's message log, the recall index).

Both live at the bottom of the package so every layer (summarizers, the graph, the managers, `Window`) can use
them; neither is thread-safe (a holder that is shared between threads locks around it).
"""

from __future__ import annotations

import itertools
import operator
from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterator, Sequence
from itertools import islice
from typing import Any, Generic, TypeVar

from .errors import ConfigurationError

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class LRUCache(Generic[K, V]):
    """At most ``max_entries`` entries; the least recently used go first.

    `get` and `put` make an entry the most recently used; `peek` reads without doing so (for a read that should
    not keep a thread alive, such as a report on it).
    """

    __slots__ = ("_items", "max_entries")

    def __init__(self, max_entries: int, *, name: str = "max_entries") -> None:
        if isinstance(max_entries, bool) or not isinstance(max_entries, int) or max_entries < 1:
            raise ConfigurationError(f"{name} must be a positive int, got {max_entries!r}")
        self.max_entries = max_entries
        self._items: OrderedDict[K, V] = OrderedDict()

    def get(self, key: K) -> V | None:
        """The value under ``key`` (now the most recently used), or None."""
        items = self._items
        value = items.get(key)
        if value is not None:
            items.move_to_end(key)
        return value

    def peek(self, key: K) -> V | None:
        """The value under ``key``, or None, leaving the order as it is."""
        return self._items.get(key)

    def put(self, key: K, value: V) -> None:
        """Keep ``value`` under ``key`` as the most recently used, dropping the least recently used past the bound."""
        items = self._items
        items[key] = value
        items.move_to_end(key)
        while len(items) > self.max_entries:
            items.popitem(last=False)

    def memo(self, key: K, make: Callable[[], V]) -> V:
        """The value under ``key``, computed by ``make()`` and kept when missing."""
        value = self.get(key)
        if value is None:
            value = make()
            self.put(key, value)
        return value

    def pop(self, key: K) -> V | None:
        """Remove ``key``; its value, or None."""
        return self._items.pop(key, None)

    def evict_while(
        self, over: Callable[[K, V], bool], *, in_use: Callable[[K], bool] | None = None
    ) -> Iterator[tuple[K, V]]:
        """Remove the least recently used entries, one at a time, while ``over(key, value)`` says the oldest must
        go, yielding each; an entry ``in_use`` names stays where it is and the next oldest is judged instead.

        For a holder whose bound is more than a count (bytes of its entries, idle time): the predicate reads the
        holder's own totals, which the holder updates for each entry yielded before the next one is judged, and the
        holder releases what an entry owned as it receives it. An entry in use (a call in flight on it) is never
        evicted under that call.
        """
        items, passed = self._items, 0
        while len(items) > passed:
            key, value = next(islice(items.items(), passed, None))
            if in_use is not None and in_use(key):
                passed += 1
                continue
            if not over(key, value):
                return
            del items[key]
            yield key, value

    def drop(self, keep: Callable[[K, V], bool] | None = None) -> None:
        """Drop every entry (None), or those ``keep`` says no to."""
        if keep is None:
            self._items.clear()
            return
        for key in [k for k, v in self._items.items() if not keep(k, v)]:
            del self._items[key]

    def __getitem__(self, key: K) -> V:
        """The value under ``key`` (KeyError when missing), leaving the order as it is, like `peek`."""
        return self._items[key]

    def __contains__(self, key: object) -> bool:
        return key in self._items

    def __len__(self) -> int:
        return len(self._items)

    def __iter__(self) -> Iterator[K]:
        """The keys, least recently used first."""
        return iter(self._items)


class SizedCache(Generic[K, V]):
    """At most ``max_bytes`` of values by their stated sizes; the least recently used go first."""

    __slots__ = ("_items", "bytes", "max_bytes")

    def __init__(self, max_bytes: int, *, name: str = "max_bytes") -> None:
        if isinstance(max_bytes, bool) or not isinstance(max_bytes, int) or max_bytes < 0:
            raise ConfigurationError(
                f"{name} must be a non-negative int (0 keeps nothing in memory), got {max_bytes!r}",
            )
        self.max_bytes = max_bytes
        self.bytes = 0
        self._items: OrderedDict[K, tuple[V, int]] = OrderedDict()

    def put(self, key: K, value: V, size: int) -> None:
        """Keep ``value`` (replacing what ``key`` held); a value larger than the whole bound is not kept."""
        old = self._items.pop(key, None)
        if old is not None:
            self.bytes -= old[1]
        if size > self.max_bytes:
            return
        self._items[key] = (value, size)
        self.bytes += size
        while self.bytes > self.max_bytes:
            _, (_, evicted) = self._items.popitem(last=False)
            self.bytes -= evicted

    def get(self, key: K) -> V | None:
        """The value under ``key`` (now the most recently used), or None."""
        hit = self._items.get(key)
        if hit is None:
            return None
        self._items.move_to_end(key)
        return hit[0]

    def memo(self, key: K, make: Callable[[], V], size: Callable[[V], int]) -> V:
        """The value under ``key``, computed by ``make()`` and kept at ``size(value)`` bytes when missing."""
        value = self.get(key)
        if value is None:
            value = make()
            self.put(key, value, size(value))
        return value

    def drop(self, keep: Callable[[K, V], bool] | None = None) -> None:
        """Drop every entry (None), or those ``keep`` says no to."""
        if keep is None:
            self._items.clear()
            self.bytes = 0
            return
        for key in [k for k, (v, _) in self._items.items() if not keep(k, v)]:
            self.bytes -= self._items.pop(key)[1]

    def __contains__(self, key: object) -> bool:
        return key in self._items

    def __len__(self) -> int:
        return len(self._items)

    def __iter__(self) -> Iterator[K]:
        """The keys, least recently used first."""
        return iter(self._items)


def shared_prefix(a: Sequence[Any], b: Sequence[Any]) -> int:
    """How many leading items ``a`` and ``b`` share by identity, found in C (`map` of `operator.is_not`): for a
    holder that reuses what it worked out for the part of a list that is the same objects as last time."""
    return next(itertools.compress(itertools.count(), map(operator.is_not, a, b)), min(len(a), len(b)))


__all__ = ["LRUCache", "SizedCache", "shared_prefix"]
