"""A cleared result's call signature: the arguments' JSON through the C encoder made once is the encoder object's.

`windowkeeper.context.pointers` writes the arguments with a sorted-keys C encoder built at import (no cycle check)
instead of ``JSONEncoder.encode`` (which builds one per call). Generated arguments (nested containers, floats,
non-ASCII keys, values only ``default=str`` can write) must give the same text, and a self-containing value the
same ValueError.
"""

from __future__ import annotations

import datetime
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from windowkeeper.context import pointers

_SCALARS = st.one_of(
    st.text(max_size=12),
    st.integers(),
    st.floats(allow_nan=True, allow_infinity=True),
    st.booleans(),
    st.none(),
)
_VALUES = st.recursive(
    _SCALARS,
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=8), inner, max_size=4)),
    max_leaves=20,
)


@given(st.dictionaries(st.text(max_size=10), _VALUES, max_size=6))
def test_same_text_as_the_encoder_object(args: dict[str, Any]) -> None:
    assert pointers._sorted_json(args) == pointers._SORTED_JSON.encode(args)


def test_values_json_cannot_hold_are_written_with_str() -> None:
    args = {"when": datetime.date(2024, 5, 1), "b": {3, 1}, "a": "é"}
    assert pointers._sorted_json(args) == pointers._SORTED_JSON.encode(args)
    assert pointers._sorted_json(args).startswith('{"a": "é", "b": ')


def test_a_self_containing_value_raises_what_the_encoder_raised() -> None:
    args: dict[str, Any] = {"x": 1}
    args["self"] = args
    with pytest.raises(ValueError, match="Circular reference"):
        pointers._SORTED_JSON.encode(args)
    with pytest.raises(ValueError, match="Circular reference"):
        pointers._sorted_json(args)


def test_the_fast_encoder_exists_here() -> None:
    # CPython ships the C encoder; without it the encoder object is used and nothing above would test the fast path
    assert pointers._SORTED_JSON_CHUNKS is not None
