"""`Recall`: what left the view comes back, verbatim and dated, when the message being answered asks for it.

A context manager has to drop, clear or summarize old turns to stay within budget, and no rule about what to keep
holds for every conversation. Recall makes the rule matter less: everything that leaves the view (dropped units,
the originals of cleared tool results and replies, summarized messages) is queued as it leaves and indexed, newest
first, when the next user message arrives (`RecallIndex`, SQLite FTS5 with BM25). The index is then searched with
that message, and the best passages go into one *recall message* placed right before it. A passage is named by
its message id and part, so a recall message saved in a checkpoint names the same passages after a restart.

The recall message is a ``user``-role message, because that is the only role every provider accepts anywhere in
a conversation (Anthropic and Gemini reject a leading assistant turn; consecutive user turns are merged), with a
header saying it is recalled history added by the context manager, not the user speaking. It is marked with
``metadata["windowkeeper"] == "recall"`` so prompt assembly counts it in its own zone, the graph never logs it as
history, summarizers never summarize it and the index never indexes it.

It is computed once per user message (its id is ``recall:<user message id>``) and, once placed, stays byte for
byte the same: the tool steps of that turn keep their prompt cache, and later turns see it as an ordinary older
message that ages out with the next cut. Passages already shown by a recall message still in view are not shown
again. When the passages found do not fit whole in the room left, the recall message quotes of each only the
lines (a one-line passage: the sentences) holding the query's rarest words, "[...]" for the rest, under a shorter
header (`EXCERPT_HEADER`), if that shows more of them; the index, the recall tool and restored pointers keep the
whole original. Only passages that cover at least ``min_coverage`` of the query's rare words are added (BM25 ranks, but
its score grows with the query's length and cannot tell "about the same thing" from "shares a few words"), so a
turn that does not refer back adds nothing and costs no cache.

The component is independent of any manager: `TokenBudgetContextManager` uses it by default, and other managers
or the three-tier memory can feed it (`observe`, `left`) and ask it for a recall message (`build`).
"""

from __future__ import annotations

import datetime as dt
import functools
import logging
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from .._cache import SizedCache, shared_prefix
from .._validate import check_int
from ..blocks import TextBlock
from ..errors import ConfigurationError
from ..messages import Message, edit_epoch, participant_name
from ..prompt.recall import MARK_KEY, RECALL_MARK, is_recall, recall_notes
from ..tokenizing.media import without_embedded_data
from ..tokens import TokenCounter, default_counter
from ._recall_cost import DEFAULT_PRICING_CACHE_BYTES, PIECE_SEPARATOR_TOKENS, RecallPricing
from .pointers import DEFAULT_OFFLOAD_CACHE_BYTES, approx_bytes
from .recall_index import Entry, Hit, Passage, RecallIndex, excerpt

logger = logging.getLogger(__name__)

RECALL_ID_PREFIX = "recall:"
RECALL_HEADER = (
    "[Recalled context, added by the context manager; this is not a message from the user. The passages below "
    "were said earlier in this conversation and are no longer in view; they were found by searching for the "
    "message that follows and are quoted verbatim, each with where and when it was said.]"
)
EXCERPT_HEADER = (
    "[Recalled context, added by the context manager, not said by the user: lines said earlier and no longer in "
    "view, matching the message that follows; [...] marks lines left out.]"
)
"""The header of a recall message that quotes passages in part (`Recall.build`, when the passages whole do not
fit): shorter, as the room is short."""
DEFAULT_MIN_COVERAGE = 0.4
"""Share of the query's rarity (see `Hit.coverage`) the best passage needs for a turn to get a recall message at
all: most turns of a conversation do not refer back, and a recall message they do not need costs cache."""
QUESTION_COVERAGE = 0.8
"""Share a passage needs of the rarity of the words the conversation has used (those it never used left out) for
a user message that asks a question to refer back, when its share of all the question's rarity is under
``min_coverage``: a question asks in its own words ("pay" for what was said as "came to"), and a word nobody
said would otherwise outweigh the rare word it shares with its answer. Stricter than ``min_coverage``, since fewer
words decide; statements keep the gate over all their words (their new words say something new)."""
_QUESTION_MARKS = ("?", "\uff1f", "\u061f")  # ASCII, fullwidth (CJK), Arabic
RELATED_COVERAGE = 0.1
"""Share a further passage needs once a turn does refer back: the room it fills would stay empty otherwise, and
the answer often shares fewer words with the question than the passage that names the same task."""
BACKLOG_PER_CALL = 512
"""Messages indexed per `Recall.build` from the queue: a cold trim of a huge history is indexed over later calls."""
BACKLOG_CHARS_PER_CALL = 200_000
"""Characters indexed per `Recall.build` from the queue (about 15-60 ms of CPU): more than one compaction drops at
a 32k budget, so steady state indexes each drop at the next user turn; a cold backlog spreads over later calls."""
SEARCH_BACKLOG_CHARS = 4_000_000
"""Characters a `Recall.search` (the recall tool) indexes from the queue first: about a second of CPU at most."""
_LAZY_OBSERVE = 4096
_EAGER_TAIL = 4096
_RESOLVE_SLICE = 1024
_QUERY_CHARS = 4000
_ALIAS_BYTES = 100
"""What an entry naming a cached original by a tool call id costs in the originals cache (the message is shared)."""
_MIN_PASSAGE_TOKENS = 24


