"""Counting a text made of parts that meet at pre-token boundaries, each part's count memoized.

An OpenAI encoding splits text with a regular expression into pre-tokens and byte-pair encodes each one on its
own, so a text's count is the sum of its pre-tokens' counts. When a text is built from parts and every seam
between two parts is a place the expression always splits (whatever the parts hold), its count is the sum of the
parts' counts. Text a library writes many times from a template (a budget manager's pointer to a cleared tool
result) then costs one tokenizer call for each part not seen before: the template's fixed words are counted once,
and parts that recur (a call made again with the same arguments, a tool output that starts like the last one)
are found in a memo.

Which seams are safe is the caller's knowledge of its template (`windowkeeper.context.pointers` says why for
each of its seams); this module only says for which counters the sum is exact: a `TiktokenCounter` whose text
pricing is its own (not overridden) and whose encoding's pre-tokenizer is one of those the seams were checked
against (`PIECEWISE_ENCODINGS`; tests check the sums against the real encoder with generated parts).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from .counters import TiktokenCounter

PIECEWISE_ENCODINGS = frozenset({"o200k_base", "cl100k_base", "o200k_harmony"})
"""Encodings whose pre-tokenizer never joins across the seams the library's templates use: each ends a part
with a letter, digit or closing punctuation and starts the next with a space, an ``=`` or the text's end."""

MAX_PIECES = 4096
"""Entries a counter's memo of parts holds before it starts over (parts are short: a few hundred bytes each)."""


class PieceCounts:
    """Counts of the parts of templated texts for one counter, memoized (bounded by `MAX_PIECES`)."""

    __slots__ = ("_count_text", "_memo")

    def __init__(self, count_text: Callable[[str], int]) -> None:
        self._count_text = count_text
        self._memo: dict[str, int] = {}

    def __call__(self, piece: str) -> int:
        """Tokens of ``piece`` alone (memoized)."""
        n = self._memo.get(piece)
        if n is None:
            memo = self._memo
            if len(memo) >= MAX_PIECES:
                memo.clear()  # parts that recur come back within a few compactions; a clear costs one recount each
            n = memo[piece] = self._count_text(piece)
        return n

    def total(self, pieces: Sequence[str], unique: Sequence[str] = ()) -> int:
        """Tokens of the text made of ``pieces`` and ``unique`` (in any order) when every seam between them is one
        the encoding always splits at. ``unique`` are parts that never recur (an id): counted, not memoized."""
        memo = self._memo
        total = 0
        for piece in pieces:
            n = memo.get(piece)
            total += n if n is not None else self(piece)
        count_text = self._count_text
        for piece in unique:
            total += count_text(piece)
        return total

    def total_with(self, pieces: Sequence[str], unique: int) -> int:
        """`total` of ``pieces`` with the one at index ``unique`` (negative: from the end) counted, not memoized:
        the same number as ``total(pieces without it, [it])``, without building the two lists (a budget manager
        prices every pointer it makes this way)."""
        memo = self._memo
        total = self._count_text(pieces[unique])
        skip = unique % len(pieces)
        for i, piece in enumerate(pieces):
            if i != skip:
                n = memo.get(piece)
                total += n if n is not None else self(piece)
        return total


def piece_counts(counter: object) -> PieceCounts | None:
    """The memo of parts of ``counter`` when summing parts gives exactly its ``count_text`` of the whole, else None
    (another counter, a subclass that prices text its own way, an encoding whose seams were not checked)."""
    if not isinstance(counter, TiktokenCounter) or type(counter).count_text is not TiktokenCounter.count_text:
        return None
    if counter.encoding_name not in PIECEWISE_ENCODINGS:
        return None
    found = counter.__dict__.get("_wk_pieces")
    if found is None:
        found = counter.__dict__.setdefault("_wk_pieces", PieceCounts(counter.count_text))
    assert isinstance(found, PieceCounts)
    return found
