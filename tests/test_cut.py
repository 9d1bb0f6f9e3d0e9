"""The one text cutter (windowkeeper/_cut.py) and the three places that cut with it.

The reference functions below are the three cutters that existed before `_cut` (``summarize.llm.cut_to_tokens``,
``context.pointers._cut_middle``, ``context.summary.cut_summary``), kept verbatim: every caller's output must
stay byte-identical to what it was, for any text and limit (hypothesis), with the exact and the approximate
counter.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from windowkeeper._cut import Cut, cut_text, cut_to_tokens
from windowkeeper.context.pointers import TRUNCATE_CUT
from windowkeeper.context.summary import CUT_MARKER, cut_summary
from windowkeeper.summarize.llm import INPUT_LIMIT_CUT
from windowkeeper.tokens import ApproxCounter, TokenCounter, default_counter


def reference_summarizer_cut(text: str, limit: int, count_text: Callable[[str], int]) -> str:
    total = count_text(text)
    if total <= limit:
        return text
    keep = len(text) * max(limit, 0) // max(total, 1)
    for _ in range(8):
        head = keep // 2
        cut = f"{text[:head]} … [cut: over the summarizer's input limit] … {text[len(text) - (keep - head) :]}"
        if keep <= 0:
            cut = "… [cut: over the summarizer's input limit] …"
        if count_text(cut) <= limit:
            return cut
        keep = keep * 3 // 4
    return ""


def reference_truncate(text: str, keep_tokens: int, counter: TokenCounter) -> str:
    total = counter.count_text(text)
    if total <= keep_tokens:
        return text
    chars_per_token = len(text) / max(total, 1)
    budget = max(keep_tokens, 0)
    for _ in range(8):
        keep_chars = int(budget * chars_per_token)
        head_chars = keep_chars // 2
        tail_chars = keep_chars - head_chars
        head = text[:head_chars]
        tail = text[len(text) - tail_chars :] if tail_chars > 0 else ""
        kept = counter.count_text(head) + counter.count_text(tail)
        marker = f"\n… [truncated {max(total - kept, 0)} tokens] …\n"
        candidate = head + marker + tail
        if counter.count_text(candidate) <= keep_tokens or keep_chars == 0:
            return candidate
        over = counter.count_text(candidate) - keep_tokens
        budget = max(budget - over - 1, 0)
    return f"… [truncated {total} tokens] …"


def estimate_text_tokens(text: str | None) -> int:
    return len(text) // 4 if text else 0


def reference_cut_summary(summary: str, max_tokens: int) -> str:
    if estimate_text_tokens(summary) <= max_tokens:
        return summary
    lines = [line for line in summary.splitlines() if line.strip() and line.strip() != CUT_MARKER]
    room = max(max_tokens * 4 - len(CUT_MARKER) - 2, 0)
    head_room, tail_room = room // 3, room - room // 3
    head: list[str] = []
    for line in lines:
        if len(line) + 1 > head_room:
            if not head and head_room > 1:
                head.append(line[: head_room - 1])
            break
        head.append(line)
        head_room -= len(line) + 1
    tail: list[str] = []
    for line in reversed(lines[len(head) :]):
        if len(line) + 1 > tail_room:
            if not tail and tail_room > 1:
                tail.append(line[len(line) - (tail_room - 1) :])
            break
        tail.append(line)
        tail_room -= len(line) + 1
    text = "\n".join([*head, CUT_MARKER, *reversed(tail)])
    return text if estimate_text_tokens(text) <= max_tokens else text[: max_tokens * 4]


COUNTERS = [default_counter(), ApproxCounter()]
words = st.sampled_from(["alpha", "beta", "port 5432", "上下文", "\n", " ", "x" * 40, "Error: boom", "…", CUT_MARKER])
texts = st.lists(words, max_size=120).map("".join)


@settings(max_examples=300, deadline=None)
@given(texts, st.integers(-3, 400), st.sampled_from(range(len(COUNTERS))))
def test_the_summarizer_cut_is_unchanged(text: str, limit: int, which: int) -> None:
    count = COUNTERS[which].count_text
    assert cut_to_tokens(text, limit, count, INPUT_LIMIT_CUT) == reference_summarizer_cut(text, limit, count)


@settings(max_examples=300, deadline=None)
@given(texts, st.integers(-3, 400), st.sampled_from(range(len(COUNTERS))))
def test_the_truncation_of_an_oversized_body_is_unchanged(text: str, limit: int, which: int) -> None:
    counter = COUNTERS[which]
    assert cut_to_tokens(text, limit, counter.count_text, TRUNCATE_CUT) == reference_truncate(text, limit, counter)


@settings(max_examples=300, deadline=None)
@given(texts, st.integers(0, 300))
def test_the_running_summary_cut_is_unchanged(summary: str, max_tokens: int) -> None:
    assert cut_summary(summary, max_tokens) == reference_cut_summary(summary, max_tokens)


def test_a_cut_keeps_both_ends_around_one_marker() -> None:
    text = "BEGIN " + "filler " * 400 + "END"
    counter = default_counter()
    out = cut_to_tokens(text, 40, counter.count_text, TRUNCATE_CUT)
    assert out.startswith("BEGIN ") and out.endswith("END") and counter.count_text(out) <= 40
    assert out.count("[truncated ") == 1
    assert cut_to_tokens("short", 40, counter.count_text, TRUNCATE_CUT) == "short"


def test_the_head_share_and_the_line_mode() -> None:
    cut = Cut(marker="[...]", head_share=(1, 4))
    assert cut_text("abcdefghij", 8, cut) == "ab[...]efghij"
    lines = Cut(marker="[cut]", head_share=(1, 3), lines=True)
    assert cut_text("one\n\ntwo\n[cut]\nthree\nfour", 12, lines) == "one\n[cut]\nfour"


@pytest.mark.parametrize(("limit", "expected"), [(0, "… [cut: over the summarizer's input limit] …"), (-1, "")])
def test_what_is_left_when_nothing_fits(limit: int, expected: str) -> None:
    def count(text: str) -> int:
        return 0 if text == "… [cut: over the summarizer's input limit] …" else len(text)

    assert cut_to_tokens("a long text", limit, count, INPUT_LIMIT_CUT) == expected