def message_date(message: Message) -> str | None:
    """When ``message`` was said: its ``session_date`` metadata if any, else its timestamp in UTC."""
    date = message.metadata.get("session_date")
    if isinstance(date, str) and date:
        return date
    if message.timestamp is None:
        return None
    try:
        when = dt.datetime.fromtimestamp(message.timestamp, tz=dt.UTC)
    except (OverflowError, OSError, ValueError):
        return None
    return _minute_label(when.replace(second=0, microsecond=0))


@functools.lru_cache(maxsize=256)
def _minute_label(minute: dt.datetime) -> str:
    """How a message said in ``minute`` is dated: every message indexed is, the messages of one compaction mostly
    share a minute, and formatting costs three times what reading the timestamp does."""
    return minute.strftime("%Y-%m-%d %H:%M UTC")


def passage_where(passage: Passage) -> str:
    """Where a passage stood in the conversation: message, turn, speaker, date and part, as the model reads it."""
    where = f"message #{passage.position}, turn {passage.turn}, {passage.role}"
    if passage.date:
        where += f", {passage.date}"
    if passage.parts > 1:
        where += f", part {passage.part + 1} of {passage.parts}"
    return where


def _label(passage: Passage) -> str:
    return f"--- {passage_where(passage)} ---"


def _piece(passage: Passage) -> str:
    """One passage as a recall message shows it: its label, a line break, its text."""
    return f"{_label(passage)}\n{passage.text}"


def _in_order(passages: Sequence[Passage]) -> list[Passage]:
    return sorted(passages, key=lambda p: (p.position, p.part))


def render_recall(passages: Sequence[Passage], header: str = RECALL_HEADER) -> str:
    """The text of a recall message: the header, then each passage under its label, in conversation order."""
    return "\n\n".join([header, *map(_piece, _in_order(passages))])


@dataclass
class _Block:
    """Messages observed in one large batch into a fresh thread, whose positions are worked out on demand.

    ``messages[:end]`` are not yet in `_Thread.positions`; the newest of them has position ``position - 1`` and
    turn ``turn`` (resolving walks back from there, so the newest dropped messages, indexed first, cost first).
    """

    messages: list[Message]
    end: int
    position: int
    turn: int


@dataclass
class _Thread:
    """What recall knows about one thread: where each message was said, what is indexed, what waits."""

    positions: dict[str, tuple[int, int]] = field(default_factory=dict)
    next_position: int = 0
    turns: int = 0
    blocks: list[_Block] = field(default_factory=list)
    pending: list[list[Message]] = field(default_factory=list)
    indexed: set[str] = field(default_factory=set)
    served: str | None = None
    shown_in: list[Message] = field(default_factory=list)
    """The view `Recall.shown` last answered for, and its answer (``shown``): a view that continues it is scanned
    from where it left off."""
    shown: set[str] = field(default_factory=set)
    shown_epoch: int = -1


