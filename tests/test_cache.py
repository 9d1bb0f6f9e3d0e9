"""`LRUCache` and `SizedCache` (windowkeeper/_cache.py): the bounded caches every layer keeps its per-thread
state and memoized costs in."""

from __future__ import annotations

import copy
import pickle

import pytest
from hypothesis import given
from hypothesis import strategies as st

from windowkeeper._cache import LRUCache, SizedCache
from windowkeeper.errors import ConfigurationError


def test_the_least_recently_used_entry_goes_first() -> None:
    cache: LRUCache[str, int] = LRUCache(2)
    cache.put("a", 1)
    cache.put("b", 2)
    assert cache.get("a") == 1  # "a" is now the most recently used
    cache.put("c", 3)
    assert list(cache) == ["a", "c"] and "b" not in cache and len(cache) == 2


def test_peek_and_indexing_read_without_keeping_an_entry_alive() -> None:
    cache: LRUCache[str, int] = LRUCache(2)
    cache.put("a", 1)
    cache.put("b", 2)
    assert cache.peek("a") == 1 and cache["a"] == 1 and cache.peek("zz") is None
    cache.put("c", 3)
    assert list(cache) == ["b", "c"]
    with pytest.raises(KeyError):
        cache["a"]


def test_put_replaces_and_refreshes() -> None:
    cache: LRUCache[str, int] = LRUCache(2)
    cache.put("a", 1)
    cache.put("b", 2)
    cache.put("a", 10)
    cache.put("c", 3)
    assert list(cache) == ["a", "c"] and cache["a"] == 10


def test_memo_computes_once_while_kept() -> None:
    cache: LRUCache[str, int] = LRUCache(1)
    calls: list[str] = []

    def make(key: str) -> int:
        calls.append(key)
        return len(key)

    assert cache.memo("abc", lambda: make("abc")) == 3
    assert cache.memo("abc", lambda: make("abc")) == 3
    assert cache.memo("zero", lambda: 0) == 0 and cache.memo("zero", lambda: make("zero")) == 0  # 0 is a value
    assert cache.memo("abc", lambda: make("abc")) == 3  # evicted by "zero": computed again
    assert calls == ["abc", "abc"]


def test_pop_and_drop() -> None:
    cache: LRUCache[tuple[str, int], str] = LRUCache(10)
    for thread in ("t1", "t2"):
        for n in range(3):
            cache.put((thread, n), f"{thread}-{n}")
    assert cache.pop(("t1", 0)) == "t1-0" and cache.pop(("t1", 0)) is None
    cache.drop(lambda key, _: key[0] != "t1")
    assert list(cache) == [("t2", 0), ("t2", 1), ("t2", 2)]
    cache.drop()
    assert not cache and list(cache) == []


@pytest.mark.parametrize("bound", [0, -1, True, 1.5, "8"])
def test_a_bad_bound_is_rejected_by_name(bound: object) -> None:
    with pytest.raises(ConfigurationError, match=r"max_threads must be a positive int, got"):
        LRUCache(bound, name="max_threads")  # type: ignore[arg-type]


def test_it_copies_and_pickles_with_the_managers_that_hold_it() -> None:
    cache: LRUCache[str, list[int]] = LRUCache(3)
    cache.put("a", [1])
    cache.put("b", [2])
    for other in (copy.deepcopy(cache), pickle.loads(pickle.dumps(cache))):
        assert list(other) == ["a", "b"] and other["a"] == [1] and other.max_entries == 3
        other.put("c", [3])
        other.put("d", [4])
        assert list(other) == ["b", "c", "d"]
    assert list(cache) == ["a", "b"]


@given(st.lists(st.tuples(st.sampled_from(["get", "put", "peek", "pop"]), st.integers(0, 6)), max_size=60))
def test_it_behaves_like_a_reference_lru(ops: list[tuple[str, int]]) -> None:
    """Against a plain list model: the order of keys and the values after any sequence of operations."""
    cache: LRUCache[int, int] = LRUCache(3)
    model: list[tuple[int, int]] = []  # least recently used first
    for step, (op, key) in enumerate(ops):
        found = next((i for i, (k, _) in enumerate(model) if k == key), None)
        if op == "put":
            cache.put(key, step)
            if found is not None:
                model.pop(found)
            model.append((key, step))
            del model[:-3]
        elif op == "get":
            assert cache.get(key) == (model[found][1] if found is not None else None)
            if found is not None:
                model.append(model.pop(found))
        elif op == "peek":
            assert cache.peek(key) == (model[found][1] if found is not None else None)
        else:
            assert cache.pop(key) == (model.pop(found)[1] if found is not None else None)
        assert list(cache) == [k for k, _ in model]


def test_the_sized_cache_is_bounded_by_bytes() -> None:
    cache: SizedCache[str, str] = SizedCache(10)
    cache.put("a", "x" * 4, 4)
    cache.put("b", "y" * 4, 4)
    assert cache.get("a") == "xxxx"
    cache.put("c", "z" * 4, 4)
    assert "b" not in cache and cache.bytes == 8
    cache.put("huge", "w" * 11, 11)  # larger than the whole bound: not kept, nothing else evicted
    assert "huge" not in cache and len(cache) == 2


def test_the_sized_cache_memo_keeps_each_value_at_its_stated_size() -> None:
    cache: SizedCache[str, str] = SizedCache(10)
    made: list[str] = []

    def make(key: str) -> str:
        made.append(key)
        return key * 3

    assert cache.memo("ab", lambda: make("ab"), len) == "ababab"
    assert cache.memo("ab", lambda: make("ab"), len) == "ababab" and made == ["ab"]
    cache.memo("cd", lambda: make("cd"), len)  # 6 + 6 > 10: the older goes
    assert "ab" not in cache and cache.bytes == 6 and list(cache) == ["cd"]
    assert SizedCache(0).memo("k", lambda: "v", len) == "v"  # a zero bound computes every time, keeps nothing


def test_evict_while_passes_over_entries_in_use_and_sees_the_holders_totals() -> None:
    cache: LRUCache[str, int] = LRUCache(10)
    for key, size in (("a", 5), ("b", 4), ("c", 3), ("d", 2)):
        cache.put(key, size)
    held = {"total": 14}
    evicted = []
    for key, size in cache.evict_while(lambda _k, _v: held["total"] > 6):
        held["total"] -= size  # the holder's own total, read by the predicate before the next entry is judged
        evicted.append(key)
    assert evicted == ["a", "b"] and list(cache) == ["c", "d"] and held["total"] == 5
    assert list(cache.evict_while(lambda _k, _v: True, in_use=lambda k: k == "c")) == [("d", 2)]
    assert list(cache) == ["c"]  # "c" was the oldest, but in use
