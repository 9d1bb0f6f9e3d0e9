"""`RecallIndex`: an incremental full-text index (SQLite FTS5, BM25 ranking) over what left a conversation's view.

Recall needs to find, for the message being answered now, the few earlier passages that matter, among everything
a manager cut, cleared or summarized away. A lexical index is the right tool for that: it is exact about the rare
words that carry facts (names, ports, paths, ids), costs nothing to run offline, and SQLite ships one. FTS5 keeps
an inverted index updated per insert, so adding a message costs only that message, and ``bm25()`` ranks matches
by how rare and how concentrated the query's words are in a passage.

Messages are split into passages of a few hundred characters at line and sentence boundaries, so a hit brings
back the part of a long message that matches rather than all of it. Each passage keeps where it was said
(message position, user turn, date) so the recalled text can be placed in time for the model, and the whitespace
around it, so the message's text can be rebuilt byte for byte (`RecallIndex.message_text`) after a restart.

A passage is identified by its message id and part (`Passage.key`), never by a SQLite rowid: a rowid changes
when an index is rebuilt, a recall message written into a checkpoint must still name the same passages.

One index serves many threads. Each thread owns a range of rowids (its slot in the high 32 bits), so a search
is restricted to its thread by a rowid range, which FTS5 applies while it walks its posting lists; a thread
column in the full-text table would be one more phrase matching every row of the thread, and BM25 scores every
phrase of every row it returns (measured: 2-3x the cost of the search). The words' passage frequencies per
thread, which the relevance gate (`Hit.coverage`) reads, are kept in memory and, for an index in a file, in the
file too (``recall_term``), written in the transaction that adds the passages, so a reopened index ranks as
before. One process writes a given file at a time (rowids are allocated in memory).

By default the index lives in memory (``":memory:"``); pass a file path to keep it on disk (e.g. next to a
SQLite session store). An index file written by the first version of this module (thread column, rowids as
passage ids) is converted when opened.
"""

from __future__ import annotations

import logging
import math
import re
import sqlite3
import sys
import threading
from bisect import bisect_right
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from itertools import chain
from pathlib import Path

from .._cache import LRUCache, SizedCache
from ..errors import ConfigurationError

logger = logging.getLogger(__name__)

PASSAGE_CHARS = 600
"""Target size of one passage: long enough to hold a fact with its context, short enough to place several."""
MAX_QUERY_TERMS = 12
"""Distinct words of a query sent to FTS5, the rarest in the index first: a long message must not make one search
slow (each common word would make FTS5 score most passages)."""
MAX_POSTINGS = 200
"""Passages the chosen query words may match in all (their document frequencies summed; the rarest word is always
sent). BM25 weighs rare words most anyway, so ranking changes little, and a search stays well under a millisecond."""
SCHEMA_VERSION = 2
"""``PRAGMA user_version`` of an index file in this layout (1: the thread-column layout, converted on open)."""

DEFAULT_TERMS_CACHE_BYTES = 8 * 1024 * 1024
"""What the folded words of passages kept for coverage tests may take (hits recur across the searches of one
session), by estimated bytes: an index shared by a process's conversations keeps one bound for all of them."""
_TERMS_ENTRY_BYTES = 160
"""One kept passage's words beyond their pointers: the tuple, the key and the ordered-dict node (the words
themselves are interned, shared by every passage that holds them)."""
_ANSWERS_CACHE = 64
"""Searches whose answers are kept (`RecallIndex.search`): a handful of questions are asked again at most."""
_SLOT_BITS = 32
_SEQ_MASK = (1 << _SLOT_BITS) - 1
_MAX_SLOT = (1 << 31) - 1
_IN_CHUNK = 500
_WORD = re.compile(r"[^\W_]+", re.UNICODE)
_SENTENCE_END = re.compile(r"[.!?][)\"\']?\s+")
_LINE_BREAK = re.compile(r"\n+")
_STOPWORD_TEXT = """
a about above after again against all also am an and any are aren't as at be because been before being below
between both but by can could did do does doing don't down during each few for from further had has have having
he her here hers herself him himself his how i i'm i've if in into is isn't it it's its itself just let's me
more most my myself no nor not now of off on once only or other our ours ourselves out over own same she should
so some such than that that's the their theirs them themselves then there these they this those through to too
under until up very was we were what when where which while who whom why will with would you your yours yourself
yourselves thanks thank please hi hello ok okay yes yeah sure really like get got know think want need one well
can't much many way also there's here's
"""
_STOPWORDS = frozenset(_STOPWORD_TEXT.split())

