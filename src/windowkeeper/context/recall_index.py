"""`RecallIndex`: an incremental full-text index (SQLite FTS5, BM25 ranking) over what left a conversation's view.

Recall needs to find, for the message being answered now, the few earlier passages that matter, among everything
a manager cut, cleared or summarized away. A lexical index is the right tool for that: it is exact about the rare
words that carry facts (names, ports, paths, ids), costs nothing to run offline, and SQLite ships one. FTS5 keeps
an inverted index updated per insert, so adding a message costs only that message, and ``bm25()`` ranks matches
by how rare and how concentrated the query's words are in a passage.

Messages are split into passages of a few hundred characters at line and sentence boundaries, so a hit brings
back the part of a long message that matches rather than all of it. Each passage keeps where it was said
(message position, user turn, date) so the recalled text can be placed in time for the model.

By default the index lives in memory (``":memory:"``); pass a file path to keep it on disk (e.g. next to a
SQLite session store). One index serves many threads: every row carries its thread key.
"""

from __future__ import annotations

import hashlib
import logging
import math
import re
import sqlite3
import threading
from collections import Counter, OrderedDict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from ..errors import ConfigurationError

logger = logging.getLogger(__name__)

PASSAGE_CHARS = 600
"""Target size of one passage: long enough to hold a fact with its context, short enough to place several."""
MAX_QUERY_TERMS = 12
"""Distinct words of a query sent to FTS5, the rarest in the index first: a long message must not make one search
slow (each common word would make FTS5 score most passages)."""
MAX_POSTINGS = 200
"""Passages the chosen query words may match in all (their document frequencies summed; the rarest word is always
sent). BM25 weighs rare words most anyway, so ranking changes little, and a search stays around a millisecond."""

_TERMS_CACHE = 16384
"""Passages whose folded words are kept for coverage tests (hits recur across the searches of one session)."""
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


@dataclass(frozen=True)
class Passage:
    """One indexed piece of a message that left the view, with where it was said."""

    rowid: int
    thread: str
    message_id: str
    position: int
    turn: int
    role: str
    date: str | None
    part: int
    parts: int
    text: str


@dataclass(frozen=True)
class Entry:
    """One message to index: its id, text and where it was said."""

    message_id: str
    text: str
    position: int
    turn: int
    role: str
    date: str | None = None


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


def split_passages(text: str, limit: int = PASSAGE_CHARS) -> list[str]:
    """``text`` cut into consecutive pieces of at most about ``limit`` characters, each a verbatim slice of it.

    Cuts fall at line breaks where possible, else after a sentence end, else (a sentence longer than the limit)
    at the limit. Only the whitespace at a cut is dropped, so a recalled passage is the original words.
    """
    text = text.strip()
    if len(text) <= limit:
        return [text] if text else []
    breaks = sorted(
        {m.end() for m in _LINE_BREAK.finditer(text)} | {m.end() for m in _SENTENCE_END.finditer(text)} | {len(text)}
    )
    lines = {m.end() for m in _LINE_BREAK.finditer(text)}
    out: list[str] = []
    start = 0
    while start < len(text):
        end_limit = start + limit
        fitting = [b for b in breaks if start < b <= end_limit]
        if not fitting:
            cut = min(end_limit, len(text))
        else:
            at_line = [b for b in fitting if b in lines]
            # a line break at least half way through the piece beats a later sentence end
            cut = at_line[-1] if at_line and at_line[-1] - start >= limit // 2 else fitting[-1]
        piece = text[start:cut].strip()
        if piece:
            out.append(piece)
        start = cut
    return out


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
    return {_fold(w) for w in set(_WORD.findall(text.casefold()))}


def _fold(word: str) -> str:
    return word[:-1] if len(word) > 3 and word[-1] == "s" and word[-2] != "s" else word


def thread_token(thread: str) -> str:
    """One alphanumeric token standing for ``thread`` in the full-text index (any thread key, no collisions)."""
    return "t" + hashlib.blake2b(thread.encode("utf-8"), digest_size=12).hexdigest()


def fts_query(terms: Iterable[str]) -> str:
    """An FTS5 ``OR`` query matching any of ``terms``; every term is quoted, so no user text is FTS syntax."""
    return " OR ".join('"' + term.replace('"', '""') + '"' for term in terms)


