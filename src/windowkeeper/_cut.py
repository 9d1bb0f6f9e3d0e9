"""The one text cutter: a text's head and tail kept around a marker, at the size that fits.

Three places shorten a text that is too long: a tool result or reply that alone overflows a budget
(`context.pointers`), what an LLM summarizer is sent (`summarize.llm`), and a running summary over its bound
(`context.summary`, measured with the reference's documented estimate). All three keep the beginning (what the
text is about) and the end (its newest part, an error's last lines) and say in between that something was left
out. That shape is built here (`cut_text`), and so is the search for the size that fits a token limit
(`cut_to_tokens`); each place only names how it cuts, in one `Cut` value:

- ``marker``: the text between head and tail, written once; ``{omitted}`` in it becomes the tokens left out;
- ``head_share``: the head's share of what is kept, as a fraction ``(numerator, denominator)``;
- ``lines``: keep whole lines (a summary's facts are lines; blank lines and an earlier marker are dropped, so a
  summary cut many times holds one marker) instead of characters;
- ``search``: how the kept size shrinks when a try does not fit: ``"measured"`` takes off the tokens the try went
  over (and settles for the marker alone when nothing else fits), ``"geometric"`` keeps three quarters of the
  characters each round (and gives ``fallback`` when nothing fits);
- ``alone`` and ``fallback``: what a cut that keeps nothing reads, and what is left after the last try.

The choices differ because each place's output is relied on as it is (its tests, the benchmarks' numbers);
they are named here so that converging them is a change of one value, visible in one file. Counters only count,
so a cut is found by trying sizes, never by decoding tokens.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

MAX_TRIES = 8
"""Sizes `cut_to_tokens` tries before it gives up; each try counts at most three texts no longer than the limit."""


@dataclass(frozen=True)
class Cut:
    """How one place cuts a text; see the module docstring for each choice."""

    marker: str
    head_share: tuple[int, int] = (1, 2)
    lines: bool = False
    search: Literal["measured", "geometric"] = "measured"
    alone: str | None = None
    """What a cut that keeps no character reads; None: the marker itself."""
    fallback: str = ""
    """What is left when no try fits; ``{omitted}`` becomes the whole text's tokens."""

    def mark(self, omitted: int) -> str:
        """The marker for a cut that left ``omitted`` tokens out."""
        return self.marker.format(omitted=omitted) if "{omitted}" in self.marker else self.marker


def _ends(text: str, keep: int, share: tuple[int, int]) -> tuple[str, str]:
    head = keep * share[0] // share[1]
    tail = keep - head
    return text[:head], text[len(text) - tail :] if tail > 0 else ""


def cut_text(text: str, keep: int, cut: Cut, *, omitted: int = 0) -> str:
    """``text`` as its head and tail around ``cut``'s marker, keeping at most ``keep`` characters of it.

    With ``cut.lines`` whole lines are kept from both ends, a single line longer than its end's share is shortened
    by characters, and the parts are joined by newlines.
    """
    marker = cut.mark(omitted)
    if cut.lines:
        return _cut_lines(text, keep, marker, cut.head_share)
    if keep <= 0:
        return cut.alone if cut.alone is not None else marker
    head, tail = _ends(text, keep, cut.head_share)
    return head + marker + tail


def cut_to_tokens(text: str, limit: int, count_text: Callable[[str], int], cut: Cut) -> str:
    """``text`` cut in the middle until ``count_text`` of it is at most ``limit`` (``text`` itself if it is)."""
    total = count_text(text)
    if total <= limit:
        return text
    room = max(limit, 0)
    chars_per_token = len(text) / max(total, 1)
    keep = int(room * chars_per_token) if cut.search == "measured" else len(text) * room // max(total, 1)
    counts_omitted = "{omitted}" in cut.marker
    for _ in range(MAX_TRIES):
        omitted = 0
        if counts_omitted:
            head, tail = _ends(text, keep, cut.head_share)
            omitted = max(total - count_text(head) - count_text(tail), 0)
        candidate = cut_text(text, keep, cut, omitted=omitted)
        size = count_text(candidate)
        if cut.search == "measured":
            if size <= limit or keep == 0:
                return candidate
            room = max(room - (size - limit) - 1, 0)
            keep = int(room * chars_per_token)
        else:
            if size <= limit:
                return candidate
            keep = keep * 3 // 4
    return cut.fallback.format(omitted=total) if "{omitted}" in cut.fallback else cut.fallback


def _cut_lines(text: str, keep: int, marker: str, share: tuple[int, int]) -> str:
    lines = [line for line in text.splitlines() if line.strip() and line.strip() != marker]
    head_room = keep * share[0] // share[1]
    tail_room = keep - head_room
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
    return "\n".join([*head, marker, *reversed(tail)])


__all__ = ["MAX_TRIES", "Cut", "cut_text", "cut_to_tokens"]