_SCHEMA = """
CREATE TABLE IF NOT EXISTS recall_thread(
    slot INTEGER PRIMARY KEY, thread TEXT NOT NULL UNIQUE, passages INTEGER NOT NULL DEFAULT 0);
CREATE TABLE IF NOT EXISTS recall_passage(
    rowid INTEGER PRIMARY KEY, slot INTEGER NOT NULL, message_id TEXT NOT NULL, part INTEGER NOT NULL,
    parts INTEGER NOT NULL, position INTEGER NOT NULL, turn INTEGER NOT NULL, role TEXT NOT NULL, date TEXT,
    lead TEXT NOT NULL, trail TEXT NOT NULL, body TEXT NOT NULL, UNIQUE(slot, message_id, part));
CREATE TABLE IF NOT EXISTS recall_ref(
    slot INTEGER NOT NULL, ref TEXT NOT NULL, message_id TEXT NOT NULL, PRIMARY KEY(slot, ref)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS recall_term(
    slot INTEGER NOT NULL, term TEXT NOT NULL, n INTEGER NOT NULL, PRIMARY KEY(slot, term)) WITHOUT ROWID;
CREATE VIRTUAL TABLE IF NOT EXISTS recall_fts USING fts5(body, content='', tokenize='porter unicode61');
CREATE INDEX IF NOT EXISTS recall_position ON recall_passage(slot, position);
"""
_PASSAGE_COLUMNS = "message_id, position, turn, role, date, part, parts, body"
_SEARCH_SQL = (
    f"SELECT p.rowid, {', '.join('p.' + c for c in _PASSAGE_COLUMNS.split(', '))}, s.score FROM "
    "(SELECT rowid, bm25(recall_fts) AS score FROM recall_fts WHERE recall_fts MATCH ? "
    "AND rowid BETWEEN ? AND ? ORDER BY score LIMIT ?) AS s "
    "JOIN recall_passage AS p ON p.rowid = s.rowid ORDER BY s.score, p.rowid"
)
"""Ranking on the full-text index alone (restricted to a thread's rowids), then the passages by rowid. ``bm25()``
is named once (ordering by its alias): written twice, as the score and the order, SQLite computes it twice per
matching row (measured: 15% of the query). Its sign is flipped in Python (higher is better)."""


def passage_key(message_id: str, part: int) -> str:
    """The stable id of a passage: its message id and part (``"<message id>#<part>"``)."""
    return f"{message_id}#{part}"


@dataclass(frozen=True)
class Passage:
    """One indexed piece of a message that left the view, with where it was said."""

    thread: str
    message_id: str
    position: int
    turn: int
    role: str
    date: str | None
    part: int
    parts: int
    text: str

    @property
    def key(self) -> str:
        """Stable id (message id and part): the same in every process and after the index is rebuilt."""
        return passage_key(self.message_id, self.part)


@dataclass(frozen=True)
class Entry:
    """One message to index: its id, text, where it was said, and the tool call ids its results answer."""

    message_id: str
    text: str
    position: int
    turn: int
    role: str
    date: str | None = None
    refs: tuple[str, ...] = ()


@dataclass(frozen=True)
class Hit:
    """A passage found by a search.

    ``score`` is its BM25 relevance (higher is better, SQLite's sign flipped), which ranks hits. ``coverage`` is
    the share of the query's rarity it contains: the summed inverse document frequency of the query words found
    in the passage over that of all query words (0..1). BM25 grows with the query's length, so it cannot say
    whether a hit is *about* the query; coverage can, and gates what recall adds.
    """

    passage: Passage
    score: float
    coverage: float = 0.0