class RecallIndex:
    """A thread-keyed FTS5 index of passages; thread-safe (one lock around the connection).

    ``path`` is ``":memory:"`` (default) or a SQLite file, created if missing. ``passage_chars`` is the passage size.
    """

    def __init__(self, path: str | Path = ":memory:", *, passage_chars: int = PASSAGE_CHARS) -> None:
        if not isinstance(passage_chars, int) or isinstance(passage_chars, bool) or passage_chars < 50:
            raise ConfigurationError(f"passage_chars must be an int of at least 50, got {passage_chars!r}")
        self.path = str(path)
        self.passage_chars = passage_chars
        self._lock = threading.Lock()
        self._df: dict[str, Counter[str]] = {}
        self._docs: Counter[str] = Counter()
        self._terms: OrderedDict[int, frozenset[str]] = OrderedDict()
        try:
            self._db = sqlite3.connect(self.path, check_same_thread=False)
            self._db.executescript(
                """
                CREATE TABLE IF NOT EXISTS recall_passage(
                    rowid INTEGER PRIMARY KEY, thread TEXT NOT NULL, message_id TEXT NOT NULL,
                    position INTEGER NOT NULL, turn INTEGER NOT NULL, role TEXT NOT NULL, date TEXT,
                    part INTEGER NOT NULL, parts INTEGER NOT NULL, body TEXT NOT NULL);
                CREATE INDEX IF NOT EXISTS recall_passage_message ON recall_passage(thread, message_id);
                CREATE VIRTUAL TABLE IF NOT EXISTS recall_fts USING fts5(
                    body, tkey, content='', tokenize='porter unicode61');
                """
            )
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
    ) -> int:
        """Index ``text`` (one message) as passages; returns how many. A message already indexed is skipped."""
        return self.add_many(thread, [Entry(message_id, text, position, turn, role, date)])

    def add_many(self, thread: str, entries: Iterable[Entry]) -> int:
        """Index several messages in one transaction; returns the passages added (indexed messages are skipped)."""
        added = 0
        with self._lock:
            db = self._db
            for entry in entries:
                pieces = split_passages(entry.text, self.passage_chars)
                if (
                    not pieces
                    or db.execute(
                        "SELECT 1 FROM recall_passage WHERE thread = ? AND message_id = ? LIMIT 1",
                        (thread, entry.message_id),
                    ).fetchone()
                ):
                    continue
                n = len(pieces)
                df = self._df.setdefault(thread, Counter())
                for part, body in enumerate(pieces):
                    df.update(normal_terms(body))
                    self._docs[thread] += 1
                    cur = db.execute(
                        "INSERT INTO recall_passage(thread, message_id, position, turn, role, date, part, parts, body) "
                        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                        (thread, entry.message_id, entry.position, entry.turn, entry.role, entry.date, part, n, body),
                    )
                    db.execute(
                        "INSERT INTO recall_fts(rowid, body, tkey) VALUES (?, ?, ?)",
                        (cur.lastrowid, body, thread_token(thread)),
                    )
                added += n
            db.commit()
        return added

    # -- reading ------------------------------------------------------------------------------------------

    def search(
        self,
        thread: str,
        query: str,
        *,
        limit: int = 8,
        exclude: Iterable[int] = (),
        min_score: float = 0.0,
        min_coverage: float = 0.0,
    ) -> list[Hit]:
        """The best ``limit`` passages of ``thread`` for ``query`` by BM25, skipping the rowids in ``exclude`` and
        hits under ``min_score`` (BM25) or ``min_coverage`` (see `Hit`)."""
        terms = query_terms(query, limit=4 * MAX_QUERY_TERMS)
        if not terms or limit <= 0:
            return []
        skip = set(exclude)
        with self._lock:
            idf = self._idf(thread, sorted(normal_terms(" ".join(terms))))
            whole = sum(idf.values()) or 1.0
            df = self._df.get(thread) or Counter()
            # terms in a fixed order (a set's order follows PYTHONHASHSEED): ties in rarity and the float sums must
            # not make two runs of the same conversation recall different passages.
            # words never indexed match nothing; without enough indexed rarity no passage can reach min_coverage
            known = sorted((t for t in idf if df[t]), key=lambda t: (df[t], t))
            if not known or sum(idf[t] for t in known) / whole < min_coverage:
                return []
            chosen: set[str] = set()
            postings = 0
            for term in known[:MAX_QUERY_TERMS]:
                if chosen and postings + df[term] > MAX_POSTINGS:
                    break
                chosen.add(term)
                postings += df[term]
            wanted = [t for t in terms if _fold(t) in chosen]
            # ranking alone, on the full-text index only; the passages are read afterwards by rowid
            ranked = self._db.execute(
                "SELECT rowid, -bm25(recall_fts, 1.0, 0.0) FROM recall_fts WHERE recall_fts MATCH ? "
                "ORDER BY bm25(recall_fts, 1.0, 0.0) LIMIT ?",
                (f"tkey:{thread_token(thread)} AND ({fts_query(wanted)})", limit + len(skip)),
            ).fetchall()
            scores = dict([(int(rowid), float(score)) for rowid, score in ranked if rowid not in skip][:limit])
            marks = ",".join("?" * len(scores))
            found_rows = self._db.execute(
                "SELECT rowid, thread, message_id, position, turn, role, date, part, parts, body "
                f"FROM recall_passage WHERE rowid IN ({marks})",
                tuple(scores),
            ).fetchall()
        rows = sorted(((*row, scores[row[0]]) for row in found_rows), key=lambda row: -row[10])
        hits = []
        for row in rows:
            if row[0] in skip or float(row[10]) < min_score:
                continue
            found = self._terms.get(row[0])
            if found is None:
                found = self._terms[row[0]] = frozenset(normal_terms(row[9]))
                if len(self._terms) > _TERMS_CACHE:
                    self._terms.popitem(last=False)
            coverage = sum(weight for term, weight in idf.items() if term in found) / whole
            hits.append(Hit(Passage(*row[:10]), float(row[10]), coverage))
        return [h for h in hits if h.coverage >= min_coverage][:limit]

    def _idf(self, thread: str, terms: Iterable[str]) -> dict[str, float]:
        """Inverse document frequency of each term among ``thread``'s passages (BM25's form, floored at 0.1)."""
        df = self._df.get(thread) or Counter()
        n = self._docs[thread]
        return {t: max(math.log((n - df[t] + 0.5) / (df[t] + 0.5) + 1.0), 0.1) for t in terms}

    def message_passages(self, thread: str, message_id: str) -> list[Passage]:
        """Every passage of one indexed message, in order (empty when it was never indexed)."""
        with self._lock:
            rows = self._db.execute(
                "SELECT rowid, thread, message_id, position, turn, role, date, part, parts, body FROM recall_passage "
                "WHERE thread = ? AND message_id = ? ORDER BY part",
                (thread, message_id),
            ).fetchall()
        return [Passage(*row) for row in rows]

    def count(self, thread: str | None = None) -> int:
        """Passages indexed (for one thread, or all)."""
        with self._lock:
            if thread is None:
                row = self._db.execute("SELECT count(*) FROM recall_passage").fetchone()
            else:
                row = self._db.execute("SELECT count(*) FROM recall_passage WHERE thread = ?", (thread,)).fetchone()
        return int(row[0])

    def size_bytes(self) -> int:
        """Bytes the database occupies (pages in use times page size): how the index grows with history."""
        with self._lock:
            pages = self._db.execute("PRAGMA page_count").fetchone()[0]
            size = self._db.execute("PRAGMA page_size").fetchone()[0]
        return int(pages) * int(size)

    def forget(self, thread: str) -> None:
        """Delete every passage of ``thread``."""
        with self._lock:
            rows: Sequence[tuple[int, str]] = self._db.execute(
                "SELECT rowid, body FROM recall_passage WHERE thread = ?", (thread,)
            ).fetchall()
            for rowid, body in rows:
                self._db.execute(
                    "INSERT INTO recall_fts(recall_fts, rowid, body, tkey) VALUES ('delete', ?, ?, ?)",
                    (rowid, body, thread_token(thread)),
                )
            self._db.execute("DELETE FROM recall_passage WHERE thread = ?", (thread,))
            self._db.commit()
            self._df.pop(thread, None)
            self._docs.pop(thread, None)


__all__ = [
    "MAX_POSTINGS",
    "MAX_QUERY_TERMS",
    "PASSAGE_CHARS",
    "Entry",
    "Hit",
    "Passage",
    "RecallIndex",
    "fts_query",
    "query_terms",
    "split_passages",
]