class Recall:
    """Index what leaves a view and build the recall message for a new user message (see the module docstring).

    ``index`` is a `RecallIndex` to share (default: a new in-memory one, or one at ``path``). ``max_passages``
    bounds the passages of one recall message and ``min_coverage`` the relevance each needs (`Hit.coverage`).
    The originals of indexed messages are kept in memory up to ``original_cache_bytes`` (newest first): an agent
    that runs for days must not hold its whole history; an older one's text is rebuilt from the index. The token
    counts of passages shown are memoized up to ``pricing_cache_bytes``.

    Feeding it costs what is new, whatever the history's length: `observe` of a large batch into a fresh thread
    and `left` keep references and do the per-message work later, newest first, in bounded slices
    (`BACKLOG_PER_CALL` messages and `BACKLOG_CHARS_PER_CALL` characters per `build`), so a cold first call on a
    100k-message history does not index (or even label) the 99.8k messages it dropped unread.
    """

    def __init__(
        self,
        counter: TokenCounter | None = None,
        *,
        index: RecallIndex | None = None,
        path: str | Path = ":memory:",
        max_passages: int = 8,
        min_coverage: float = DEFAULT_MIN_COVERAGE,
        original_cache_bytes: int = DEFAULT_OFFLOAD_CACHE_BYTES,
        pricing_cache_bytes: int = DEFAULT_PRICING_CACHE_BYTES,
    ) -> None:
        self.counter = counter if counter is not None else default_counter()
        self.index = index if index is not None else RecallIndex(path)
        self.max_passages = check_int("max_passages", max_passages, minimum=1)
        if not isinstance(min_coverage, int | float) or isinstance(min_coverage, bool) or not 0 <= min_coverage <= 1:
            raise ConfigurationError(f"min_coverage must be a number between 0 and 1, got {min_coverage!r}")
        self.min_coverage = float(min_coverage)
        self._threads: dict[str, _Thread] = {}
        # the newest originals indexed, for `original`; older ones are rebuilt from the index (`original_text`)
        self._originals: SizedCache[tuple[str, str], Message] = SizedCache(
            original_cache_bytes, name="original_cache_bytes"
        )
        # each passage's tokens, counted once and kept: they size every recall message that shows it
        self._pricing = RecallPricing(self.counter, cache_bytes=pricing_cache_bytes)
        self._header_cost: int | None = None

    def __repr__(self) -> str:
        return f"Recall(index={self.index!r}, max_passages={self.max_passages}, min_coverage={self.min_coverage})"

    def _thread(self, thread: str) -> _Thread:
        state = self._threads.get(thread)
        if state is None:
            state = self._threads[thread] = _Thread()
        return state

    # -- feeding ------------------------------------------------------------------------------------------

    def observe(self, thread: str, messages: Iterable[Message]) -> None:
        """Note where each new message of ``thread`` was said (position, user turn), in arrival order.

        A batch of more than `_LAZY_OBSERVE` messages into a thread that has seen none is kept as a reference
        (one pass counts its turns) and its newest `_EAGER_TAIL` messages are labelled now; older ones are labelled
        when they are indexed. A large batch into a known thread is labelled at once (its messages may repeat
        known ones).
        """
        state = self._thread(thread)
        large = isinstance(messages, Sequence) and len(messages) > _LAZY_OBSERVE
        if large and not state.positions and not state.blocks:
            self._observe_lazily(state, list(messages))
            return
        if state.blocks and (large or not isinstance(messages, Sequence)):
            self._resolve(state, None)
        positions = state.positions
        for msg in messages:
            key = str(msg.message_id)
            if key in positions or key in state.indexed or is_recall(msg):
                continue
            if msg.role == "user":
                state.turns += 1
            positions[key] = (state.next_position, state.turns)
            state.next_position += 1

    def _observe_lazily(self, state: _Thread, batch: list[Message]) -> None:
        users = 0
        labelled = 0
        for msg in batch:
            if is_recall(msg):
                continue
            labelled += 1
            if msg.role == "user":
                users += 1
        state.next_position += labelled
        state.turns += users
        block = _Block(batch, len(batch), state.next_position, state.turns)
        state.blocks.append(block)
        self._resolve(state, _EAGER_TAIL)

    def _resolve(self, state: _Thread, count: int | None) -> bool:
        """Label up to ``count`` more messages of the newest unlabelled block (None: every block); False when none
        is left."""
        positions = state.positions
        while state.blocks:
            block = state.blocks[-1]
            messages = block.messages
            position, turn = block.position, block.turn
            i = block.end
            stop = 0 if count is None else max(0, i - count)
            while i > stop:
                i -= 1
                msg = messages[i]
                if is_recall(msg):
                    continue
                position -= 1
                positions.setdefault(str(msg.message_id), (position, turn))
                if msg.role == "user":
                    turn -= 1
            block.end, block.position, block.turn = i, position, turn
            if i == 0:
                state.blocks.pop()
            if count is not None:
                return True
        return False

    def _where(self, state: _Thread, thread: str, msg: Message, key: str) -> tuple[int, int]:
        where = state.positions.get(key)
        while where is None and self._resolve(state, _RESOLVE_SLICE):
            where = state.positions.get(key)
        if where is None:
            self.observe(thread, [msg])
            where = state.positions[key]
        return where

    def left(self, thread: str, messages: Iterable[Message]) -> None:
        """``messages`` (originals) left the view of ``thread``: keep them restorable and queue them for the index.

        Only a copy of the list is made here; each message is looked at when it is indexed (`flush`), newest
        first, so handing over 100k dropped messages costs what copying 100k references costs.
        """
        batch = list(messages)
        if batch:
            self._thread(thread).pending.append(batch)

    def pending(self, thread: str) -> int:
        """Messages of ``thread`` queued for the index and not yet looked at (duplicates included)."""
        state = self._threads.get(thread)
        return sum(len(batch) for batch in state.pending) if state is not None else 0

    def flush(
        self, thread: str, limit: int | None = BACKLOG_PER_CALL, chars: int | None = BACKLOG_CHARS_PER_CALL
    ) -> int:
        """Index queued messages of ``thread``, newest first, until ``limit`` messages or ``chars`` characters were
        indexed (None: no bound); returns how many messages were indexed."""
        state = self._threads.get(thread)
        if state is None or not state.pending:
            return 0
        pending = state.pending
        entries: list[Entry] = []
        kept: list[tuple[str, tuple[str, ...], Message]] = []
        size = 0
        while pending and (limit is None or len(entries) < limit) and (chars is None or size < chars):
            batch = pending[-1]
            msg = batch.pop()
            if not batch:
                pending.pop()
            if msg.role == "system" or is_recall(msg):
                continue
            key = str(msg.message_id)
            if key in state.indexed:
                continue
            position, turn = self._where(state, thread, msg, key)
            # its place is in the index now: a long thread keeps one set entry per indexed message, not a position
            del state.positions[key]
            state.indexed.add(key)
            refs = tuple(block.call_id for block in msg.tool_result_blocks())
            kept.append((key, refs, msg))
            # (the stand-in JSON of an item no format models may embed a screenshot's base64: not worth indexing)
            text = without_embedded_data(msg.text() or msg.reasoning_text())
            for call in msg.tool_call_blocks():
                text += f"\n{call.name}({call.args})"
            name = (participant_name(msg) or "").strip()
            if name:  # who said it, as the model read it: a question may name the speaker
                text = f"{name}: {text}"
            entries.append(Entry(key, text, position, turn, msg.role, message_date(msg), refs))
            size += len(text)
        if entries:
            self.index.add_many(thread, entries)
        originals = self._originals
        for key, refs, msg in reversed(kept):  # oldest first, so the newest stay longest in the bounded cache
            originals.put((thread, key), msg, approx_bytes(msg))
            for ref in refs:  # `original` by a call id the message answers
                originals.put((thread, ref), msg, _ALIAS_BYTES)
        return len(entries)

    # -- reading ------------------------------------------------------------------------------------------

    def search(self, thread: str, query: str, *, limit: int = 5, exclude: Iterable[str] = ()) -> list[Hit]:
        """The best passages of ``thread`` for ``query`` (no relevance floor: a caller asking wants answers).

        Indexes the queue first, newest first, up to `SEARCH_BACKLOG_CHARS` characters: a search right after a
        cold start on a huge history finds the most recent dropped text, and older text once later calls indexed
        it.
        """
        self.flush(thread, None, SEARCH_BACKLOG_CHARS)
        return self.index.search(thread, query[:_QUERY_CHARS], limit=limit, exclude=exclude)

    def original(self, thread: str, message_id: str | int) -> Message | None:
        """The original of a message that left the view (or was cleared), by its id or a tool call id it answers."""
        state = self._threads.get(thread)
        if state is None:
            return None
        key = str(message_id)
        found = self._originals.get((thread, key))
        if found is None:
            for batch in reversed(state.pending):  # queued, not yet indexed
                for msg in reversed(batch):
                    if str(msg.message_id) == key or any(b.call_id == key for b in msg.tool_result_blocks()):
                        return msg
        return found

    def original_text(self, thread: str, ref: str | int) -> str | None:
        """The full text of a message that left the view, by its id or a tool call id it answers: from the original
        while this process holds it, else rebuilt byte for byte from the index (a file-backed index keeps it
        across a restart). None when it is unknown."""
        msg = self.original(thread, ref)
        if msg is not None:
            return msg.text() or msg.reasoning_text()
        found = self.index.message_text(thread, str(ref))
        return found[1] if found is not None else None

    def shown(self, thread: str, view: Sequence[Message]) -> set[str]:
        """`recalled_passages` of ``view``, the thread's view of this call: the recall messages it holds beyond
        the view this last answered for, when it starts with those objects, added to that answer (a scan of the
        whole view on every user turn was a pass over the history)."""
        state = self._thread(thread)
        known, epoch = state.shown_in, edit_epoch()
        start = shared_prefix(view, known)
        if known and start == len(known) and state.shown_epoch == epoch:  # no message edited since, either
            found = state.shown | recalled_passages(view[start:])
        else:
            found = recalled_passages(view)
        state.shown_in, state.shown, state.shown_epoch = list(view), found, epoch
        return set(found)

    def served(self, thread: str) -> str | None:
        """Id of the user message the last recall of ``thread`` was decided for (None before the first)."""
        state = self._threads.get(thread)
        return state.served if state is not None else None

    def build(
        self, thread: str, user: Message, room: int, *, exclude: Iterable[str] = ()
    ) -> tuple[Message, int] | None:
        """The recall message for ``user`` and its tokens, at most ``room`` tokens; None when nothing fits or matches.

        Marks ``user`` as served either way, so a turn is searched once, however many tool steps follow.
        ``exclude`` holds the keys (`Passage.key`) of passages already shown by a recall message still in view.
        """
        state = self._thread(thread)
        state.served = str(user.message_id)
        self.flush(thread)
        if room < _MIN_PASSAGE_TOKENS or (
            self._header_cost is not None and room < self._header_cost + _MIN_PASSAGE_TOKENS
        ):
            return None  # no passage could fit: skip the search
        # the best hit decides whether this turn refers back at all (a passage an earlier recall message still
        # shows counts: the turn refers back to it); once it does, the room is filled in `_in_episodes` order
        shown = set(exclude)
        found = self._search(thread, user, self._wanted(shown))
        if not found:
            return None
        hits = [h for h in found if h.passage.key not in shown][: self.max_passages]
        chosen: list[Hit] = []
        spent = self._header_tokens(user)
        for hit in hits:
            cost = self._cost(thread, hit.passage)
            if spent + cost <= room:
                chosen.append(hit)
                spent += cost
        if len(chosen) < len(hits) and self._episode_cut(hits, chosen):
            quoted = self._excerpts(thread, user, hits, room, len(chosen))
            if quoted is not None:
                return quoted
        while chosen:
            passages = [h.passage for h in chosen]
            message = _recall_message(user, render_recall(passages), [p.key for p in passages])
            tokens = self._message_tokens(thread, message, passages)
            if tokens <= room:
                self._pricing.keep(message, tokens)
                return message, tokens
            chosen.pop()
        return None

    @staticmethod
    def _episode_cut(hits: list[Hit], chosen: list[Hit]) -> bool:
        """Whether a passage of the best hit's turn (where its answer sits, `_in_episodes`) did not fit whole."""
        turn = hits[0].passage.turn
        return any(h.passage.turn == turn for h in hits if h not in chosen)

    def _excerpts(
        self, thread: str, user: Message, hits: list[Hit], room: int, whole: int
    ) -> tuple[Message, int] | None:
        """A recall message quoting of each passage only the lines that hold the query's telling words
        (`excerpt`), under the shorter `EXCERPT_HEADER`, when it shows more passages than the ``whole`` ones that
        fit in ``room``; None otherwise. Only this message quotes in part: the index, the recall tool and restored
        pointers keep the whole original."""
        words = self.index.telling_words(thread, user.text()[:_QUERY_CHARS])
        if not words:
            return None
        count = self.counter.count_text
        spent = self.counter.count_message(_recall_message(user, EXCERPT_HEADER, []))
        chosen: list[Passage] = []
        for hit in hits:
            text = excerpt(hit.passage.text, words)
            passage = hit.passage if text is None else replace(hit.passage, text=text)
            cost = count(_piece(passage)) + PIECE_SEPARATOR_TOKENS
            if spent + cost <= room:
                chosen.append(passage)
                spent += cost
        while len(chosen) > whole:
            message = _recall_message(user, render_recall(chosen, EXCERPT_HEADER), [p.key for p in chosen])
            tokens = self.counter.count_message(message)
            if tokens <= room:
                return message, tokens
            chosen.pop()
        return None

    def least_room(self, thread: str, user: Message, view: Sequence[Message]) -> int:
        """Tokens the smallest recall message for ``user`` takes (its header and best passage), or 0 when ``user``
        does not refer back to what left the view of ``thread``; decides nothing. A manager asks before it places
        the recall message, to make room for it first. ``view`` is the view it would be placed in: the search is
        the one `build` makes for that view, so when no cut comes between them, `build` finds its answer kept."""
        self.flush(thread)
        found = self._search(thread, user, self._wanted(self.shown(thread, view)))
        return self._header_tokens(user) + self._cost(thread, found[0].passage) if found else 0

    def _wanted(self, shown: set[str]) -> int:
        """Hits a search asks for: the passages a recall message may show, and as many more as are shown already
        (they are skipped), so that ``shown`` does not shrink the choice."""
        return self.max_passages + min(len(shown), self.max_passages)

    def _header_tokens(self, user: Message) -> int:
        if self._header_cost is None:
            self._header_cost = self.counter.count_message(_recall_message(user, RECALL_HEADER, []))
        return self._header_cost

    def _search(self, thread: str, user: Message, limit: int) -> list[Hit]:
        text = user.text()[:_QUERY_CHARS]
        found = self.index.search(
            thread,
            text,
            limit=limit,
            min_coverage=RELATED_COVERAGE,
            gate=self.min_coverage,
            said_gate=QUESTION_COVERAGE if asks_question(text) else 0.0,
            skip_echoes=True,
        )
        return self._in_episodes(thread, found) if found else found

    def _in_episodes(self, thread: str, found: list[Hit]) -> list[Hit]:
        """The hits in the order recall shows them while room lasts: the best one, then the others said in its
        turn, then the rest by rank; a hit that asks a question is followed by the message said right after it.

        What the best passage matched is the episode the user refers to, and the rest of that episode is where its
        answer sits, whatever words it shares with the query: a task's benchmark run ("peak memory: 972 MiB") ranks
        under the same question's words in every other task, and the answer to "Who are you seeing in May?"
        ("Glass Engines!") shares none. Plain rank order spent the room on look-alikes from other turns. Only
        automatic recall orders its hits this way; `search` (the recall tool) keeps BM25's order."""
        turn = found[0].passage.turn
        ordered = [found[0], *(h for h in found[1:] if h.passage.turn == turn)]
        ordered += [h for h in found[1:] if h.passage.turn != turn]
        out: list[Hit] = []
        keys: set[str] = set()
        for i, hit in enumerate(ordered):
            if hit.passage.key in keys:
                continue
            out.append(hit)
            keys.add(hit.passage.key)
            if i < self.max_passages and asks_question(hit.passage.text):
                reply = self.index.following(thread, hit.passage)
                if reply is not None and reply.key not in keys:
                    out.append(Hit(reply, hit.score, 0.0))
                    keys.add(reply.key)
        return out

    def _cost(self, thread: str, passage: Passage) -> int:
        """Tokens a passage adds to a recall message (label, text, separator); memoized per passage."""
        return self._pricing.piece_cost(thread, passage, _piece)

    def _message_tokens(self, thread: str, message: Message, passages: Sequence[Passage]) -> int:
        """Tokens of the recall message showing ``passages``, summed from their memoized counts where the counter
        allows (`RecallPricing`), so a placed recall message is not tokenized again."""
        return self._pricing.message_tokens(thread, message, RECALL_HEADER, _in_order(passages), _piece)

    def forget(self, *threads: str) -> None:
        """Drop everything known about ``threads``, their indexed passages included (one pass over the caches for
        all of them: a manager forgetting every thread it tracks calls this once)."""
        gone = set(threads)
        for thread in gone:
            self._threads.pop(thread, None)
        self._originals.drop(lambda key, _: key[0] not in gone)
        self._pricing.forget(gone)
        for thread in gone:
            self.index.forget(thread)


