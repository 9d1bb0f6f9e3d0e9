"""`ExtractiveSummarizer`: an offline, deterministic summary made of the session's own most salient sentences.

No model is involved, so it costs nothing, never fails on the network, and gives the same output for the same
input. It scores every sentence (and tool-result line) with `salience`, groups what it keeps by conversation turn
(a turn starts at each user message, whose main request heads the group), and fills the token bound greedily by
value. The bound is checked with the token counter on the final text, so the summary never exceeds
``max_tokens``. When re-summarizing, the previous summary's lines compete with a large bonus: they stay ahead of
lower-value new facts, yet a more valuable new fact can still displace an old trivial one, so the summary keeps
learning instead of freezing once full. Every previous line is its own candidate, so condensing a long summary
(no new messages, the summary as ``previous_summary``) ranks its lines the way they were ranked when first picked.

Who said a sentence does not change its worth: a port, a path, a date or a decision is kept whether the user or
the assistant stated it. Weighting speakers was tried (user statements above assistant prose in chats); it fitted
one data set (LongMemEval) and lost the assistant's facts in agent sessions and two-person chats, so the score
is the sentence's own salience only. Summaries are the fallback anyway: what they drop stays searchable by recall.
One exception reads the order of speakers, not who they are: a short reply right after the other speaker's question
is that question's answer, and is worth what asking was (`ANSWER_BONUS`).

Output format (bullets, turn facts indented under the request that started the turn)::

    - User: Please fix `load_events` in src/ingest/sink.py.
      - Called run_tests({"path": "tests/ingest"})
      - run_tests: ValueError: invalid literal for int() with base 10: ''
      - Assistant: Decision: parse through a tolerant helper.
"""

from __future__ import annotations

import heapq
import json
import logging
import re
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from .._cache import SizedCache
from .._validate import check_int, check_positive_int
from ..blocks import (
    DocumentBlock,
    ErrorBlock,
    ImageBlock,
    TextBlock,
    ToolCallBlock,
    ToolResultBlock,
    readable_text,
    tool_output_text,
)
from ..messages import Message
from .limits import DEFAULT_INPUT_LIMIT, newest_within
from .salience import clip, is_request, looks_like_code, salience, split_sentences

if TYPE_CHECKING:
    from ..tokens import TokenCounter

logger = logging.getLogger(__name__)

PREVIOUS_BONUS = 4.0
"""Added to every previous-summary line: earlier facts beat all but clearly more valuable new ones."""
TOPIC_BONUS = 2.0
"""Added to the sentence that states a turn's request, so groups keep their heading."""
MIN_SCORE = 1.0
"""Sentences scoring below this (small talk, filler) are never kept."""
ANSWER_BONUS = 2.0
"""Added to a short reply to the other speaker's question (the ``question`` detector's weight): what was asked
is worth keeping for its answer, and the answer ("Hollow Parade!") names nothing a detector sees."""
SHORT_REPLY_CHARS = 120
"""A reply of at most this many characters (without a question of its own) is all answer to the question before
it; a longer reply (an assistant's explanation) keeps its sentences' own scores."""


_SENTENCE_LIMIT = 280
_RESULT_LINE_LIMIT = 220
_CALL_ARGS_LIMIT = 140
_RESULT_HEAD = 4000
_RESULT_TAIL = 2000
_PER_RESULT = 4
_PER_MESSAGE = 8
DEFAULT_CACHE_BYTES = 16 * 1024 * 1024
"""What one summarizer keeps of its memos (each message's candidate lines, each line's tokens), by estimated bytes."""
_ENTRY_BYTES = 260
"""A memo entry's own cost beyond its text: the key, the ordered-dict node, the tuple (measured with tracemalloc)."""
_PIECE_BYTES = 380
"""A cached candidate line's cost beyond its characters: the dataclass, its float and its anchor set."""
_ANCHOR_BYTES = 80
_TOP_UP_TRIES = 6
_LINE_SUMMED = frozenset({"o200k_base", "o200k_harmony", "cl100k_base"})
"""Encodings split by cl100k's or o200k's pattern: a text's token count is the sum of its parts' counts when each
part begins at a `_LINE_START`."""
_LINE_START = re.compile(r"(?<=\n)(?=[^\s/]|[^\S\r\n]+\S)")
r"""Where, after a newline, no piece of cl100k's or o200k's split runs on: before a character that is neither
whitespace nor ``/``, or before spaces that end at one that is not whitespace. tiktoken splits a text with the
encoding's pattern and encodes each piece apart, and the pattern has no lookbehind, so a text cut there counts as
its parts counted alone. A piece that holds the newline is one of: punctuation followed by newlines (and ``/`` in
o200k), which stops at that character; whitespace ending in a newline (``\s*[\r\n]+``, tried before the other
whitespace pieces at the same start), which ends at the run's last newline, and the spaces here hold none; the
letter pieces may start with one non-letter, but never a newline. (Python's ``\s`` holds every character that
tiktoken's does, so a character that is not whitespace here is not there either.)
`test_summary_lines_count_as_the_whole_text` checks it against the encoders."""

