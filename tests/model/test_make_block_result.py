"""`make_block("tool_result", ...)` with call id, output, status and name (the budget manager's pointer to a cleared
result) gives the block the constructor gives, fields set included."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from windowkeeper.blocks import ToolResultBlock, make_block

_TEXT = st.text(max_size=40)


@given(
    call_id=_TEXT,
    output=_TEXT,
    status=st.sampled_from(["completed", "error"]),
    name=st.none() | _TEXT,
)
def test_four_values_equal_the_constructor(call_id: str, output: str, status: str, name: str | None) -> None:
    made = make_block("tool_result", call_id=call_id, output=output, status=status, name=name)
    built = ToolResultBlock(call_id=call_id, output=output, status=status, name=name)
    assert type(made) is ToolResultBlock
    assert made == built
    assert made.__dict__ == built.__dict__
    assert list(made.__dict__) == list(built.__dict__)
    assert made.model_fields_set == built.model_fields_set == {"call_id", "output", "status", "name"}


def test_lone_surrogates_cleaned_as_the_constructor_does() -> None:
    made = make_block("tool_result", call_id="c\ud800", output="o\udfff", status="completed", name="n\ud801")
    built = ToolResultBlock(call_id="c\ud800", output="o\udfff", status="completed", name="n\ud801")
    assert made.__dict__ == built.__dict__


def test_other_values_are_validated() -> None:
    with pytest.raises(ValueError):
        make_block("tool_result", call_id="c", output="o", status="unknown", name=None)
    # a dict output and a missing key go through the general path, as before
    made = make_block("tool_result", call_id="c", output={"a": 1}, status="error", name=None)
    assert made == ToolResultBlock(call_id="c", output={"a": 1}, status="error", name=None)
    with pytest.raises(ValueError, match="nme"):
        make_block("tool_result", call_id="c", output="o", status="completed", nme=None)