def _recall_message(user: Message, text: str, keys: list[str]) -> Message:
    return Message(
        message_id=f"{RECALL_ID_PREFIX}{user.message_id}",
        role="user",
        content=[TextBlock(text=text)],
        timestamp=user.timestamp,
        metadata={MARK_KEY: RECALL_MARK, "serves": str(user.message_id), "passages": keys},
    )


def recalled_passages(messages: Iterable[Message]) -> set[str]:
    """Keys (`Passage.key`) of the passages shown by the recall messages among ``messages`` (so a new recall does
    not repeat them). Keys are message id and part, so they hold across restarts and index rebuilds."""
    out: set[str] = set()
    for msg in recall_notes(messages if isinstance(messages, Sequence) else list(messages)):
        out.update(r for r in msg.metadata.get("passages", ()) if isinstance(r, str))
    return out


def asks_question(text: str) -> bool:
    """Whether ``text`` asks a question: it holds a question mark of any script in `_QUESTION_MARKS`."""
    return any(mark in text for mark in _QUESTION_MARKS)


def newest_user(messages: Sequence[Message]) -> int | None:
    """Index of the newest user message of ``messages`` that is not a recall message (None when there is none).

    Scans back from the end, so a tool step costs the length of its turn, not of the view.
    """
    for i in range(len(messages) - 1, -1, -1):
        message = messages[i]
        if message.role == "user" and not is_recall(message):
            return i
    return None


