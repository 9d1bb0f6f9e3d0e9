"""`DocumentedEstimate`: the reference's chars/4 estimate as a counter gives the numbers it gave as a function."""

from __future__ import annotations

from collections.abc import Sequence

from hypothesis import given, settings
from hypothesis import strategies as st

from windowkeeper import Message, ToolCallBlock
from windowkeeper.context.summary import estimate_text_tokens, estimate_tokens
from windowkeeper.tokenizing.estimate import DOCUMENTED_ESTIMATE
from windowkeeper.tokens import TokenCounter


def reference_estimate(messages: Sequence[Message]) -> int:
    """`estimate_tokens` as it was written before the estimate became a counter."""
    chars = 0
    for msg in messages:
        chars += len(msg.text())
        calls = msg.tools_calls or [{"id": c.id, "name": c.name, "args": c.args} for c in msg.tool_call_blocks()]
        if calls:
            chars += len(str(calls))
    return chars // 4


texts = st.text(alphabet=st.sampled_from("ab 上\n{}"), max_size=30)


@st.composite
def messages(draw: st.DrawFn) -> Message:
    if draw(st.booleans()):
        return Message.text_message(draw(texts), role=draw(st.sampled_from(["user", "assistant", "system"])))
    calls = [ToolCallBlock(id=f"c{i}", name="f", args={"q": draw(texts)}) for i in range(draw(st.integers(1, 2)))]
    return Message(role="assistant", content=calls)


@settings(max_examples=200, deadline=None)
@given(st.lists(messages(), max_size=8))
def test_the_estimate_is_rounded_once_over_the_list(history: list[Message]) -> None:
    assert estimate_tokens(history) == reference_estimate(history) == DOCUMENTED_ESTIMATE.count_messages(history)
    assert all(DOCUMENTED_ESTIMATE.count_message(m) == reference_estimate([m]) for m in history)


def test_it_is_a_token_counter() -> None:
    assert isinstance(DOCUMENTED_ESTIMATE, TokenCounter)
    assert DOCUMENTED_ESTIMATE.count_text("abcdefg") == estimate_text_tokens("abcdefg") == 1
    assert estimate_text_tokens(None) == estimate_text_tokens("") == 0
