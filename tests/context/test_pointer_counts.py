"""Pointer counts summed from their parts equal the real encoder's count of the whole pointer message.

A budget manager prices each tool-result pointer it makes from the pointer's parts (`clear_tool_results_counted`):
the sum is exact only if every seam between the parts is a place the encoding's
pre-tokenizer always splits. Generated names, arguments, outputs and ids (any Unicode: marks, digits,
punctuation, line breaks, quotes, spaces at either end) try to make a pre-token cross a seam.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from windowkeeper.blocks import ImageBlock, MediaRef, ToolCallBlock, ToolResultBlock
from windowkeeper.context.pointers import (
    clear_tool_results,
    clear_tool_results_counted,
    pointer_counts,
)
from windowkeeper.messages import Message
from windowkeeper.tokenizing.encodings import get_offline_encoding
from windowkeeper.tokenizing.pieces import MAX_PIECES, PieceCounts, piece_counts
from windowkeeper.tokens import ApproxCounter, TiktokenCounter

ENCODINGS = ("o200k_base", "cl100k_base")
_COUNTERS = {name: TiktokenCounter(name) for name in ENCODINGS}

# characters chosen to sit on a seam: spaces and line breaks, punctuation a run would join, digits, letters of
# each case, a combining mark, an apostrophe (contractions), CJK, and the ``…`` of a cut preview
_EDGY = st.sampled_from([*" \n\r\t.,:;=()[]{}\"'/\\-_#…0123456789aZsdtmé\u0301数", "'s", "'ll", "  ", "\r\n"])
_TEXT = st.one_of(
    st.text(max_size=40),
    st.lists(st.one_of(_EDGY, st.text(max_size=6)), max_size=30).map("".join),
)
_ARGS = st.dictionaries(_TEXT, st.one_of(_TEXT, st.integers(), st.booleans(), st.none()), max_size=4)


def _tool_turn(name: str, args: dict[str, Any], output: str, call_id: str) -> tuple[Message, dict[str, ToolCallBlock]]:
    call = ToolCallBlock(id=call_id or "c", name=name or "t", args=args)
    result = ToolResultBlock(call_id=call.id, output=output, name=name or None)
    return Message(role="tool", content=[result], message_id="m1"), {call.id: call}


@pytest.mark.parametrize("encoding", ENCODINGS)
@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(name=_TEXT, args=_ARGS, output=st.one_of(_TEXT, st.text(max_size=300)), call_id=_TEXT)
def test_tool_pointer_sum_is_exact(encoding: str, name: str, args: dict[str, Any], output: str, call_id: str) -> None:
    counter = _COUNTERS[encoding]
    message, calls = _tool_turn(name, args, output, call_id)
    replacement, count = clear_tool_results_counted(
        message, calls, tokens_before=999, counter=counter, count=counter.count_message_uncached
    )
    assert replacement == clear_tool_results(message, calls, tokens_before=999)
    assert count == counter.count_message_uncached(replacement)


def test_parallel_results_and_extra_blocks_are_priced_like_count_message() -> None:
    """Two results in one message (one framing each) and an image folded into the first note."""
    counter = _COUNTERS["o200k_base"]
    calls = {c: ToolCallBlock(id=c, name="read", args={"path": f"/srv/{c}.txt"}) for c in ("a", "b")}
    image = ImageBlock(media=MediaRef(url="https://example.com/x.png"))
    message = Message(
        role="tool",
        content=[ToolResultBlock(call_id="a", output="x\n" * 300), image, ToolResultBlock(call_id="b", output="y")],
    )
    replacement, count = clear_tool_results_counted(
        message, calls, tokens_before=900, counter=counter, count=counter.count_message_uncached
    )
    assert "non-text block(s)" in replacement.tool_result_blocks()[0].output
    assert count == counter.count_message_uncached(replacement)


def test_other_counters_count_the_pointer_whole() -> None:
    """An approximate counter is not additive over parts; a subclass may price text its own way."""

    class Doubled(TiktokenCounter):
        def count_text(self, text: str) -> int:
            return 2 * super().count_text(text)

    assert pointer_counts(ApproxCounter()) is None
    assert pointer_counts(Doubled()) is None
    assert piece_counts(Doubled()) is None
    message, calls = _tool_turn("search", {"q": "x"}, "result\n" * 50, "call_1")
    for counter in (ApproxCounter(), Doubled()):
        replacement, count = clear_tool_results_counted(
            message, calls, tokens_before=900, counter=counter, count=counter.count_message
        )
        assert count == counter.count_message(replacement)


def test_harmony_splits_as_o200k() -> None:
    """o200k_harmony is listed as piecewise on the strength of sharing o200k_base's pre-tokenizer."""
    assert getattr(get_offline_encoding("o200k_harmony"), "_pat_str", None) == getattr(
        get_offline_encoding("o200k_base"), "_pat_str", None
    )


def test_piece_memo_is_bounded() -> None:
    seen: list[str] = []
    pieces = PieceCounts(lambda text: seen.append(text) or len(text))
    for i in range(MAX_PIECES + 10):
        pieces(f"p{i}")
    assert len(pieces._memo) <= MAX_PIECES
    assert pieces.total(["ab", "ab", "c"]) == 5
    assert seen.count("ab") == 1
