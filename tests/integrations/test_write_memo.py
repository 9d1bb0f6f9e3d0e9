"""A write with the conversation's memo hands back exactly what a write without one does, whatever happened to
the messages since the last write: appended, dropped from the front, a recall note joined in, edited in place,
given new metadata, or the list the caller got back changed by the caller."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from windowkeeper.blocks import TextBlock
from windowkeeper.context.recall import _recall_message
from windowkeeper.integrations._formats import read_messages, write_messages
from windowkeeper.llm.formats._source import WriteMemo
from windowkeeper.messages import Message

OPS = st.lists(
    st.sampled_from(["append", "drop", "recall", "edit", "metadata", "mutate_out", "fresh"]), min_size=1, max_size=20
)


def _items(n: int, start: int) -> list[dict[str, Any]]:
    role = ("user", "assistant")
    return [
        {"role": role[(start + i) % 2], "content": f"turn {start + i}", "x_unknown": {"n": start + i}} for i in range(n)
    ]


@pytest.mark.parametrize("fmt", ["openai_chat", "anthropic", "openai_responses"])
@settings(max_examples=60, deadline=None)
@given(ops=OPS)
def test_a_memoized_write_equals_a_fresh_one(fmt: str, ops: list[str]) -> None:
    if fmt == "openai_responses":
        base = [{"type": "message", "role": i["role"], "content": i["content"]} for i in _items(6, 0)]
    elif fmt == "anthropic":
        base = [{"role": i["role"], "content": i["content"], "x_unknown": i["x_unknown"]} for i in _items(6, 0)]
    else:
        base = _items(6, 0)
    messages: list[Message] = read_messages(fmt, copy.deepcopy(base))  # type: ignore[arg-type]
    memo = WriteMemo()
    counter = 100
    for op in ops:
        if op == "append":
            counter += 1
            messages = [*messages, Message.text_message(f"new {counter}", role="user" if counter % 2 else "assistant")]
        elif op == "drop" and len(messages) > 2:
            messages = messages[1:]
        elif op == "recall":
            users = [i for i, m in enumerate(messages) if m.role == "user"]
            if users:
                at = users[-1]
                note = _recall_message(messages[at], "[Recalled] an old fact", ["k"])
                messages = [*messages[:at], note, *messages[at:]]
        elif op == "edit" and messages:
            messages[0].content = [TextBlock(text="edited in place")]
        elif op == "metadata" and messages:
            messages[-1].metadata = {**messages[-1].metadata, "note": counter}
        elif op == "fresh":
            messages = list(messages)
        memoized, _ = write_messages(fmt, None, messages, memo=memo)  # type: ignore[arg-type]
        plain, _ = write_messages(fmt, None, messages)  # type: ignore[arg-type]
        assert memoized == plain
        if op == "mutate_out" and memoized:
            memoized.append({"role": "user", "content": "the caller's own"})
            memoized[0] = {"role": "user", "content": "replaced by the caller"}


def test_a_write_that_appends_reuses_the_last_written_items() -> None:
    messages = read_messages("openai_chat", _items(40, 0))
    memo = WriteMemo()
    first, _ = write_messages("openai_chat", None, messages, memo=memo)
    longer = [*messages, Message.text_message("one more")]
    assert memo.reusable(longer) == 40  # every item is the caller's own: the whole last write is reused
    second, _ = write_messages("openai_chat", None, longer, memo=memo)
    assert second[:40] == first and all(a is b for a, b in zip(second, first, strict=False))
    assert second[40] == {"role": "user", "content": "one more"}


def test_a_new_metadata_or_raw_object_moves_the_edit_epoch_and_keeps_the_fingerprint() -> None:
    from windowkeeper.messages import edit_epoch, edited_since

    message = Message.text_message("hello")
    fp, epoch = message.fingerprint(), edit_epoch()
    message.metadata = {"tag": 1}
    assert edit_epoch() > epoch and not edited_since(message, epoch) and message.fingerprint() == fp
    epoch = edit_epoch()
    message.raw = {"role": "user", "content": "hello"}
    assert edit_epoch() > epoch and message.fingerprint() == fp


def test_responses_instructions_writes_reuse_the_memo_too(monkeypatch: pytest.MonkeyPatch) -> None:
    from windowkeeper.llm.formats.openai_responses import to_responses_input

    reused: list[int] = []
    reusable = WriteMemo.reusable
    monkeypatch.setattr(WriteMemo, "reusable", lambda self, m: reused.append(n := reusable(self, m)) or n)

    # the system text comes as the request's instructions, not as a message: nothing in the list is forced fresh
    items = [{"type": "message", "role": i["role"], "content": i["content"]} for i in _items(20, 0)]
    messages = read_messages("openai_responses", items)
    memo = WriteMemo()
    first = to_responses_input(messages, system="instructions", passthrough=True, memo=memo)
    longer = [*messages, Message.text_message("one more")]
    second = to_responses_input(longer, system="instructions", passthrough=True, memo=memo)
    assert reused == [20]  # the same `always_fresh` from call to call: the second write took the clean run
    assert second == to_responses_input(longer, system="instructions", passthrough=True)
    assert second[1][: len(first[1])] == first[1]


def test_a_running_count_used_with_another_counter_counts_for_that_counter() -> None:
    from windowkeeper.tokens import ApproxCounter, RunningCount, default_counter

    messages = [Message.text_message(f"message {i} " * 9) for i in range(30)]
    running = RunningCount()
    assert running.total(default_counter(), messages) == default_counter().count_messages(messages)
    assert running.total(ApproxCounter(), messages) == ApproxCounter().count_messages(messages)


def test_items_windowkeeper_wrote_are_reused_from_the_memo_as_new_copies() -> None:
    """A message written fresh (a pointer, the summary section) no longer ends the run a later write takes as it
    is: the next write reuses it too, handing out a new dict equal to a fresh write's, never the one the caller got
    before (which the caller may have edited)."""
    messages = read_messages("openai_chat", _items(30, 0))
    made = Message.text_message("written by windowkeeper", role="user")  # no source: a fresh item
    view = [messages[0], made, *messages[1:]]
    memo = WriteMemo()
    first, _ = write_messages("openai_chat", None, view, memo=memo)
    first[1]["content"] = "edited by the caller"
    longer = [*view, Message.text_message("one more")]
    assert memo.reusable(longer) == len(view)  # the fresh item did not end the reusable run
    second, _ = write_messages("openai_chat", None, longer, memo=memo)
    plain, _ = write_messages("openai_chat", None, longer)
    assert second == plain
    assert second[1] == {"role": "user", "content": "written by windowkeeper"} and second[1] is not first[1]
    assert all(a is b for a, b in zip(second[2:31], first[2:31], strict=True))  # the caller's own items
