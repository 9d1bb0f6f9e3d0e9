"""`json_depth`, which every reader runs on the payload it is handed before reading it, against its definition."""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from windowkeeper.boundary import MAX_JSON_DEPTH, json_depth


class Items(list[Any]):
    """A list subclass (as `BlockList` is): nests like a list."""


def depth(value: Any) -> int:
    """The definition: a scalar is 0, a container one more than its deepest child."""
    if isinstance(value, dict):
        children: Any = value.values()
    elif isinstance(value, list | tuple):
        children = value
    else:
        return 0
    return 1 + max(map(depth, children), default=0)


scalars = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=5)
values = st.recursive(
    scalars,
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.lists(inner, max_size=3).map(tuple)
        | st.lists(inner, max_size=3).map(Items)
        | st.dictionaries(st.text(max_size=3), inner, max_size=4)
        | st.dictionaries(st.text(max_size=3), inner, max_size=3).map(OrderedDict)
    ),
    max_leaves=40,
)


@settings(max_examples=500, deadline=None)
@given(values, st.integers(0, 12))
def test_json_depth_is_the_nesting_depth_up_to_one_past_the_limit(value: Any, limit: int) -> None:
    assert json_depth(value, limit=limit) == min(depth(value), limit + 1)


def test_json_depth_stops_on_a_cycle_one_level_past_the_limit() -> None:
    loop: list[Any] = []
    loop.append(loop)
    loop.append({"again": loop})
    assert json_depth(loop, limit=MAX_JSON_DEPTH) == MAX_JSON_DEPTH + 1


def test_json_problem_names_the_first_non_finite_path_and_passes_finite_documents() -> None:
    """The store check walks every document twice at most: finite ones once, without building element paths, and
    one holding NaN or Infinity again to name where (the same path the single path-building walk named)."""
    from windowkeeper.boundary import json_problem

    assert json_problem({"a": [1.5, {"b": 2.0}], "c": (3, "x", None)}) is None
    problem = json_problem({"a": [1, {"b": float("nan")}], "c": [float("inf")]})
    assert problem is not None and "at $.c[0]" in problem
    problem = json_problem({"a": [1, {"b": float("-inf")}]})
    assert problem is not None and "at $.a[1].b" in problem
