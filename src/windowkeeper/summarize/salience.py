"""What makes a sentence worth keeping: regex detectors for the facts an agent session depends on.

The extractive summarizer has no model, so "important" has to be recognizable on the surface: file paths, URLs,
numbers with units, dates and times, identifiers (hashes, ids, snake_case / CamelCase symbols), error messages,
decisions, open questions, names and things the user asked to remember. Each detector has a weight; a sentence
scores the sum of the weights of the kinds it contains (plus a little for repeats), so a line such as
``ValueError in src/ingest/sink.py at 10:42`` outranks small talk by a wide margin.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import lru_cache

_UNITS = (
    r"%|ms|µs|us|ns|s|secs?|seconds?|mins?|minutes?|h|hrs?|hours?|days?|weeks?|months?|years?|"
    r"[KMGTP]i?B|bytes?|[kmgt]b|px|km|m|cm|mm|kg|g|mg|lbs?|°[CF]|USD|EUR|GBP|tokens?|rows?|requests?|req/s|rps|qps|"
    r"users?|items?|records?|files?|lines?|tests?|errors?|retries|attempts?|workers?|cores?|threads?|x"
)

_COUNT_WORDS = (
    r"one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|fifteen|twenty|thirty|forty|fifty|hundred|"
    r"a few|a couple of|a couple|several|half an?"
)
_SPELLED_UNITS = (
    r"seconds?|minutes?|hours?|days?|nights?|weeks?|months?|years?|times|miles?|kilometers?|pounds?|dollars?"
)
_EVENT_VERBS = (
    r"got|bought|went|took|spent|saw|made|ran|met|began|did|won|lost|sold|paid|built|wrote|read|found|gave|left|"
    r"brought|drove|flew|ate|drank|set up|moved|joined|started|finished|tried|visited|watched|booked|ordered"
)
"""First-person events ("I just got", "we moved"): in a chat, what the user did is what later turns ask about."""

_QUANTITY_WRITTEN = rf"(?<![\w.])[$€£]?\d+(?:[.,]\d+)*\s?(?:{_UNITS})(?![\w])|[$€£]\d+(?:[.,]\d+)*"
"""Quantities in digits (``12 ms``, ``$40``), matched as written: ``MB`` and ``mb`` are different units."""
_QUANTITY_SPOKEN = rf"\b(?:{_COUNT_WORDS}) (?:{_SPELLED_UNITS})\b"
"""Quantities in words (``two weeks``, ``a couple of days``), matched in any case."""

_IDENTIFIER_ALTERNATIVES: tuple[tuple[str, str], ...] = (
    (r"`[^`\n]{2,80}`", "`"),
    (r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b", "-"),
    (r"\b(?=[0-9a-f]*\d)(?=[0-9a-f]*[a-f])[0-9a-f]{7,40}\b", ""),
    (r"\b[A-Z][A-Z0-9]+-\d+\b", "-"),
    (r"#\d+\b", "#"),
    (r"\b[a-z][a-z0-9]*(?:_[a-z0-9]+)+\b", "_"),
    (r"\b[A-Z][a-z0-9]+(?:[A-Z][a-z0-9]*)+\b", ""),
    (r"\b\w+(?:\.\w+)*\(\)", "()"),
)
"""The ``identifier`` detector's alternatives (code in backticks, uuids, hashes, ticket keys, ``#12``, snake_case,
CamelCase, calls), each with a string every match of it holds ("" for none): `_pruned` leaves an alternative out
of the scan of a line that lacks its string."""

DETECTORS: dict[str, re.Pattern[str]] = {
    "url": re.compile(r"\bhttps?://[^\s)>\]\"'`]+"),
    "path": re.compile(
        r"(?<![\w/.:])(?:~|\.{1,2})?/(?:[\w.\-]+/)*[\w.\-]+"
        r"|\b(?:[\w.\-]+/)+[\w.\-]+\.\w{1,6}\b"
        r"|\b[\w\-]+\.(?:py|pyi|js|mjs|ts|tsx|jsx|json|ya?ml|toml|md|rst|txt|csv|tsv|log|sql|sh|go|rs|java|kt|c|h|cc|"
        r"cpp|hpp|rb|php|html|css|ini|cfg|conf|lock|env|ipynb|parquet|xml|proto)\b",
    ),
    "quantity": re.compile(rf"{_QUANTITY_WRITTEN}|(?i:{_QUANTITY_SPOKEN})"),
    "datetime": re.compile(
        r"\b\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2})?)?\b"
        r"|\b\d{1,2}:\d{2}(?::\d{2})?\s?(?:[ap]\.?m\.?)?(?!\d)"
        r"|\b(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Sept|Oct|Nov|Dec)[a-z]*\.?\s+\d{1,2}(?:st|nd|rd|th)?(?:,?\s+\d{4})?\b"
        r"|\b\d{1,2}(?:st|nd|rd|th)?\s+(?:January|February|March|April|May|June|July|August|September|October|"
        r"November|December)\b"
        r"|\b(?:Mon|Tues|Wednes|Thurs|Fri|Satur|Sun)day\b"
        r"|\b(?:today|tomorrow|yesterday|tonight|deadline)\b"
        r"|\b(?:next|last|this|past) (?:week|weekend|month|year|night|summer|winter|spring|fall|autumn)\b"
        rf"|\b(?:a|an|{_COUNT_WORDS}|\d+) (?:days?|weeks?|months?|years?) ago\b",
        re.IGNORECASE,
    ),
    "setting": re.compile(
        r"\b(?:port|version|release|build|pid|uid|gid|id|code|status|timeout|ttl|limit|quota|size|max|min|"
        r"threshold|level|rate|replicas?|shards?|partitions?|workers?|tier|room|gate|flight|floor|seat|suite|"
        r"extension|ext|number|no\.|node|host|region|zone|table|column|branch|tag|ticket|issue|pr|order|account)"
        r"\s*(?:is|was|=|:|#|of|to|at)?\s*v?\d(?:[\w.:\-]*\w)?"
        r"|\b(?:\d{1,3}\.){3}\d{1,3}(?::\d{2,5})?\b|\b[\w\-]+(?:\.[\w\-]+)*:\d{2,5}\b",
        re.IGNORECASE,
    ),
    "identifier": re.compile("|".join(source for source, _ in _IDENTIFIER_ALTERNATIVES)),
    "error": re.compile(
        r"\b\w*(?:Error|Exception)\b|\bTraceback\b"
        r"|\b(?:error|errors|failed|failing|failure|fatal|panic|denied|refused|timed? ?out|not found|cannot|can't|"
        r"unable to|crash(?:ed|es)?|broken|invalid|exit (?:code|status) [1-9]\d*|bug)\b",
    ),
    "decision": re.compile(
        r"\b(?:decided|decide|decision|chose|choose|chosen|agreed|agree|let's|let us|we'll|settled on|go with|"
        r"opt(?:ed)? for|switch(?:ed)? to|approach|conclusion|instead of|plan(?:ned)? to)\b",
        re.IGNORECASE,
    ),
    "intent": re.compile(r"\b(?:will|i'll|we will|going to|should|must)\b", re.IGNORECASE),
    "constraint": re.compile(
        r"\b(?:don't|do not|must not|never|always|only|at most|at least|no more than|stay under|under \d|within|"
        r"compatible|limit|slo|sla|budget|requirement|constraint|deadline|no new)\b",
        re.IGNORECASE,
    ),
    "question": re.compile(
        r"\?\s*$|\b(?:open question|tbd|todo|unclear|not sure|unknown whether|need to (?:check|confirm|decide))\b",
        re.IGNORECASE,
    ),
    "personal": re.compile(
        r"\b(?:remember|my name is|call me|i am|i'm|i prefer|i like|i don't like|my (?:\w+ ){1,3}(?:is|are|was|were)|"
        r"favou?rite)\b",
        re.IGNORECASE,
    ),
    "experience": re.compile(
        r"\b(?:I|I've|I have|I had|[Ww]e|[Ww]e've|[Ww]e have|[Ww]e had)\s+"
        r"(?:just |recently |finally |already |actually |also |even |first |once )?"
        rf"(?:{_EVENT_VERBS}|(?!need|feed|seed|speed)[a-z]{{2,}}ed)\b"
        r"|\b(?:I've|I have|[Ww]e've|[Ww]e have) been [a-z]{2,}ing\b"
        r"|\b(?:took|cost|gave|sent|told|showed|helped|taught) (?:me|us)\b",
    ),
    "name": re.compile(
        r"(?<=\s)(?!(?:I|The|This|That|These|Those|It|We|You|He|She|They|A|An)\b)[A-Z][a-z]{1,}\b"
        r"|\b[A-Z]{2,6}s?\b(?<!\bOK)"
    ),
    "number": re.compile(r"(?<![\w.])\d+(?:[.,]\d+)?(?![\w])"),
}

WEIGHTS: dict[str, float] = {
    "url": 3.0,
    "path": 3.0,
    "error": 3.0,
    "decision": 3.0,
    "personal": 3.0,
    "experience": 3.0,
    "setting": 2.5,
    "quantity": 2.5,
    "datetime": 2.5,
    "constraint": 2.5,
    "identifier": 2.0,
    "question": 2.0,
    "name": 1.5,
    "intent": 1.0,
    "number": 1.0,
}

ANCHOR_KINDS: tuple[str, ...] = ("url", "path", "setting", "quantity", "datetime", "identifier")
"""Kinds whose matched strings identify a fact; two lines with the same anchors say much the same thing."""

_ZERO_ERRORS = re.compile(r"\b(?:errors?|failures?|failed)\s*[:=]?\s*0\b", re.IGNORECASE)
"""``errors: 0`` reports the absence of an error; it must not score as one."""
_ERROR_SIGNATURE = re.compile(r"\b\w*(?:Error|Exception)\b(?::[^\n]{0,80})?")
_REQUEST = re.compile(
    r"\b(?:please|can you|could you|would you|i need|we need|i want|help me|fix|implement|add|create|write|build|"
    r"find|investigate|why|how|what)\b",
    re.IGNORECASE,
)

_CODE_LINE = re.compile(
    r"^\s*(?:\d+\s+)?(?:def |class |import |from \S+ import |return\b|if .*:$|for .*:$|elif |else:|try:|except|"
    r"@\w+|[#/]{1,2}\s|[\w.\[\]'\"]+\s*[+\-*/]?=\s|[{}()\[\],;]+$)",
)


@dataclass(frozen=True, slots=True)
class Salience:
    """How valuable a piece of text is, which kinds of facts it contains, and the strings that anchor them."""

    score: float
    kinds: frozenset[str]
    anchors: frozenset[str]


_NOTHING = Salience(0.0, frozenset(), frozenset())


def _any_of(words: str) -> Callable[[str], bool]:
    """Whether a text holds one of ``words`` (``|``-separated): one C-level substring test each, no Python loop."""
    pieces = tuple(words.split("|"))
    return lambda text: any(map(text.__contains__, pieces))


def _written(words: str) -> Callable[[str, str], bool]:
    """A guard: the text as written holds one of ``words`` (for a detector without ``re.IGNORECASE``). One
    function call, not two: every line of a session runs eight guards."""
    pieces = tuple(words.split("|"))
    return lambda text, lower: any(map(text.__contains__, pieces))


def _folded(words: str) -> Callable[[str, str], bool]:
    """A guard: the lower-cased text holds one of ``words`` (lower-case; for a detector with ``re.IGNORECASE``)."""
    pieces = tuple(words.split("|"))
    return lambda text, lower: any(map(lower.__contains__, pieces))


_DIGIT_DASH = re.compile(r"\d-\d")
_DIGIT_COLON = re.compile(r"\d:\d")
_MONTHS = _any_of("jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec")
_DATE_WORDS = _any_of("day|tomorrow|tonight|deadline|next |last |this |past | ago")
_QUESTION_WORDS = _any_of("open question|tbd|todo|unclear|not sure|unknown whether|need to ")


def _may_date(text: str, lower: str) -> bool:
    """Every alternative of the ``datetime`` detector holds one of these: a date's ``digit-digit``, a time's
    ``digit:digit``, a month's first three letters (the full names hold them too), ``day`` (weekdays, today,
    yesterday), the other date words, or the literal space of ``next week`` and ``3 days ago``."""
    return (
        ("-" in text and _DIGIT_DASH.search(text) is not None)
        or (":" in text and _DIGIT_COLON.search(text) is not None)
        or _MONTHS(lower)
        or _DATE_WORDS(lower)
    )


_GUARD_TESTS: dict[str, Callable[[str, str], bool]] = {
    "url": _written("://"),
    "datetime": _may_date,
    "error": _written(
        "Error|Exception|Traceback|error|fail|fatal|panic|denied|refused|time|not found|cannot|can't|unable to|crash|"
        "broken|invalid|exit |bug"
    ),
    "decision": _folded(
        "decide|decision|chose|choose|agree|let's|let us|we'll|settled on|go with|opt|switch|approach|conclusion|"
        "instead of|plan"
    ),
    "intent": _folded("will|i'll|going to|should|must"),
    "constraint": _folded(
        "don't|do not|must not|never|always|only|at most|at least|no more than|under|within|compatible|limit|slo|sla|"
        "budget|requirement|constraint|deadline|no new"
    ),
    "question": lambda text, lower: "?" in text or _QUESTION_WORDS(lower),
    "personal": _folded("remember|my |call me|i am|i'm|i prefer|i like|i don't|favo"),
    "experience": _written("I|we|We| me| us"),
    # both alternatives begin with a capital; a third of tool-output lines hold none
    "name": lambda text, lower: text != lower,
}
_GUARDS: dict[str, tuple[re.Pattern[str], Callable[[str, str], bool]]] = {
    kind: (DETECTORS[kind], test) for kind, test in _GUARD_TESTS.items()
}
"""Necessary conditions of the detectors that rarely match (most lines of an agent session hold no date, decision
or question), tested before their regular expression scans the line: each names a piece of text that every match
of every alternative contains (for ``name``, a capital letter), so a line without any of them gets the same empty
result without the scan.
Only for ASCII text: there ``str.lower`` is exactly the case-insensitive matching of ``re.IGNORECASE`` (which
also pairs some non-ASCII letters with ASCII ones, such as the long s and the Kelvin sign). Each is kept with the
pattern it was written for and applies only while `DETECTORS` still holds that pattern."""


_CASE_FREE_SOURCE = re.compile(
    r"(?:\\[bdswnt]|\\[^0-9A-Za-z]|\(\?(?:[:=!]|<[=!])|\((?!\?)"
    r"|\[\^?(?:\\[bdswnt]|\\[^0-9A-Za-z]|[a-z]-[a-z]|[A-Z]-[A-Z]|[0-9]-[0-9]|[^\\\]\[\-]|-(?=\]))+\]"
    r"|[^\\(\[])*"
)
r"""The regular-expression sources that mean the same after ``str.lower``: escapes only of punctuation or of
``b d s w n t`` (``\D``, ``\S``, ``\W``, ``\B``, ``\A``, ``\Z`` would change meaning, and hex, octal or named
escapes could spell a capital), groups only ``(?:``, lookarounds and plain ones (an inline flag such as ``(?-i:``
or a ``(?P<Name>`` would change), character ranges only between two lower-case letters, two capitals or two
digits (``[A-z]`` or ``[0-Z]`` would change). A source that passes and holds only ASCII characters, compiled
without ``re.IGNORECASE`` and lower-cased, matches in lower-cased ASCII text exactly the spans that the original
matches with ``re.IGNORECASE`` in the text as written."""


def _lower_twin(source: str, flags: int) -> re.Pattern[str]:
    """``source`` (written for ``re.IGNORECASE``) compiled to scan the lower-cased text instead.

    A case-insensitive scan compares every character case-folded; scanning the lower-cased text (which `_score`
    has computed anyway) with a lower-cased pattern does the same work with plain comparisons, two to three times
    faster. Raises when ``source`` is not one `_CASE_FREE_SOURCE` vouches for: the twin would match other strings.
    """
    if not (flags & re.IGNORECASE and source.isascii() and _CASE_FREE_SOURCE.fullmatch(source)):
        raise RuntimeError(f"no lower-case twin for {source[:60]!r}…: write it as _CASE_FREE_SOURCE allows")
    return re.compile(source.lower(), flags & ~re.IGNORECASE)


def _scan_lower(twin: re.Pattern[str]) -> Callable[[str, str], list[str]]:
    """A twin's scan: it reads the lower-cased text, never the text as written."""
    return lambda text, lower: twin.findall(lower)


def _scan_quantity() -> Callable[[str, str], list[str]]:
    """The ``quantity`` detector as two scans: digits and units as written, count words in the lower-cased text.

    Its case-insensitive alternative is scanned on its own, in the lower-cased text, instead of being tried
    case-folded at every position of the one pattern: the two scans take about half the time of the one (36 ->
    17 ms over 3,000 lines of the adapter bench's session). They find the same matches as the one pattern
    because no match of one kind can begin inside a match of the other: a
    written quantity begins with a digit or a currency sign, which a spoken one (letters and spaces) never holds;
    a spoken one begins with a count word at a word boundary, and the only word inside a written quantity that
    starts at a word boundary is its unit (or the ``s``, ``C``, ``F`` after ``req/`` and ``°``), which is never a
    count word and is followed by no letter. So the count and the lower-cased strings of the hits are those of
    the one scan (their order differs, which `_score` never looks at)."""
    spoken = _lower_twin(_QUANTITY_SPOKEN, re.IGNORECASE)
    written = re.compile(_QUANTITY_WRITTEN)
    pattern = DETECTORS["quantity"]
    first_words = {alternative.split()[0].rstrip("?") for alternative in _COUNT_WORDS.split("|")}
    if (
        pattern.pattern != f"{_QUANTITY_WRITTEN}|(?i:{_QUANTITY_SPOKEN})"
        or pattern.flags & re.IGNORECASE
        or not re.fullmatch(r"(?:[a-z ?|)]|\(\?:|\\b)*", _QUANTITY_SPOKEN)
        or any(re.fullmatch(_UNITS, word, re.IGNORECASE) for word in first_words)
    ):
        raise RuntimeError("the quantity detector no longer splits into a written and a spoken scan")
    return lambda text, lower: written.findall(text) + spoken.findall(lower)


def _pruned(alternatives: tuple[tuple[str, str], ...], flags: int) -> Callable[[str, str], list[str]]:
    """A scan with only those of ``alternatives`` (the detector is their ``"|".join``) that a line can match.

    An alternative whose needed string a line lacks matches nowhere in it; at every position the engine takes the
    first alternative that matches, and that is never this one, so leaving it out changes no hit. What is left
    scans faster: ``identifier``'s call alternative (``\\w+`` up to a ``()``) is most of that detector's cost,
    and under 1% of tool-output lines hold a ``()``. One compiled pattern per combination of present strings.
    """
    needs = tuple(dict.fromkeys(need for _, need in alternatives if need))
    variants: dict[tuple[bool, ...], re.Pattern[str] | None] = {}

    def scan(text: str, lower: str) -> list[str]:
        present = tuple(map(text.__contains__, needs))
        if present in variants:
            pattern = variants[present]
        else:
            held = {need for need, here in zip(needs, present, strict=True) if here}
            kept = [source for source, need in alternatives if not need or need in held]
            pattern = variants[present] = re.compile("|".join(kept), flags) if kept else None
        return pattern.findall(text) if pattern is not None else []

    return scan


_TWINS: dict[str, tuple[re.Pattern[str], Callable[[str, str], list[str]]]] = {
    **{
        kind: (pattern, _scan_lower(_lower_twin(pattern.pattern, pattern.flags)))
        for kind, pattern in DETECTORS.items()
        if pattern.flags & re.IGNORECASE
    },
    "quantity": (DETECTORS["quantity"], _scan_quantity()),
    "identifier": (DETECTORS["identifier"], _pruned(_IDENTIFIER_ALTERNATIVES, DETECTORS["identifier"].flags)),
}
"""Faster scans of ASCII text with the same hits, each given the text and its lower-cased form (the detectors
are about half of what the default manager spends per turn, one scan of every new line each): the
case-insensitive detectors scan the lower-cased text with a lower-cased pattern (`_lower_twin`), ``quantity``
scans twice (`_scan_quantity`), ``identifier`` leaves out the alternatives a line cannot match (`_pruned`). Their
hits may differ in case and order from the original scan's, never in number or lower-cased text, which is all
`_score` uses. Like `_GUARDS`, each applies only while `DETECTORS` still holds its pattern."""


MEMO_ENTRIES = 8192
"""Scores kept for the texts seen last: agents read the same file and run the same tests again, so more than half
of the tool-result lines of an agent session (57% in the generated sessions, 63% in tau-bench's) repeat one seen
before, and every detector is a scan of the whole line."""
MEMO_MAX_CHARS = 1000
"""Longer texts are scored without the memo, so it stays small (about 1.2 kB an entry for a tool-output line,
some 10 MB when full of such lines)."""


def salience(text: str, kinds: Iterable[str] | None = None) -> Salience:
    """Score ``text`` by the fact kinds found in it; 0.0 means nothing worth keeping was detected.

    The strongest kind counts fully and every further kind at half weight, so a line stuffed with identifiers
    does not automatically beat a plain decision. ``kinds`` restricts the detectors that run (for speed). The
    score depends on nothing but its arguments, so recent ones are memoized (`MEMO_ENTRIES`).
    """
    chosen = None if kinds is None else tuple(kinds)
    if len(text) > MEMO_MAX_CHARS:
        return _score(text, chosen)
    return _memo_score(text, chosen)


def _score(text: str, kinds: tuple[str, ...] | None) -> Salience:
    if "0" in text and _ZERO_ERRORS.search(text):  # every match ends in a 0; most lines hold none
        text = _ZERO_ERRORS.sub(" ", text)
    weights: list[float] = []
    found: list[str] = []
    anchors: set[str] = set()
    extra = 0
    plain = text.isascii()
    lower = text.lower() if plain else text
    guards, twins = (_GUARDS, _TWINS) if plain else (_NO_GUARDS, _NO_TWINS)
    for kind in kinds if kinds is not None else DETECTORS:
        pattern = DETECTORS[kind]
        guard = guards.get(kind)
        if guard is not None and guard[0] is pattern and not guard[1](text, lower):
            continue
        twin = twins.get(kind)
        hits = twin[1](text, lower) if twin is not None and twin[0] is pattern else pattern.findall(text)
        if not hits:
            continue
        found.append(kind)
        weights.append(WEIGHTS[kind])
        extra += min(len(hits) - 1, 2)
        if kind in ANCHOR_KINDS:
            anchors.update([h.strip("`").lower() for h in hits])
    if not found:
        return _NOTHING
    if "error" in found:
        anchors.update(m.lower() for m in _ERROR_SIGNATURE.findall(text))
    weights.sort(reverse=True)
    score = weights[0] + 0.5 * sum(weights[1:]) + 0.2 * min(extra, 5)
    # a few dozen distinct sets in practice: the memoized scores share them
    found_kinds = frozenset(found)
    if len(_KIND_SETS) < _MAX_KIND_SETS:
        found_kinds = _KIND_SETS.setdefault(found_kinds, found_kinds)
    else:
        found_kinds = _KIND_SETS.get(found_kinds, found_kinds)
    return Salience(score=score, kinds=found_kinds, anchors=frozenset(anchors) if anchors else _NO_ANCHORS)


_NO_GUARDS: dict[str, tuple[re.Pattern[str], Callable[[str, str], bool]]] = {}
_NO_TWINS: dict[str, tuple[re.Pattern[str], Callable[[str, str], list[str]]]] = {}
"""Non-ASCII text is scanned as written by every detector (see `_GUARDS`)."""
_MAX_KIND_SETS = 1024
_KIND_SETS: dict[frozenset[str], frozenset[str]] = {}
_NO_ANCHORS: frozenset[str] = frozenset()


_memo_score = lru_cache(maxsize=MEMO_ENTRIES)(_score)


def is_request(sentence: str) -> bool:
    """Whether a user sentence asks for something (a turn's topic) rather than adding detail."""
    return bool(_REQUEST.search(sentence))


def looks_like_code(line: str) -> bool:
    """True for source lines (numbered file listings included): mostly identifiers, rarely facts."""
    return bool(_CODE_LINE.match(line))


_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[\"'(\[`A-Z0-9])")


def split_sentences(text: str) -> list[str]:
    """Sentences of prose: split at line breaks and at ``. ``/``! ``/``? `` before a capital or digit."""
    out: list[str] = []
    for line in text.splitlines():
        line = line.strip()
        if not line:
            continue
        out.extend(piece.strip() for piece in _SENTENCE_END.split(line) if piece.strip())
    return out


def first_span(text: str) -> int | None:
    """Start offset of the first high-value match (for clipping long lines around it)."""
    best: int | None = None
    for kind in ("error", "path", "url", "quantity", "datetime", "identifier"):
        match = DETECTORS[kind].search(text)
        if match is not None and (best is None or match.start() < best):
            best = match.start()
    return best


def clip(text: str, limit: int) -> str:
    """``text`` shortened to about ``limit`` characters, keeping the window around its first salient match."""
    if len(text) <= limit:
        return text
    start = first_span(text) or 0
    start = max(0, min(start - limit // 4, len(text) - limit))
    piece = text[start : start + limit].strip()
    return ("…" if start > 0 else "") + piece + ("…" if start + limit < len(text) else "")
