"""A least-recently-used cache bounded by the estimated bytes of what it holds, not by its entry count.

Originals of cleared messages and of messages that left a view are kept so they can be handed back byte for byte,
but a long session produces them without end; each holder keeps only the most recent ones up to a byte bound and
finds older ones elsewhere (the checkpointer's message log, the recall index). Entries differ in size by orders of
magnitude (a one-line reply, a 2 MB file read), so the bound is on bytes.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

from ..errors import ConfigurationError

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


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


__all__ = ["SizedCache"]