_OPENER = re.compile(
    r"^(?:(?:oh|ok|okay|so|well|also|and|anyway|actually|btw|by the way|speaking of [^,]{1,40}|on that note|"
    r"in the meantime)[,!]?\s+)+",
    re.IGNORECASE,
)
_LABELS = frozenset({"User", "Assistant", "System"})
_BULLET = re.compile(r"^(\s*)(?:[-*•]|\d+[.)])\s+")
_NORMALIZE = re.compile(r"[\W_]+")


@dataclass(frozen=True)
class _Piece:
    """A candidate line taken from one message (cached per message)."""

    text: str
    score: float
    topic: bool
    anchors: frozenset[str] = frozenset()


@dataclass
class _Fact:
    group: int
    seq: int
    text: str
    priority: float
    topic: bool
    anchors: frozenset[str]
    cost: int = 0


def _pieces_bytes(pieces: tuple[_Piece, ...]) -> int:
    """Estimated memory of one message's cached pieces (`SizedCache` sizes)."""
    return _ENTRY_BYTES + sum(_PIECE_BYTES + len(p.text) + _ANCHOR_BYTES * len(p.anchors) for p in pieces)


def _key(text: str) -> str:
    return _NORMALIZE.sub(" ", text.lower()).strip()


def _drop_opener(sentence: str) -> str:
    """``sentence`` without leading discourse markers ("By the way, ", "Oh, and "): a summary line pays for every
    token, and these carry no fact. The rest is kept as written, with its first letter capitalized."""
    match = _OPENER.match(sentence)
    if match is None or match.end() >= len(sentence):
        return sentence
    rest = sentence[match.end() :]
    return rest[0].upper() + rest[1:]


def _said(message: Message) -> str:
    """What a plain user or assistant message says (stripped), or "" for any other message (a tool call or result,
    a system message), which neither asks nor answers in the sense of `ANSWER_BONUS`."""
    if message.role not in ("user", "assistant") or any(not isinstance(b, TextBlock) for b in message.content):
        return ""
    return "".join(b.text for b in message.content if isinstance(b, TextBlock)).strip()


def _short_answer(said: str) -> bool:
    return len(said) <= SHORT_REPLY_CHARS and "?" not in said


def _unlabelled(body: str) -> str:
    """A summary line's sentence without its ``User:`` / ``Assistant:`` label (labels carry no fact)."""
    label, sep, rest = body.partition(": ")
    return rest if sep and label in _LABELS else body