def passage_spans(text: str, limit: int = PASSAGE_CHARS) -> list[tuple[int, int]]:
    """Where `split_passages` cuts ``text``: ``(start, end)`` offsets into ``text`` of each passage, in order.

    What lies between the spans (and before the first, after the last) is whitespace, so the spans and the gaps
    between them rebuild ``text`` exactly.
    """
    lo = len(text) - len(text.lstrip())
    hi = len(text.rstrip())
    if lo >= hi:
        return []
    if hi - lo <= limit:
        return [(lo, hi)]
    body = text[lo:hi]
    size = len(body)
    lines = [m.end() for m in _LINE_BREAK.finditer(body)]
    breaks = sorted({*lines, *(m.end() for m in _SENTENCE_END.finditer(body)), size})
    out: list[tuple[int, int]] = []
    start = 0
    while start < size:
        end_limit = start + limit
        last = bisect_right(breaks, end_limit)
        if last <= bisect_right(breaks, start):
            cut = min(end_limit, size)
        else:
            # a line break at least half way through the piece beats a later sentence end
            k = bisect_right(lines, end_limit) - 1
            at_line = lines[k] if k >= 0 and lines[k] > start else None
            cut = at_line if at_line is not None and at_line - start >= limit // 2 else breaks[last - 1]
        s, e = start, cut
        while s < e and body[s].isspace():
            s += 1
        while e > s and body[e - 1].isspace():
            e -= 1
        if s < e:
            out.append((lo + s, lo + e))
        start = cut
    return out


def split_passages(text: str, limit: int = PASSAGE_CHARS) -> list[str]:
    """``text`` cut into consecutive pieces of at most about ``limit`` characters, each a verbatim slice of it.

    Cuts fall at line breaks where possible, else after a sentence end, else (a sentence longer than the limit)
    at the limit. Only the whitespace at a cut is dropped, so a recalled passage is the original words.
    """
    return [text[s:e] for s, e in passage_spans(text, limit)]


TELLING_SHARE = 0.5
"""How rare a query word must be, against its rarest (inverse document frequency), for `excerpt` to keep a line."""
EXCERPT_GAP = "[...]"
"""What stands for the lines (or sentences) of a passage an excerpt leaves out."""


def excerpt(text: str, words: frozenset[str]) -> str | None:
    """The lines of ``text`` that hold one of ``words`` (folded, `normal_terms`), each run of the others replaced
    by `EXCERPT_GAP`; a passage of one line is cut into sentences instead. None when every unit holds one, or
    none does (nothing to leave out, or nothing to keep it for)."""
    units = [u for u in text.split("\n") if u.strip()]
    if len(units) < 2:
        body = text.strip()
        cuts = [m.end() for m in _SENTENCE_END.finditer(body)]
        starts = [0, *cuts]
        units = [body[a:b].strip() for a, b in zip(starts, [*cuts, len(body)], strict=True)]
        units = [u for u in units if u]
        joiner = " "
    else:
        joiner = "\n"
    if len(units) < 2:
        return None
    keep = [bool(words & normal_terms(u)) for u in units]
    if all(keep) or not any(keep):
        return None
    out: list[str] = []
    for unit, kept in zip(units, keep, strict=True):
        if kept:
            out.append(unit)
        elif not out or out[-1] != EXCERPT_GAP:
            out.append(EXCERPT_GAP)
    return joiner.join(out)


def query_terms(text: str, limit: int = MAX_QUERY_TERMS) -> list[str]:
    """The distinct content words of ``text`` (no stop words, at least 2 characters), longest first."""
    seen: dict[str, None] = {}
    for word in _WORD.findall(text.casefold()):
        if len(word) < 2 or word in _STOPWORDS or word in seen:
            continue
        seen[word] = None
    ordered = sorted(seen, key=len, reverse=True)
    return ordered[:limit]


def normal_terms(text: str) -> set[str]:
    """The words of ``text`` folded for overlap tests: case-folded, a plural ``s`` dropped ("days" -> "day")."""
    # `_fold` inlined: this runs on every passage indexed (a regular expression cutting the plural ``s`` from the
    # text first measured slower)
    return {w[:-1] if len(w) > 3 and w[-1] == "s" and w[-2] != "s" else w for w in set(_WORD.findall(text.casefold()))}


def _fold(word: str) -> str:
    return word[:-1] if len(word) > 3 and word[-1] == "s" and word[-2] != "s" else word


_LABEL_CHARS = 64
"""Where a speaker's name stands in an indexed passage: before ": " in its first characters (`Recall.flush`)."""


def _tells(df: int, docs: int) -> bool:
    """Whether a word in ``df`` of a thread's ``docs`` passages tells them apart: it is in fewer than half of them
    (a speaker's name on every line of a two-person chat is not), or in one only."""
    return df == 1 or 2 * df < docs


def fts_query(terms: Iterable[str]) -> str:
    """An FTS5 ``OR`` query matching any of ``terms``; every term is quoted, so no user text is FTS syntax."""
    return " OR ".join('"' + term.replace('"', '""') + '"' for term in terms)


