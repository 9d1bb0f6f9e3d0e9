"""What a recall message costs in tokens, summed from memoized per-passage counts instead of tokenizing it again.

A recall message's text is its header and one piece per passage (the passage's label, a line break, the passage),
joined by blank lines. Placing one used to tokenize that whole text (thousands of characters per user turn) after
each passage had already been tokenized to size the message, so every recalled passage was tokenized twice a turn.

For the OpenAI encodings the count of the joined text is exactly the sum of its pieces' counts. Their
pre-tokenizer (the regular expression that cuts text into chunks before byte-pair merging, identical in these
respects for ``cl100k_base`` and ``o200k_base``) never makes a chunk of a line break followed by a non-space
character, and every piece starts with its label's ``---`` right after the blank line. The only chunk that can
change when a piece is followed by the blank line is the piece's last one: a trailing run of punctuation (``}``,
``."``) takes the line breaks into its chunk. That chunk alone is tokenized again, with and without them; the
result is memoized by its text (a handful of distinct endings in a session). A piece ending in a letter or digit
just adds the blank line's own tokens; any other ending (non-ASCII, a run after a tab or a line break) is counted
in full, once.

A counter this does not hold for (another tokenizer, a subclass pricing text its own way) gets the whole message
counted as before. Either way the count of a placed message is in the counter's memo, where the manager looks it up
when it counts its view again.
"""

from __future__ import annotations

import string
from collections.abc import Callable, Iterable, Sequence

from .._cache import LRUCache, SizedCache
from ..messages import Message
from ..tokenizing.counters import CachingCounter, TiktokenCounter
from ..tokens import TokenCounter
from .recall_index import Passage

SEPARATOR = "\n\n"
"""What joins the header and the pieces of a recall message (`render_recall`)."""
PIECE_SEPARATOR_TOKENS = 2
"""Tokens `piece_cost` adds to a passage's own for the separator (what sizing a recall message assumes)."""
DEFAULT_PRICING_CACHE_BYTES = 16 * 1024 * 1024
"""What the memo of passages' token counts may take, by estimated bytes (about 55,000 passages)."""
_PIECE_ENTRY_BYTES = 300
"""One memoized passage count: the key's tuple and passage-key string, the value's tuple, the ordered-dict node."""
_TAIL_CACHE = 4096
_PUNCTUATION = frozenset(string.punctuation)
_ADDITIVE_ENCODINGS = frozenset({"cl100k_base", "o200k_base", "o200k_harmony"})


def splits_at_pieces(counter: TokenCounter) -> bool:
    """Whether ``counter`` counts a recall message as the sum of its pieces (see the module docstring): an exact
    OpenAI-encoding counter that prices text and messages the library's way."""
    return (
        isinstance(counter, TiktokenCounter)
        and counter.encoding_name in _ADDITIVE_ENCODINGS
        and type(counter).count_text is TiktokenCounter.count_text
        and type(counter).count_message is CachingCounter.count_message
        and type(counter).count_message_uncached is CachingCounter.count_message_uncached
    )


def _tail_start(text: str) -> int | None:
    """Where the last pre-tokenizer chunk of ``text`` starts when it is a run of ASCII punctuation that a following
    line break would join (``len(text)`` when ``text`` ends in an ASCII letter or digit: nothing joins); None when
    the ending is anything else."""
    end = len(text)
    last = text[-1]
    if last.isascii() and last.isalnum():
        return end
    i = end
    while i > 0 and text[i - 1] in _PUNCTUATION:
        i -= 1
    if i == end or i == 0:
        return None
    before = text[i - 1]
    if before == " ":
        return i - 1  # a single space before punctuation belongs to its chunk
    if before.isascii() and before.isalnum():
        return i
    return None


class RecallPricing:
    """Token counts of recall message pieces, memoized per passage, and of whole recall messages from them."""

    def __init__(self, counter: TokenCounter, *, cache_bytes: int = DEFAULT_PRICING_CACHE_BYTES) -> None:
        self.counter = counter
        self.additive = splits_at_pieces(counter)
        # (thread, passage key) -> (tokens of the piece, tokens of the piece followed by the separator)
        self._pieces: SizedCache[tuple[str, str], tuple[int, int]] = SizedCache(cache_bytes, name="pricing_cache_bytes")
        self._tails: LRUCache[str, int] = LRUCache(_TAIL_CACHE)
        self._frame: int | None = None
        self._separator: int | None = None

    def _piece(self, thread: str, passage: Passage, text: Callable[[Passage], str]) -> tuple[int, int]:
        key = (thread, passage.key)
        found = self._pieces.get(key)
        if found is None:
            piece = text(passage)
            alone = self.counter.count_text(piece)
            if self.additive and piece[:1].isspace():
                self.additive = False  # a piece must start a chunk: right after a line break, not a space
            found = (alone, self._joined(piece, alone) if self.additive else alone)
            self._pieces.put(key, found, _PIECE_ENTRY_BYTES)
        return found

    def _joined(self, piece: str, alone: int) -> int:
        """Tokens of ``piece`` followed by the separator, from the tokens of ``piece`` alone when its ending allows."""
        count = self.counter.count_text
        if not piece or piece[-1].isspace():
            return count(piece + SEPARATOR)
        start = _tail_start(piece)
        if start is None:
            return count(piece + SEPARATOR)
        if start == len(piece):
            if self._separator is None:
                self._separator = count(SEPARATOR)
            return alone + self._separator
        tail = piece[start:]
        delta = self._tails.get(tail)
        if delta is None:
            delta = count(tail + SEPARATOR) - count(tail)
            self._tails.put(tail, delta)
        return alone + delta

    def piece_cost(self, thread: str, passage: Passage, text: Callable[[Passage], str]) -> int:
        """Tokens ``passage`` adds to a recall message for sizing it: its piece (``text(passage)``, label and body)
        and `PIECE_SEPARATOR_TOKENS`; memoized per passage."""
        return self._piece(thread, passage, text)[0] + PIECE_SEPARATOR_TOKENS

    def message_tokens(
        self,
        thread: str,
        message: Message,
        header: str,
        passages: Sequence[Passage],
        text: Callable[[Passage], str],
    ) -> int:
        """Tokens of ``message``, a recall message whose text is ``header`` and the pieces of ``passages`` (in the
        order they appear) joined by `SEPARATOR`; what ``counter.count_message(message)`` gives."""
        if self.additive and passages and not header[-1:].isspace():
            pieces = [self._piece(thread, passage, text) for passage in passages]
            if self.additive:  # still: `_piece` turns it off for a piece that does not start a chunk
                if self._frame is None:
                    # message framing plus the header and its separator: the same for every recall message
                    counter = self.counter
                    assert isinstance(counter, CachingCounter)
                    self._frame = counter.message_overhead + counter.count_text(header + SEPARATOR)
                return self._frame + sum(joined for _, joined in pieces[:-1]) + pieces[-1][0]
        return self.counter.count_message(message)

    def keep(self, message: Message, tokens: int) -> None:
        """Memoize ``tokens`` (from `message_tokens`) in the counter, for a message that is placed: the manager
        counts the messages of its view through the counter again (after a compaction, when it regroups them)."""
        if self.additive:
            counter = self.counter
            assert isinstance(counter, CachingCounter)
            counter.remember(message, tokens)

    def forget(self, threads: Iterable[str]) -> None:
        """Drop the memoized counts of ``threads``' passages."""
        gone = set(threads)
        self._pieces.drop(lambda key, _: key[0] not in gone)


__all__ = ["PIECE_SEPARATOR_TOKENS", "SEPARATOR", "RecallPricing", "splits_at_pieces"]