class ExtractiveSummarizer:
    """Offline `Summarizer`: keeps the most salient facts of old messages within an exact token bound.

    ``counter`` measures the bound (default: the shared exact ``o200k_base`` counter). ``instructions`` passed to
    `summarize` are accepted for protocol compatibility and ignored: there is no model to instruct. One call reads
    at most ``input_limit`` tokens: the previous summary and the newest messages that fit (see
    `windowkeeper.summarize.limits`), so its cost stays bounded however many messages a caller drops at once.
    """

    def __init__(
        self,
        counter: TokenCounter | None = None,
        *,
        input_limit: int = DEFAULT_INPUT_LIMIT,
        cache_bytes: int = DEFAULT_CACHE_BYTES,
    ) -> None:
        self._counter = counter
        self.input_limit = check_positive_int("input_limit", input_limit)
        self.cache_bytes = check_int("cache_bytes", cache_bytes, minimum=0)
        # bounded by bytes, not entries: a process that summarizes many conversations keeps them all in one
        # summarizer, and a tool result's lines cost a hundred times a chat turn's
        self._pieces: SizedCache[tuple[Hashable, str], tuple[_Piece, ...]] = SizedCache(cache_bytes * 3 // 4)
        self._costs: SizedCache[str, int] = SizedCache(cache_bytes // 4)
        self._summed_for: TokenCounter | None = None
        self._summed = False

    def __repr__(self) -> str:
        return f"ExtractiveSummarizer(counter={self.counter.name!r})"

    @property
    def counter(self) -> TokenCounter:
        if self._counter is None:
            from ..tokens import default_counter

            self._counter = default_counter()
        return self._counter

    # -- public --------------------------------------------------------------------------------------------

    async def summarize(
        self,
        messages: Sequence[Message],
        *,
        previous_summary: str | None = None,
        max_tokens: int = 600,
        instructions: str | None = None,
    ) -> str:
        return self.extract(messages, previous_summary=previous_summary, max_tokens=max_tokens)

    def extract(
        self,
        messages: Sequence[Message],
        *,
        previous_summary: str | None = None,
        max_tokens: int = 600,
    ) -> str:
        """The same summary as `summarize`, computed here for synchronous callers (it never does I/O).

        A name of its own, not a twin of `summarize`: the `Summarizer` protocol's ``summarize`` is a coroutine,
        and the package's one rule keeps a plain twin name synchronous (docs/architecture.md, "Sync and async")."""
        check_positive_int("max_tokens", max_tokens)
        room = self.input_limit - (self._text_tokens(previous_summary) if previous_summary else 0)
        messages = newest_within(messages, room, self.counter.count_message)
        facts, topics = self._collect(messages, previous_summary)
        if not facts:
            if not messages:
                return ""
            note = f"- {len(messages)} earlier messages held no facts worth keeping (small talk)."
            return note if self.counter.count_text(note) <= max_tokens else ""
        for fact in facts:
            fact.cost = self._cost(("- " if fact.topic else "  - ") + fact.text) + 1
        chosen = self._select(facts, max_tokens)
        lines = self._render_lines(chosen, topics)
        while chosen and self._lines_tokens(lines) > max_tokens:
            chosen.remove(min(chosen, key=lambda f: (f.priority, -f.seq)))
            lines = self._render_lines(chosen, topics)
        lines = self._top_up(facts, chosen, topics, lines, max_tokens)
        if not chosen:
            return self._squeeze(max(facts, key=lambda f: (f.priority, -f.seq)), max_tokens)
        return "\n".join(lines)

    def _top_up(
        self, facts: list[_Fact], chosen: list[_Fact], topics: dict[int, int], lines: list[str], max_tokens: int
    ) -> list[str]:
        """Try the best left-over facts against the exact count: per-line costs slightly overestimate (a newline
        can merge with the next line's indent), so a fact the estimate rejected may still fit."""
        taken = {f.seq for f in chosen}
        rest = sorted((f for f in facts if f.seq not in taken), key=lambda f: (-f.priority, f.seq))
        for fact in rest[:_TOP_UP_TRIES]:
            trial = self._render_lines([*chosen, fact], topics)
            if self._lines_tokens(trial) <= max_tokens:
                chosen.append(fact)
                lines = trial
        return lines

    def _lines_tokens(self, lines: list[str]) -> int:
        """``count_text("\\n".join(lines))`` for lines that `_render_lines` made.

        A summary is counted whole up to eight times (the bound, then each top-up trial), each time with all but
        one of the lines of the count before; re-encoding it was about 15% of the summarizer's time in the
        session bench (`bench/adapter_overhead.py`). With a counter that `_line_summed` vouches for, the count is
        the sum of each line's count with its newline and the last line's without (every line starts with ``-``
        or two spaces and a ``-``, so each newline ends a piece: `_LINE_START`), and the lines' counts are
        memoized (`_cost`, keyed by text).
        """
        if not lines:
            return 0
        if not self._line_summed:
            return self.counter.count_text("\n".join(lines))
        return sum(self._cost(line + "\n") for line in lines[:-1]) + self._cost(lines[-1])

    def _text_tokens(self, text: str) -> int:
        """``count_text(text)``, summed over the parts of ``text`` that begin where `_LINE_START` finds a line
        start, each part's count memoized, with a counter that `_line_summed` vouches for.

        For the previous summary, counted whole on every call that condenses it (about 6,000 characters in the
        session bench): its lines are this summarizer's own, counted when it rendered them."""
        if not self._line_summed:
            return self.counter.count_text(text)
        return sum(self._cost(part) for part in _LINE_START.split(text) if part)

    @property
    def _line_summed(self) -> bool:
        """Whether the counter is a tiktoken one of an encoding in `_LINE_SUMMED` (a subclass may count its own
        way, and other tokenizers' pieces may run past a newline)."""
        counter = self.counter
        if counter is not self._summed_for:
            from ..tokenizing.counters import TiktokenCounter

            self._summed = type(counter) is TiktokenCounter and counter.encoding_name in _LINE_SUMMED
            self._summed_for = counter
        return self._summed

    # -- candidates ----------------------------------------------------------------------------------------

    def _collect(self, messages: Sequence[Message], previous: str | None) -> tuple[list[_Fact], dict[int, int]]:
        facts: list[_Fact] = []
        seen: set[str] = set()
        group = -1
        seq = 0

        def add(text: str, priority: float, topic: bool, anchors: frozenset[str]) -> None:
            nonlocal seq
            key = _key(text)
            if not key or key in seen:
                return
            seen.add(key)
            facts.append(_Fact(group=group, seq=seq, text=text, priority=priority, topic=topic, anchors=anchors))
            seq += 1

        for line in (previous or "").splitlines():
            if not line.strip():
                continue
            bullet = _BULLET.match(line)
            indented = bool(bullet and bullet.group(1))
            body = line[bullet.end() :].strip() if bullet else line.strip()
            if not indented or group < 0:
                group += 1
            sentences = [body] if bullet else split_sentences(body)
            for j, sentence in enumerate(sentences):
                if j and not bullet:
                    group += 1
                found = salience(_unlabelled(sentence))
                add(sentence, found.score + PREVIOUS_BONUS + 1.0, not indented, found.anchors)

        total = max(1, len(messages))
        asked_by: str | None = None  # the role of the message before, when it ended with a question
        for position, message in enumerate(messages):
            if message.role == "user" or group < 0:
                group += 1
            recency = 0.5 * position / total
            said = _said(message)
            answer = (
                ANSWER_BONUS
                if asked_by is not None and asked_by != message.role and said and _short_answer(said)
                else 0.0
            )
            asked_by = message.role if said.endswith("?") else None
            for piece in self._message_pieces(message):
                value = piece.score
                if value < MIN_SCORE and not piece.topic:
                    continue
                bonus = recency + (TOPIC_BONUS if piece.topic else answer)
                add(piece.text, value + bonus, piece.topic, piece.anchors)

        topics: dict[int, int] = {}
        for fact in facts:
            if fact.topic and fact.group not in topics:
                topics[fact.group] = fact.seq
        for fact in facts:
            fact.topic = topics.get(fact.group) == fact.seq
        return facts, topics

    def _message_pieces(self, message: Message) -> tuple[_Piece, ...]:
        return self._pieces.memo(
            (message.message_id, message.fingerprint()), lambda: tuple(self._extract(message)), _pieces_bytes
        )

    def _extract(self, message: Message) -> list[_Piece]:
        role = message.role
        out: list[_Piece] = []
        texts: list[str] = []
        for block in message.content:
            if isinstance(block, TextBlock):
                texts.append(readable_text(block.text))
            elif isinstance(block, DocumentBlock) and (block.excerpt or block.text):
                texts.append(block.excerpt or block.text or "")
            elif isinstance(block, ImageBlock) and block.alt_text:
                texts.append(f"[image] {block.alt_text}")
            elif isinstance(block, ErrorBlock):
                out.append(
                    _Piece(f"Error: {clip(block.error, _SENTENCE_LIMIT)}", 3.0 + salience(block.error).score, False)
                )
            elif isinstance(block, ToolResultBlock):
                out.extend(self._result_pieces(block))
        prose = self._prose_pieces("\n".join(texts), role)
        calls = [b for b in message.content if isinstance(b, ToolCallBlock)] or message.tool_call_blocks()
        for call in calls:
            args = json.dumps(call.args, ensure_ascii=False, sort_keys=True)
            if len(args) > _CALL_ARGS_LIMIT:
                args = args[:_CALL_ARGS_LIMIT] + "…"
            found = salience(args)
            out.append(_Piece(f"Called {call.name}({args})", 1.0 + 0.5 * found.score, False, found.anchors))
        best = sorted(prose + out, key=lambda p: -p.score)[:_PER_MESSAGE]
        keep = set(map(id, best))
        return [p for p in (*prose, *out) if id(p) in keep]

    def _prose_pieces(self, text: str, role: str) -> list[_Piece]:
        """Salient sentences of prose; a user message's request sentence is marked as its turn's topic."""
        if not text.strip():
            return []
        label = {"user": "User", "assistant": "Assistant", "system": "System"}.get(role, role.capitalize())
        sentences = split_sentences(text)
        found = [salience(sentence) for sentence in sentences]
        topic_index: int | None = None
        if role == "user" and sentences:
            requests = [i for i, sentence in enumerate(sentences) if is_request(sentence)]
            topic_index = requests[0] if requests else max(range(len(found)), key=lambda i: (found[i].score, -i))
            if found[topic_index].score < MIN_SCORE:
                topic_index = None  # small talk ("thanks, sounds good") heads no turn
        out: list[_Piece] = []
        for i, sentence in enumerate(sentences):
            is_topic = i == topic_index
            if found[i].score < MIN_SCORE and not is_topic:
                continue
            text_piece = f"{label}: {clip(_drop_opener(sentence), _SENTENCE_LIMIT)}"
            out.append(_Piece(text_piece, found[i].score, is_topic, found[i].anchors))
        return out

    def _result_pieces(self, block: ToolResultBlock) -> list[_Piece]:
        output = tool_output_text(block.output)
        if len(output) > _RESULT_HEAD + _RESULT_TAIL:
            output = output[:_RESULT_HEAD] + "\n" + output[-_RESULT_TAIL:]
        label = block.name or block.call_id
        failed = block.status == "error"
        lines: dict[str, tuple[float, frozenset[str]]] = {}
        for raw in output.splitlines() or [output]:
            line = raw.strip()
            if len(line) < 4 or line in lines:
                continue
            if looks_like_code(raw):
                found = salience(line, ("error",))
                if not found.kinds:
                    continue
                value = 0.3 * found.score
            else:
                found = salience(line)
                value = 0.6 * found.score
            if "error" in found.kinds:
                value += 1.0
            if value >= MIN_SCORE:
                lines[line] = (value, found.anchors)
        best = sorted(lines.items(), key=lambda kv: -kv[1][0])[:_PER_RESULT]
        chosen = {line for line, _ in best}
        out = [
            _Piece(f"{label}{' error' if failed else ''}: {clip(line, _RESULT_LINE_LIMIT)}", value, False, anchors)
            for line, (value, anchors) in lines.items()
            if line in chosen
        ]
        if failed and not out:
            out.append(_Piece(f"{label} error: {clip(' '.join(output.split()), _RESULT_LINE_LIMIT)}", 3.0, False))
        return out

    # -- selection and rendering ---------------------------------------------------------------------------

    def _cost(self, text: str) -> int:
        return self._costs.memo(text, lambda: self.counter.count_text(text), lambda _: _ENTRY_BYTES + len(text))

    @staticmethod
    def _select(facts: list[_Fact], max_tokens: int) -> list[_Fact]:
        """Greedy by value with diminishing returns: a fact whose anchors (paths, ids, errors, quantities) are
        already covered by chosen facts is worth less, so the budget buys many different facts instead of the
        same error reported by the user, the test log and the assistant. Lazy re-scoring keeps it near-linear."""
        covered: set[str] = set()

        def worth(fact: _Fact) -> float:
            if not fact.anchors or fact.topic:
                return fact.priority
            novel = sum(1 for a in fact.anchors if a not in covered) / len(fact.anchors)
            return fact.priority * (0.3 + 0.7 * novel)

        chosen_words: list[frozenset[str]] = []

        def repeats(fact: _Fact) -> bool:
            words = frozenset(_key(fact.text).split()[1:])
            if len(words) < 4 or fact.anchors - covered:
                return False
            return any(len(words & other) >= 0.8 * max(len(words), len(other)) for other in chosen_words)

        heap = [(-f.priority, f.seq, f) for f in facts]
        heapq.heapify(heap)
        budget = max_tokens + 1  # every line pays for a newline except the last
        chosen: list[_Fact] = []
        while heap:
            stored, seq, fact = heapq.heappop(heap)
            if fact.cost > budget:
                continue
            current = worth(fact)
            if heap and current < -heap[0][0] and current < -stored:
                heapq.heappush(heap, (-current, seq, fact))
                continue
            if repeats(fact):
                continue
            chosen.append(fact)
            chosen_words.append(frozenset(_key(fact.text).split()[1:]))
            covered.update(fact.anchors)
            budget -= fact.cost
        return chosen

    @staticmethod
    def _render_lines(chosen: list[_Fact], topics: dict[int, int]) -> list[str]:
        """The summary's lines (joined by newlines, the summary): each starts with ``-`` or, under its turn's
        heading, with two spaces and a ``-`` (`_lines_tokens` counts them on that)."""
        present = {f.seq for f in chosen}
        lines: list[str] = []
        for fact in sorted(chosen, key=lambda f: f.seq):
            headed = fact.group in topics and topics[fact.group] in present
            indent = "  " if headed and not fact.topic else ""
            lines.append(f"{indent}- {fact.text}")
        return lines

    def _squeeze(self, fact: _Fact, max_tokens: int) -> str:
        """The single best fact cut down to fit a bound too small for any whole line."""
        low, high = 0, len(fact.text)
        best = ""
        while low <= high:
            middle = (low + high) // 2
            candidate = f"- {fact.text[:middle].rstrip()}…"
            if self.counter.count_text(candidate) <= max_tokens:
                best, low = candidate, middle + 1
            else:
                high = middle - 1
        return best