def place_recall(
    recall: Recall,
    thread: str,
    messages: Sequence[Message],
    room: int | Callable[[], int],
    *,
    seen: Sequence[Message] | None = None,
) -> tuple[list[Message], int, int] | None:
    """``messages`` with the recall message for their newest user message inserted right before it.

    The one placement every manager shares: the newest user message gets its recall decided once (`Recall.build`
    marks it served, whatever it finds), so the tool steps of its turn see the same view; a recall message already
    placed for it (kept by the manager in its view) is never built again. ``room`` is the token room left for the
    recall message, or a callable computing it, called only when a search is due (counting a whole view is the
    costly part for a manager that keeps no running total). Returns ``(messages, index of the recall message,
    its tokens)``, or None when nothing is placed. ``seen``, when given, is ``messages`` with the part a manager
    found equal to its remembered view (a copy after a reload) as its own objects: recall knows what those show
    by identity, where the copies would make it read the whole view again and keep them alive.
    """
    i = newest_user(messages)
    if i is None:
        return None
    served = str(messages[i].message_id)
    if recall.served(thread) == served or (i > 0 and messages[i - 1].metadata.get("serves") == served):
        return None
    space = room() if callable(room) else room
    built = recall.build(thread, messages[i], space, exclude=recall.shown(thread, messages if seen is None else seen))
    if built is None:
        return None
    message, tokens = built
    return [*messages[:i], message, *messages[i:]], i, tokens


def split_recall(messages: Iterable[Message]) -> tuple[list[Message], dict[str, Message]]:
    """``messages`` without their recall messages, and those recall messages by the id of the user message each
    serves: a manager that cuts by counting user turns or summarizes must neither count nor summarize them."""
    kept: list[Message] = []
    recalls: dict[str, Message] = {}
    for message in messages:
        if is_recall(message):
            recalls[str(message.metadata.get("serves"))] = message
        else:
            kept.append(message)
    return kept, recalls


def join_recall(messages: Iterable[Message], recalls: dict[str, Message]) -> list[Message]:
    """``messages`` with each of ``recalls`` put back right before the user message it serves, if that one is
    still there: a recall message ages out with the turn it was made for, like any message of that turn."""
    if not recalls:
        return list(messages)
    out: list[Message] = []
    for message in messages:
        recalled = recalls.get(str(message.message_id)) if message.role == "user" else None
        if recalled is not None:
            out.append(recalled)
        out.append(message)
    return out
