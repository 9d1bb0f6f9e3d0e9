"""`Recall.shown` answers each call from the last answer for the view's unchanged prefix and the new messages:
whatever the view does between calls, it is `recalled_passages` of the whole view."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from windowkeeper.context.recall import Recall, _recall_message, recalled_passages
from windowkeeper.messages import Message

STEPS = st.lists(st.tuples(st.sampled_from(["user", "recall", "drop", "copy", "edit"]), st.integers(0, 3)), max_size=30)


@settings(max_examples=100, deadline=None)
@given(STEPS)
def test_shown_equals_a_full_scan(steps: list[tuple[str, int]]) -> None:
    recall = Recall()
    view: list[Message] = []
    for n, (op, k) in enumerate(steps):
        if op == "user":
            view = [*view, Message.text_message(f"user {n}")]
        elif op == "recall" and view:
            note = _recall_message(view[-1], f"note {n}", [f"p{n}", f"p{k}"])
            view = [*view[:-1], note, view[-1]]
        elif op == "drop":
            view = view[k:]
        elif op == "copy":
            view = [m.model_copy() for m in view]
        elif op == "edit" and view:
            view[-1].metadata = {**view[-1].metadata, "passages": [f"e{n}"]}
        assert recall.shown("t", view) == recalled_passages(view)
