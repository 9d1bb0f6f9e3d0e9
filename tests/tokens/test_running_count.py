"""`RunningCount.total` is `count_messages` of the list it is given, whatever the list did since the last call:
grew, lost its oldest, was rebuilt from copies, or had a message edited in place."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from windowkeeper.blocks import TextBlock
from windowkeeper.messages import Message
from windowkeeper.tokens import ApproxCounter, RunningCount, default_counter

STEPS = st.lists(st.tuples(st.sampled_from(["append", "drop", "copy", "edit"]), st.integers(0, 3)), max_size=30)


@settings(max_examples=100, deadline=None)
@given(STEPS)
def test_the_running_total_is_the_counters_total(steps: list[tuple[str, int]]) -> None:
    running, approx = RunningCount(), RunningCount()
    messages: list[Message] = []
    for n, (op, k) in enumerate(steps):
        if op == "append":
            messages = [*messages, *(Message.text_message(f"message {n} {i} " * (i + 1)) for i in range(k + 1))]
        elif op == "drop":
            messages = messages[k:]
        elif op == "copy":
            messages = [m.model_copy() for m in messages]
        elif op == "edit" and messages:
            messages[-1].content = [TextBlock(text=f"edited {n} " * 7)]
        assert running.total(default_counter(), messages) == default_counter().count_messages(messages)
        assert approx.total(ApproxCounter(), messages) == ApproxCounter().count_messages(messages)