@dataclass
class _Stats:
    """One thread's slot (its rowid range), next rowid, passage count and word frequencies."""

    slot: int
    seq: int = 0
    docs: int = 0
    df: Counter[str] = field(default_factory=Counter)
    ids: set[str] | None = None
    """The ids of the messages indexed, for a thread this process created (None: a thread read from a file, whose
    ids are looked up in it): adding a batch then needs no query to skip the messages already indexed."""


class RecallIndex:
    """A thread-keyed FTS5 index of passages; thread-safe (one lock around the connection).

    ``path`` is ``":memory:"`` (default) or a SQLite file, created if missing. ``passage_chars`` is the passage size.
    """

    def __init__(
        self,
        path: str | Path = ":memory:",
        *,
        passage_chars: int = PASSAGE_CHARS,
        terms_cache_bytes: int = DEFAULT_TERMS_CACHE_BYTES,
    ) -> None:
        if not isinstance(passage_chars, int) or isinstance(passage_chars, bool) or passage_chars < 50:
            raise ConfigurationError(f"passage_chars must be an int of at least 50, got {passage_chars!r}")
        self.path = str(path)
        self.passage_chars = passage_chars
        self._persist = self.path not in (":memory:", "")
        self._lock = threading.Lock()
        self._threads: dict[str, _Stats] = {}
        # threads this process found no passages of: a search on a thread nothing has left yet (every turn of a
        # conversation under budget) answers without a query
        self._absent: set[str] = set()
        self._terms: SizedCache[int, tuple[str, ...]] = SizedCache(terms_cache_bytes, name="terms_cache_bytes")
        # answers of recent searches, valid while `_generation` (bumped by every write: BM25 reads the whole
        # table's statistics, so a write to any thread can change any thread's scores) is unchanged
        self._answers: LRUCache[tuple[object, ...], list[Hit]] = LRUCache(_ANSWERS_CACHE)
        self._generation = 0
        try:
            self._db = sqlite3.connect(self.path, check_same_thread=False)
            self._setup()
        except sqlite3.OperationalError as exc:
            raise ConfigurationError(
                f"cannot open a recall index at {self.path!r} ({exc}); SQLite needs the FTS5 extension (standard in "
                "CPython's sqlite3) and a writable path",
            ) from exc

    def __repr__(self) -> str:
        return f"RecallIndex(path={self.path!r})"

    def close(self) -> None:
        with self._lock:
            self._db.close()

    def _setup(self) -> None:
        db = self._db
        if self._persist:
            # written on every flush: a write-ahead log without an fsync per commit keeps a flush cheap; a commit
            # still survives a crash of the process (only a power loss can drop the last ones)
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=NORMAL")
        version = int(db.execute("PRAGMA user_version").fetchone()[0])
        legacy: list[tuple[str, str, int, int, str, str | None, int, int, str]] = []
        if version < SCHEMA_VERSION:
            columns = {row[1] for row in db.execute("PRAGMA table_info(recall_passage)")}
            if "thread" in columns:
                legacy = db.execute(
                    "SELECT thread, message_id, position, turn, role, date, part, parts, body FROM recall_passage "
                    "ORDER BY rowid"
                ).fetchall()
                db.executescript("DROP TABLE IF EXISTS recall_fts; DROP TABLE recall_passage;")
                logger.info("recall index %s: converting %d passages to layout %d", self.path, len(legacy), 2)
        db.executescript(_SCHEMA)
        db.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
        db.commit()
        if legacy:
            self._convert(legacy)

    def _convert(self, rows: Sequence[tuple[str, str, int, int, str, str | None, int, int, str]]) -> None:
        """Re-add the passages of a first-layout file, as they were cut (the whitespace between parts was not kept:
        a message rebuilt from them joins its parts with a line break)."""
        with self._lock:
            for thread, message_id, position, turn, role, date, part, parts, body in rows:
                stats = self._stats(thread, create=True)
                assert stats is not None
                lead = "" if part == 0 else "\n"
                self._insert(stats, [(message_id, part, parts, position, turn, role, date, lead, "", body)])
            self._db.commit()

    # -- thread state ------------------------------------------------------------------------------------------

    def _stats(self, thread: str, *, create: bool) -> _Stats | None:
        """The thread's slot and statistics: loaded from the file on first use, created when ``create``."""
        stats = self._threads.get(thread)
        if stats is not None:
            return stats
        if not create and thread in self._absent:
            return None
        db = self._db
        row = db.execute("SELECT slot, passages FROM recall_thread WHERE thread = ?", (thread,)).fetchone()
        if row is None:
            if not create:
                self._absent.add(thread)
                return None
            self._absent.discard(thread)
            slot = int(db.execute("SELECT COALESCE(MAX(slot), 0) + 1 FROM recall_thread").fetchone()[0])
            if slot > _MAX_SLOT:
                raise ConfigurationError(
                    f"recall index {self.path!r} holds {_MAX_SLOT} threads, the most one index can; forget() "
                    "finished threads or use one index per group of threads"
                )
            db.execute("INSERT INTO recall_thread(slot, thread) VALUES (?, ?)", (slot, thread))
            stats = _Stats(slot, ids=set())
        else:
            slot = int(row[0])
            base = slot << _SLOT_BITS
            top = db.execute(
                "SELECT MAX(rowid) FROM recall_passage WHERE rowid BETWEEN ? AND ?", (base, base | _SEQ_MASK)
            ).fetchone()[0]
            stats = _Stats(slot, seq=0 if top is None else (int(top) & _SEQ_MASK) + 1, docs=int(row[1]))
            stats.df.update(dict(db.execute("SELECT term, n FROM recall_term WHERE slot = ?", (slot,))))
        self._threads[thread] = stats
        return stats

    # -- writing ------------------------------------------------------------------------------------------

    def add(
        self,
        thread: str,
        message_id: str,
        text: str,
        *,
        position: int,
        turn: int,
        role: str,
        date: str | None = None,
        refs: Sequence[str] = (),
    ) -> int:
        """Index ``text`` (one message) as passages; returns how many. A message already indexed is skipped."""
        return self.add_many(thread, [Entry(message_id, text, position, turn, role, date, tuple(refs))])

    def add_many(self, thread: str, entries: Iterable[Entry]) -> int:
        """Index several messages in one transaction; returns the passages added (indexed messages are skipped)."""
        batch = list(entries)
        if not batch:
            return 0
        with self._lock:
            db = self._db
            stats = self._stats(thread, create=True)
            assert stats is not None
            have: set[str] = set()
            ids: list[str] = []
            if stats.ids is not None:
                have.update(stats.ids.intersection(e.message_id for e in batch))
            else:
                ids = list({e.message_id for e in batch})
            for i in range(0, len(ids), _IN_CHUNK):
                chunk = ids[i : i + _IN_CHUNK]
                have.update(
                    r[0]
                    for r in db.execute(
                        f"SELECT message_id FROM recall_passage WHERE slot = ? AND part = 0 AND message_id IN "
                        f"({','.join('?' * len(chunk))})",
                        (stats.slot, *chunk),
                    )
                )
            rows: list[tuple[str, int, int, int, int, str, str | None, str, str, str]] = []
            refs: list[tuple[int, str, str]] = []
            for entry in batch:
                if entry.message_id in have:
                    continue
                spans = passage_spans(entry.text, self.passage_chars)
                if not spans:
                    continue
                have.add(entry.message_id)
                text = entry.text
                n = len(spans)
                previous = 0
                for part, (start, end) in enumerate(spans):
                    trail = text[end:] if part == n - 1 else ""
                    rows.append(
                        (
                            entry.message_id,
                            part,
                            n,
                            entry.position,
                            entry.turn,
                            entry.role,
                            entry.date,
                            text[previous:start],
                            trail,
                            text[start:end],
                        )
                    )
                    previous = end
                refs.extend((stats.slot, ref, entry.message_id) for ref in entry.refs)
            self._insert(stats, rows)
            if refs:
                db.executemany("INSERT OR IGNORE INTO recall_ref(slot, ref, message_id) VALUES (?, ?, ?)", refs)
            if self._persist:
                db.commit()
            # in memory the transaction stays open: nobody else reads the database, and FTS5 then keeps new
            # passages in its pending hash instead of writing a small segment per flush (measured: indexing and
            # searching a 3,000-call session 25% faster than with a commit per flush)
        return len(rows)

    def _insert(
        self, stats: _Stats, rows: Sequence[tuple[str, int, int, int, int, str, str | None, str, str, str]]
    ) -> None:
        """Write passages (message id, part, parts, position, turn, role, date, lead, trail, body) of one thread and
        count their words; the caller holds the lock and commits."""
        if not rows:
            return
        if stats.seq + len(rows) > _SEQ_MASK:
            raise ConfigurationError(
                f"recall index {self.path!r}: a thread holds at most {_SEQ_MASK} passages; forget() it or start a "
                "new thread"
            )
        base = (stats.slot << _SLOT_BITS) + stats.seq
        stats.seq += len(rows)
        self._generation += 1
        words = [normal_terms(row[9]) for row in rows]
        if stats.ids is not None:
            stats.ids.update(row[0] for row in rows if row[1] == 0)
        db = self._db
        db.executemany(
            "INSERT INTO recall_passage(rowid, slot, message_id, part, parts, position, turn, role, date, lead, trail, "
            "body) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [(base + i, stats.slot, *row) for i, row in enumerate(rows)],
        )
        db.executemany(
            "INSERT INTO recall_fts(rowid, body) VALUES (?, ?)", [(base + i, row[9]) for i, row in enumerate(rows)]
        )
        stats.docs += len(rows)
        db.execute("UPDATE recall_thread SET passages = ? WHERE slot = ?", (stats.docs, stats.slot))
        if not self._persist:
            # counted straight into the thread's frequencies: merging a Counter of the batch into them is a Python
            # loop over its distinct words
            stats.df.update(chain.from_iterable(words))
        else:
            counts = Counter(chain.from_iterable(words))
            stats.df.update(counts)
            db.executemany(
                "INSERT INTO recall_term(slot, term, n) VALUES (?, ?, ?) "
                "ON CONFLICT(slot, term) DO UPDATE SET n = n + excluded.n",
                [(stats.slot, term, n) for term, n in counts.items()],
            )

    # -- reading ------------------------------------------------------------------------------------------

    def search(
        self,
        thread: str,
        query: str,
        *,
        limit: int = 8,
        exclude: Iterable[str] = (),
        min_score: float = 0.0,
        min_coverage: float = 0.0,
        gate: float = 0.0,
        said_gate: float = 0.0,
        skip_echoes: bool = False,
    ) -> list[Hit]:
        """The best ``limit`` passages of ``thread`` for ``query`` by BM25, skipping the passage keys in ``exclude``
        and hits under ``min_score`` (BM25) or ``min_coverage`` (see `Hit`); none at all unless the best of them
        covers at least ``gate``, or (when ``said_gate`` is given) at least ``said_gate`` of the rarity of the
        query words the thread has used that tell its passages apart (`_tells`): a question asks in its own words
        ("pay" for what was said as "came to"), and a word nobody said would otherwise outweigh the rare word it
        shares with its answer.
        ``skip_echoes`` leaves out passages that only repeat the query (`_echoes`), for recall that nobody asked for.

        Before FTS5 runs, the query's words are looked up in the thread's word frequencies: when the words the
        index holds at all carry less than ``min_coverage`` (or ``gate``) of the query's rarity, no passage can
        reach it and the search is skipped. The answer is kept while nothing is added or forgotten: the same
        question asked again (the recall tool called twice, a turn searched again after a restart of its step)
        costs a dictionary lookup.
        """
        if limit <= 0:
            return []
        skip = frozenset(exclude)
        with self._lock:
            key = (thread, query, limit, skip, min_score, min_coverage, gate, said_gate, skip_echoes, self._generation)
            found = self._answers.get(key)
        if found is None:
            found = self._search(thread, query, limit, skip, min_score, min_coverage, gate, said_gate, skip_echoes)
            with self._lock:
                self._answers.put(key, found)
        return list(found)

    def _search(
        self,
        thread: str,
        query: str,
        limit: int,
        skip: frozenset[str],
        min_score: float,
        min_coverage: float,
        gate: float,
        said_gate: float,
        skip_echoes: bool,
    ) -> list[Hit]:
        with self._lock:
            stats = self._stats(thread, create=False)
        if stats is None or not stats.docs:  # nothing of this thread indexed: no words to look at either
            return []
        terms = query_terms(query, limit=4 * MAX_QUERY_TERMS)
        if not terms:
            return []
        with self._lock:
            stats = self._stats(thread, create=False)  # again: another thread may have forgotten it meanwhile
            if stats is None:
                return []
            df = stats.df
            idf = self._idf(stats, sorted({_fold(t) for t in terms}))  # terms are words already
            whole = sum(idf.values()) or 1.0
            # terms in a fixed order (a set's order follows PYTHONHASHSEED): ties in rarity and the float sums must
            # not make two runs of the same conversation recall different passages.
            # words never indexed match nothing; without enough indexed rarity no passage can reach the floor
            known = sorted((t for t in idf if df.get(t)), key=lambda t: (df[t], t))
            if not known:
                return []
            # the words said before that tell passages apart (in fewer than half of them: a speaker's name in
            # every line is not one); without any, the gate over the words said does not apply
            telling = frozenset(t for t in known if _tells(df[t], stats.docs)) if said_gate else frozenset()
            said = sum(idf[t] for t in sorted(telling))
            if not said:
                said_gate = 0.0
            if sum(idf[t] for t in known) / whole < max(min_coverage, gate) and not said_gate:
                return []
            chosen: set[str] = set()
            postings = 0
            for term in known[:MAX_QUERY_TERMS]:
                if chosen and postings + df[term] > MAX_POSTINGS:
                    break
                chosen.add(term)
                postings += df[term]
            wanted = [t for t in terms if _fold(t) in chosen]
            base = stats.slot << _SLOT_BITS
            rows = self._db.execute(
                _SEARCH_SQL, (fts_query(wanted), base, base | _SEQ_MASK, limit + len(skip))
            ).fetchall()
        hits: list[Hit] = []
        best_said = 0.0  # the best hit's share of the rarity of the telling query words the thread has used
        kept = [row for row in rows if passage_key(row[1], row[6]) not in skip][:limit] if skip else rows[:limit]
        # the weights of the query's words some passage holds (no other can count), in sorted order: each hit's
        # coverage is summed in that order, so the float is the same in every process
        weights = [(t, idf[t]) for t in sorted(known)]
        weighed = frozenset(known)
        terms_cache = self._terms
        for row in kept:
            score = -row[9]
            if score < min_score:
                continue
            rowid = row[0]
            found = terms_cache.get(rowid)
            if found is None:
                # a tuple of interned words: a frozenset per cached passage cost 59 MB at the cache's bound
                found = tuple(map(sys.intern, normal_terms(row[8])))
                terms_cache.put(rowid, found, _TERMS_ENTRY_BYTES + 8 * len(found))
            # the query words it holds, by hashing its words once (testing each query word against the tuple
            # compared strings element by element: up to 80 passage words times 48 query words a hit)
            held = weighed.intersection(found)
            coverage = sum([weight for term, weight in weights if term in held]) / whole
            if coverage >= min_coverage and not (skip_echoes and self._echoes(row[8], found, idf)):
                hits.append(Hit(Passage(thread, *row[1:9]), score, coverage))
                if said_gate:
                    best_said = max(best_said, sum([w for t, w in weights if t in held and t in telling]) / said)
        if gate and (not hits or max(h.coverage for h in hits) < gate) and not (said_gate and best_said >= said_gate):
            return []
        return hits

    @staticmethod
    def _echoes(body: str, words: Iterable[str], query: dict[str, float]) -> bool:
        """Whether a passage (``body``, its folded ``words``) only repeats its query: every content word of it but
        the speaker's name it was indexed under ("Greta: ...") is a query word. Small talk and repeated
        instructions find their own earlier copies; showing those adds tokens and no information. One new word
        (the "8080" of "the API server listens on port 8080") makes it an answer."""
        head, colon, _ = body[:_LABEL_CHARS].partition(": ")
        label = normal_terms(head) if colon and len(head.split()) <= 3 else set()
        return all(w in query or w in label or w in _STOPWORDS or len(w) < 2 for w in words)

    def _idf(self, stats: _Stats, terms: Iterable[str]) -> dict[str, float]:
        """Inverse document frequency of each term among a thread's passages (BM25's form, floored at 0.1)."""
        get = stats.df.get  # not the Counter's item lookup: a word it lacks costs a Python `__missing__` call
        n = stats.docs
        out: dict[str, float] = {}
        for t in terms:
            d = get(t, 0)
            out[t] = max(math.log((n - d + 0.5) / (d + 0.5) + 1.0), 0.1)
        return out

    def telling_words(self, thread: str, query: str) -> frozenset[str]:
        """The folded words of ``query`` that tell ``thread``'s passages apart (`_tells`: in fewer than half of
        them, or in one only) and are at least `TELLING_SHARE` as rare as the rarest; what `excerpt` keeps lines
        for."""
        with self._lock:
            stats = self._stats(thread, create=False)
            if stats is None or not stats.docs:
                return frozenset()
            df, docs = stats.df, stats.docs
            words = {_fold(t) for t in query_terms(query, limit=4 * MAX_QUERY_TERMS)}
            weights = {w: self._idf(stats, [w])[w] for w in words if df.get(w) and _tells(df[w], docs)}
        top = max(weights.values(), default=0.0)
        return frozenset(w for w, weight in weights.items() if weight >= TELLING_SHARE * top)

    def message_passages(self, thread: str, message_id: str) -> list[Passage]:
        """Every passage of one indexed message, in order (empty when it was never indexed)."""
        with self._lock:
            stats = self._stats(thread, create=False)
            if stats is None:
                return []
            rows = self._db.execute(
                f"SELECT {_PASSAGE_COLUMNS} FROM recall_passage WHERE slot = ? AND message_id = ? ORDER BY part",
                (stats.slot, message_id),
            ).fetchall()
        return [Passage(thread, *row) for row in rows]

    def following(self, thread: str, passage: Passage) -> Passage | None:
        """The first passage of the message said right after ``passage``'s (the next position, in the same turn or
        the next one), when that message was indexed too (it left the view); None otherwise."""
        with self._lock:
            stats = self._stats(thread, create=False)
            if stats is None:
                return None
            row = self._db.execute(
                f"SELECT {_PASSAGE_COLUMNS} FROM recall_passage WHERE slot = ? AND position = ? "
                "AND turn BETWEEN ? AND ? ORDER BY part LIMIT 1",
                (stats.slot, passage.position + 1, passage.turn, passage.turn + 1),
            ).fetchone()
        return Passage(thread, *row) if row is not None else None

    def message_text(self, thread: str, ref: str) -> tuple[str, str] | None:
        """``(message id, text)`` of an indexed message, by its id or a tool call id its results answer, rebuilt
        byte for byte from its passages and the whitespace between them; None when it was never indexed."""
        with self._lock:
            stats = self._stats(thread, create=False)
            if stats is None:
                return None
            db = self._db
            row = db.execute(
                "SELECT message_id FROM recall_ref WHERE slot = ? AND ref = ?", (stats.slot, ref)
            ).fetchone()
            message_id = str(row[0]) if row is not None else ref
            parts = db.execute(
                "SELECT lead, body, trail FROM recall_passage WHERE slot = ? AND message_id = ? ORDER BY part",
                (stats.slot, message_id),
            ).fetchall()
        if not parts:
            return None
        return message_id, "".join(lead + body + trail for lead, body, trail in parts)

    def count(self, thread: str | None = None) -> int:
        """Passages indexed (for one thread, or all)."""
        with self._lock:
            if thread is None:
                row = self._db.execute("SELECT count(*) FROM recall_passage").fetchone()
            else:
                stats = self._stats(thread, create=False)
                if stats is None:
                    return 0
                row = self._db.execute("SELECT count(*) FROM recall_passage WHERE slot = ?", (stats.slot,)).fetchone()
        return int(row[0])

    def size_bytes(self) -> int:
        """Bytes the database occupies (pages in use times page size): how the index grows with history."""
        with self._lock:
            pages = self._db.execute("PRAGMA page_count").fetchone()[0]
            size = self._db.execute("PRAGMA page_size").fetchone()[0]
        return int(pages) * int(size)

    def forget(self, thread: str) -> None:
        """Delete every passage of ``thread`` and its statistics."""
        with self._lock:
            stats = self._stats(thread, create=False)
            if stats is None:
                return
            db = self._db
            base = stats.slot << _SLOT_BITS
            rows = db.execute(
                "SELECT rowid, body FROM recall_passage WHERE rowid BETWEEN ? AND ?", (base, base | _SEQ_MASK)
            ).fetchall()
            db.executemany("INSERT INTO recall_fts(recall_fts, rowid, body) VALUES ('delete', ?, ?)", rows)
            for table in ("recall_passage", "recall_ref", "recall_term", "recall_thread"):
                db.execute(f"DELETE FROM {table} WHERE slot = ?", (stats.slot,))
            db.commit()
            self._generation += 1
            del self._threads[thread]
            self._terms.drop(lambda rowid, _: rowid >> _SLOT_BITS != stats.slot)
