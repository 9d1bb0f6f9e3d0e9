"""ExtractiveSummarizer: salient facts kept, exact token bound, determinism, previous summary first."""

from __future__ import annotations

import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from windowkeeper.blocks import ToolCallBlock, ToolResultBlock
from windowkeeper.errors import ConfigurationError
from windowkeeper.messages import Message
from windowkeeper.summarize import ExtractiveSummarizer
from windowkeeper.testing.sessiongen import generate_session
from windowkeeper.tokens import ApproxCounter, default_counter

HAND = [
    Message.text_message("Hi there, hope all is well.", message_id="u0"),
    Message.text_message("Fine, thanks.", role="assistant", message_id="a0"),
    Message.text_message(
        "Please migrate the orders table before 2024-07-01. The dump lives at /var/backups/orders.sql. "
        "Docs: https://wiki.example.com/migrations. My name is Priya.",
        message_id="u1",
    ),
    Message(
        role="assistant",
        message_id="a1",
        content=[ToolCallBlock(id="c1", name="run_sql", args={"file": "/var/backups/orders.sql"})],
    ),
    Message.tool_message(
        [
            ToolResultBlock(
                call_id="c1",
                name="run_sql",
                output="loaded 1200 rows in 3.4 s\npsycopg.errors.UniqueViolation: duplicate key order_id=77",
            )
        ],
        message_id="t1",
    ),
    Message.text_message(
        "Nice weather. We decided to drop the legacy_orders index and retry with batches of 500 rows. "
        "Should we notify the billing team?",
        role="assistant",
        message_id="a2",
    ),
]


async def test_keeps_salient_facts_and_drops_small_talk() -> None:
    summary = await ExtractiveSummarizer().summarize(HAND, max_tokens=400)
    for fact in (
        "/var/backups/orders.sql",
        "2024-07-01",
        "https://wiki.example.com/migrations",
        "My name is Priya",
        "1200 rows in 3.4 s",
        "UniqueViolation: duplicate key order_id=77",
        "decided to drop the legacy_orders index",
        "Should we notify the billing team?",
        'run_sql({"file": "/var/backups/orders.sql"})',
    ):
        assert fact in summary, fact
    for noise in ("hope all is well", "Fine, thanks", "Nice weather"):
        assert noise not in summary
    lines = summary.splitlines()
    assert lines[0].startswith("- User: Please migrate the orders table before 2024-07-01.")
    assert all(line.startswith("  - ") for line in lines[1:]), summary


@pytest.mark.parametrize("bound", [1, 6, 25, 80, 200, 600, 1500])
def test_exact_token_bound_on_a_generated_session(bound: int) -> None:
    session = generate_session(50, seed=11)
    summarizer = ExtractiveSummarizer()
    summary = summarizer.extract(session.messages[1:], max_tokens=bound)
    assert default_counter().count_text(summary) <= bound
    if bound >= 25:
        assert default_counter().count_text(summary) >= bound * 0.6
    other = ExtractiveSummarizer(counter=ApproxCounter())
    approx = other.extract(session.messages[1:], max_tokens=bound)
    assert ApproxCounter().count_text(approx) <= bound


def test_its_memos_are_bounded_by_bytes_and_never_change_a_summary() -> None:
    """A process keeps one summarizer for every conversation: its memos are bounded by estimated bytes, and a
    summarizer that may keep nothing writes the same summaries as one that keeps everything."""
    sessions = [generate_session(60, seed=s).messages[1:] for s in range(4)]
    roomy, tight, none = (ExtractiveSummarizer(cache_bytes=b) for b in (64 << 20, 8_000, 0))
    for messages in sessions:
        for cut in (20, 40, 60):
            expected = roomy.extract(messages[:cut], max_tokens=300)
            assert tight.extract(messages[:cut], max_tokens=300) == expected
            assert none.extract(messages[:cut], max_tokens=300) == expected
    assert 0 < tight._pieces.bytes <= 6_000 and 0 < tight._costs.bytes <= 2_000
    assert len(none._pieces) == len(none._costs) == 0
    assert roomy._pieces.bytes > 10 * tight._pieces.bytes
    with pytest.raises(ConfigurationError, match="cache_bytes"):
        ExtractiveSummarizer(cache_bytes=-1)


def test_generated_session_fact_retention_and_determinism() -> None:
    session = generate_session(40, seed=7)
    old = session.messages[1:]
    summary = ExtractiveSummarizer().extract(old, max_tokens=600)
    assert summary == ExtractiveSummarizer().extract(old, max_tokens=600)
    kept = {kind: sum(f.text in summary for f in session.facts_of(kind)) for kind in ("goal", "file_path", "error")}
    totals = {kind: len(session.facts_of(kind)) for kind in kept}
    assert kept["goal"] == totals["goal"]
    assert kept["file_path"] >= totals["file_path"] * 0.6
    assert kept["error"] >= totals["error"] * 0.5
    assert sum(f.text in summary for f in session.facts_of("decision")) >= 2
    assert sum(f.text in summary for f in session.facts) >= len(session.facts) * 0.5


def test_previous_summary_facts_come_first_and_survive() -> None:
    previous = "- User: Ship release 4.2 on Friday.\n  - Assistant: Decided to freeze main at 16:00."
    new = [
        Message.text_message("ok", message_id="n1"),
        Message.text_message("The cache hit rate is 93% on node-7.", role="assistant", message_id="n2"),
        Message.text_message("sounds good, thanks", message_id="n3"),
    ]
    summarizer = ExtractiveSummarizer()
    summary = summarizer.extract(new, previous_summary=previous, max_tokens=200)
    assert summary.splitlines()[:2] == previous.splitlines()
    assert "cache hit rate is 93%" in summary
    prev_cost = default_counter().count_text(previous)
    tight = summarizer.extract(new, previous_summary=previous, max_tokens=prev_cost)
    assert tight == previous


def test_resummarizing_a_long_session_keeps_most_earlier_lines() -> None:
    session = generate_session(80, seed=2)
    summarizer = ExtractiveSummarizer()
    first = summarizer.extract(session.messages[1:60], max_tokens=400)
    second = summarizer.extract(session.messages[60:], previous_summary=first, max_tokens=400)
    earlier = [line.strip() for line in first.splitlines()]
    now = [line.strip() for line in second.splitlines()]
    assert default_counter().count_text(second) <= 400
    assert sum(line in now for line in earlier) >= 0.6 * len(earlier)
    positions = [now.index(line) for line in earlier if line in now]
    assert positions == sorted(positions)


async def test_edge_cases() -> None:
    summarizer = ExtractiveSummarizer()
    assert await summarizer.summarize([]) == ""
    assert await summarizer.summarize([Message.text_message("ok")], previous_summary="  ") == (
        "- 1 earlier messages held no facts worth keeping (small talk)."
    )
    with pytest.raises(ConfigurationError, match="max_tokens"):
        await summarizer.summarize(HAND, max_tokens=0)
    assert "instructions" not in await summarizer.summarize(HAND, instructions="instructions are ignored")


CHAT = [
    Message.text_message("Can you suggest a weekend hike near Denver?", message_id="c0"),
    Message.text_message(
        "Sure! Remember to always pack 3 liters of water and check trail conditions at https://trails.example.org. "
        "Popular choices include Royal Arch, Mount Falcon and Chautauqua Park, all within 45 minutes.",
        role="assistant",
        message_id="c1",
    ),
    Message.text_message(
        "By the way, I just bought new boots from REI last weekend. My daily commute is 12 miles, so I walk a lot.",
        message_id="c2",
    ),
    Message.text_message(
        "Great choice! Always break in boots for 2 weeks before a long hike, and remember blister tape.",
        role="assistant",
        message_id="c3",
    ),
]


def _swap(messages: list[Message]) -> list[Message]:
    swap = {"user": "assistant", "assistant": "user"}
    return [m.model_copy(update={"role": swap[m.role]}) for m in messages]


def _facts_kept(summary: str, facts: tuple[str, ...]) -> set[str]:
    return {fact for fact in facts if fact in summary}


CHAT_FACTS = (
    "3 liters of water",
    "https://trails.example.org",
    "45 minutes",
    "boots from REI last weekend",
    "commute is 12 miles",
    "for 2 weeks",
)


def test_chat_keeps_facts_whoever_said_them() -> None:
    """Concrete facts of both speakers survive, and swapping the roles keeps the same facts (no speaker bias)."""
    summarizer = ExtractiveSummarizer()
    as_is = summarizer.extract(CHAT, max_tokens=400)
    swapped = summarizer.extract(_swap(CHAT), max_tokens=400)
    assert _facts_kept(as_is, CHAT_FACTS) == set(CHAT_FACTS)
    assert _facts_kept(swapped, CHAT_FACTS) == set(CHAT_FACTS)
    tight = default_counter().count_text(as_is) // 2
    kept = _facts_kept(summarizer.extract(CHAT, max_tokens=tight), CHAT_FACTS)
    kept_swapped = _facts_kept(summarizer.extract(_swap(CHAT), max_tokens=tight), CHAT_FACTS)
    assert len(kept) >= 2
    assert abs(len(kept) - len(kept_swapped)) <= 1


def test_a_stated_port_survives_small_talk() -> None:
    """ "The API server listens on port 8080." is a fact, not small talk, whichever role says it."""
    for role in ("assistant", "user"):
        other = "user" if role == "assistant" else "assistant"
        chat = [
            Message.text_message("Hi! How are you today?", role=other, message_id="s0"),
            Message.text_message("Doing well, thanks for asking.", role=role, message_id="s1"),
            Message.text_message("The API server listens on port 8080.", role=role, message_id="s2"),
            Message.text_message("Great, sounds good to me.", role=other, message_id="s3"),
            Message.text_message("Have a nice day!", role=role, message_id="s4"),
        ]
        summary = ExtractiveSummarizer().extract(chat, max_tokens=30)
        assert "The API server listens on port 8080." in summary, (role, summary)
        assert "nice day" not in summary and "sounds good" not in summary


def test_condensing_ranks_every_previous_line_on_its_own() -> None:
    """A summary condensed with no new messages keeps far more than 8 lines, each line ranked by its own facts."""
    places = ["Lisbon", "Porto", "Madrid", "Seville", "Valencia", "Bilbao", "Lyon", "Nantes", "Turin", "Genoa"]
    things = ["bikes", "lamps", "chairs", "plants", "books", "maps", "cups", "rugs", "kites", "drums"]
    user_lines = [
        f"- User: I moved to {places[k % 10]} in {2000 + k} with {k + 2} {things[k // 2]}." for k in range(20)
    ]
    topics = ["insurance", "taxes", "visas", "rent", "banks", "schools", "doctors", "phones", "trains", "gyms"]
    assistant_lines = [f"- Assistant: Compare {topics[k % 10]} offers for {k + 1} days." for k in range(20)]
    previous = "\n".join(line for pair in zip(assistant_lines, user_lines, strict=True) for line in pair)
    summarizer = ExtractiveSummarizer()
    half = default_counter().count_text(previous) // 2
    condensed = summarizer.extract([], previous_summary=previous, max_tokens=half)
    kept = condensed.splitlines()
    assert default_counter().count_text(condensed) <= half
    assert len(kept) >= 15
    # the user lines carry more facts (a place, a year, a count) than the assistant lines (a count): they win
    # on salience, not on who said them
    assert sum(line.startswith("- User:") for line in kept) >= 0.7 * len(kept)
    assert [line for line in kept if line in user_lines] == [line for line in user_lines if line in kept]


def test_memoized_salience_scores_equal_fresh_ones_for_every_detector_set() -> None:
    from windowkeeper.summarize import salience as module

    lines = [
        "ValueError: invalid literal for int() in src/ingest/sink.py at 10:42",
        "tests/test_db.py::test_pool PASSED [ 12%] errors: 0",
        "We decided to switch to WAL mode on port 5432.",
        "ok",
        "x" * (module.MEMO_MAX_CHARS + 1) + " TimeoutError after 30 seconds",
    ]
    for line in lines:
        for kinds in (None, ("error",), ["path", "setting"]):
            chosen = None if kinds is None else tuple(kinds)
            fresh = module._score(line, chosen)
            assert module.salience(line, kinds) == fresh
            assert module.salience(line, iter(kinds) if kinds is not None else None) == fresh  # any iterable
    assert module.salience(lines[0]).score > module.salience(lines[3]).score == 0.0


_GUARD_PIECES = [
    "I", "we", "We", " me", " us", "will", "i'll", "should", "must", "don't", "never", "only", "at most", "favorite",
    "remember", "my name is", "call me", "under 5", "?", "todo", "TBD", "not sure", "need to check", "open question",
    "decided", "Let's", "opt for", "switched to", "plan to", "instead of", "2024-01-02", "10:42", "3 days ago",
    "a week ago", "next week", "Monday", "TODAY", "Tonight", "deadline", "Jan 5", "5th March", "September 3", "Error",
    "TimeoutError", "Traceback", "timed out", "time out", "exit code 2", "not found", "can't", "crash", "errors: 0",
    "http://x.y/z", "src/a.py", "port 8080", "1.2.3.4:80", "`x`", "deadbeef1", "FooBar", "took me", "gave us",
    "I've been trying", "We had", "failed", "failing", "failure", "fatal", "panic", "denied", "refused", "timeout",
    "cannot", "unable to", "crashed", "broken", "invalid", "exit status 3", "bug", "chose", "chosen", "choose",
    "agreed", "let us", "we'll", "settled on", "go with", "opted for", "switch to", "approach", "conclusion",
    "planned to", "going to", "do not", "must not", "always", "at least", "no more than", "stay under", "within",
    "compatible", "limit", "slo", "sla", "budget", "requirement", "constraint", "no new", "unclear", "tbd",
    "unknown whether", "need to confirm", "i am", "i'm", "i prefer", "i like", "i don't like", "my cat was",
    "favourite", "yesterday", "tomorrow", "last month", "past year", "this summer", "Sept 4", "12 December",
    "two weeks ago", "sent us", "helped me", "we moved", "I just got", "we've been", "Thursday",
    "\u017f", "\u212a", "\u00e9", "\u0130", "-", ":", "1", " ", "\n", "a", ".", ",", "'",
]  # fmt: skip


def _unguarded_and_guarded(texts: list[str]) -> tuple[list[object], list[object]]:
    from windowkeeper.summarize import salience as module

    guards, twins = module._GUARDS, module._TWINS
    try:
        module._GUARDS, module._TWINS = {}, {}
        expected = [module._score(text, kinds) for text in texts for kinds in (None, ("error",))]
    finally:
        module._GUARDS, module._TWINS = guards, twins
    return expected, [module._score(text, kinds) for text in texts for kinds in (None, ("error",))]


def test_detector_guards_keep_every_alternative_of_every_detector() -> None:
    """Each piece alone (the words of every alternative of the guarded detectors), in three cases and between other
    words, scores as all fifteen scans (as written, no twin) score it: a word missing from a guard shows here."""
    texts = [
        variant
        for piece in _GUARD_PIECES
        for variant in (piece, piece.upper(), piece.capitalize(), f"so {piece} then", f"x{piece}9")
    ]
    expected, guarded = _unguarded_and_guarded(texts)
    assert guarded == expected


@given(st.lists(st.sampled_from(_GUARD_PIECES), min_size=1, max_size=10), st.booleans())
def test_detector_guards_never_change_a_score(pieces: list[str], upper: bool) -> None:
    """The guards skip a detector only when no match is possible: every score, kind and anchor is what all fifteen
    scans give (texts dense in the guards' words, in any case, and non-ASCII letters that ``re.IGNORECASE`` pairs
    with ASCII ones, such as the long s and the Kelvin sign)."""
    text = "".join(pieces)
    expected, guarded = _unguarded_and_guarded([text.upper() if upper else text])
    assert guarded == expected


def _twin_pieces() -> list[str]:
    """The words of every twinned detector's pattern (``port``, ``Jan``, ``January``, ``couple``, ``json``...) and the
    punctuation, digits, units and non-ASCII letters its other alternatives and ``re.IGNORECASE`` turn on."""
    from windowkeeper.summarize import salience as module

    sources = (re.sub(r"\\.", " ", module.DETECTORS[kind].pattern) for kind in module._TWINS)  # escapes out
    words = {word for source in sources for word in re.findall(r"[A-Za-z']{2,}", source)}
    return [
        *sorted(words),
        " ", "  ", "\n", "\t", "0", "5", "12", "2024", "3.5", "1,200", "10:42", "2024-07-01", "-", ":", ".", ",", "/",
        "#", "_", "`", "()", "$", "€", "£", "%", "µs", "°C", "°F", "req/s", "v", "x", "T", "am", "p.m.", "ago",
        "deadbeef1", "FOO-12", "snake_case", "CamelCase", "a.b()", "MB", "mb", "KiB",
        "\u017f", "\u212a", "\u0130", "\u00e9", "\u00df",
    ]  # fmt: skip


_TWIN_PIECES = _twin_pieces()


def _cased(piece: str, how: int) -> str:
    return (piece, piece.lower(), piece.upper(), piece.capitalize(), piece.swapcase())[how]


def test_the_twinned_detectors() -> None:
    """The detectors scanned through a twin on ASCII text (a kind dropping out of this set only costs speed)."""
    from windowkeeper.summarize import salience as module

    case_insensitive = {kind for kind, pattern in module.DETECTORS.items() if pattern.flags & re.IGNORECASE}
    assert set(module._TWINS) == case_insensitive | {"quantity", "identifier"}
    assert all(module._TWINS[kind][0] is module.DETECTORS[kind] for kind in module._TWINS)


def _matches_of_twinned_detectors(alphabet: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    """Strings each of which one twinned detector matches whole (any case), or one of the parts a twin scans
    apart (each ``identifier`` alternative, both halves of ``quantity``), so that no part is drawn rarely."""
    from windowkeeper.summarize import salience as module

    patterns = [module.DETECTORS[kind] for kind in sorted(module._TWINS)]
    patterns += [re.compile(source) for source, _ in module._IDENTIFIER_ALTERNATIVES]
    patterns += [re.compile(module._QUANTITY_WRITTEN), re.compile(module._QUANTITY_SPOKEN, re.IGNORECASE)]
    return st.sampled_from(patterns).flatmap(lambda pattern: st.from_regex(pattern, fullmatch=True, alphabet=alphabet))


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(
    st.lists(
        st.one_of(
            # ASCII, and the four other characters the patterns spell (a line holding one is not twinned)
            st.tuples(
                _matches_of_twinned_detectors(st.characters(max_codepoint=127, include_characters="€£µ°")),
                st.integers(0, 4),
            ),
            st.tuples(st.sampled_from(_TWIN_PIECES), st.integers(0, 4)),
            st.tuples(_matches_of_twinned_detectors(st.characters(codec="utf-8")), st.integers(0, 4)),
        ),
        min_size=1,
        max_size=6,
    ),
    st.sampled_from(["", " ", " ", "-", ":", "/", ".", "\n"]),
)
def test_twins_find_what_the_detectors_find(pieces: list[tuple[str, int]], glue: str) -> None:
    """On ASCII text every twin finds as many hits as its detector, the same strings once lower-cased (all that
    `_score` reads of them); on other text `_score` does not use them and scores as the plain scans do. The text
    is made of the detectors' own matches (drawn from their patterns), their words and punctuation, in any case."""
    from windowkeeper.summarize import salience as module

    text = glue.join(_cased(piece, how) for piece, how in pieces)
    if text.isascii():
        for kind, (pattern, scan) in module._TWINS.items():
            expected = sorted(hit.lower() for hit in pattern.findall(text))
            assert sorted(hit.lower() for hit in scan(text, text.lower())) == expected, kind
    expected_scores, scores = _unguarded_and_guarded([text])
    assert scores == expected_scores


@pytest.mark.parametrize(
    "source",
    [r"\S+", r"\D", r"\W", r"a\B", r"\Aa", r"a\Z", r"[A-z]", r"[0-Z]", r"[\w-Z]", r"(?-i:a)b", r"(?P<Name>a)", r"\x41",
     r"\101", r"(a)\1", r"\N{LATIN CAPITAL LETTER A}", "caf\u00e9", "\u212a", r"[]a]"],
)  # fmt: skip
def test_no_lower_case_twin_for_a_source_whose_meaning_changes_with_case(source: str) -> None:
    from windowkeeper.summarize import salience as module

    with pytest.raises(RuntimeError, match="no lower-case twin"):
        module._lower_twin(source, re.IGNORECASE)
    with pytest.raises(RuntimeError, match="no lower-case twin"):
        module._lower_twin("plain", 0)  # only for case-insensitive patterns


def test_a_lower_case_twin_matches_the_spans_of_the_original() -> None:
    from windowkeeper.summarize import salience as module

    for source in (r"\b[A-Z][a-z]+ \d+(?:st|nd)?\b", r"(?<![\w.])Port\s*[:=#]\s*\d+", r"[^`\n]{2,5}|[T ]\d"):
        twin = module._lower_twin(source, re.IGNORECASE)
        for text in ("Jan 5 and JAN 22nd, port: 80", "x PORT=8080, Foo 3", "aT1 `b`\nCD T9"):
            original = [m.span() for m in re.finditer(source, text, re.IGNORECASE)]
            assert [m.span() for m in twin.finditer(text.lower())] == original


def test_the_pruned_identifier_scan_keeps_every_alternative_a_line_can_match() -> None:
    from windowkeeper.summarize import salience as module

    pattern, scan = module._TWINS["identifier"]
    for text in (
        "call `load()` then a.b.c() and x_y.z(); JIRA-12 #4 1a2b3c4d-1a2b-1a2b-1a2b-1a2b3c4d5e6f deadbeef CamelCase",
        "no identifiers here",
        "only() and `ticks`",
        "(see #12) snake_case",
    ):
        assert scan(text, text.lower()) == pattern.findall(text)


_LINE_ENDS = [
    "", ".", "…", ")", "`", "'s", "?", "!", " ", "  ", "\t", "/", "//", "\\", "-", ":", "é", "日本", "🙂", "1", "42",
]  # fmt: skip
_LINE_BODIES = ['Called f({"a": 1})', "User: fix it", "run_tests: 3 failed", "x", "Error: boom\n", "a\n\nb", "\r\n"]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(
        st.tuples(
            st.booleans(),
            st.sampled_from(_LINE_BODIES) | st.text(min_size=1, max_size=12),
            st.sampled_from(_LINE_ENDS),
        ),
        min_size=1,
        max_size=6,
    ),
    st.sampled_from(["o200k_base", "cl100k_base", "o200k_harmony"]),
)
def test_summary_lines_count_as_the_whole_text(lines: list[tuple[bool, str, str]], encoding: str) -> None:
    """The summed per-line count `_lines_tokens` uses is the encoder's count of the joined summary, whatever a line
    ends with (punctuation the newline merges into, spaces, a newline of its own, a slash, non-ASCII text)."""
    from windowkeeper.tokens import TiktokenCounter

    counter = TiktokenCounter(encoding)
    summarizer = ExtractiveSummarizer(counter)
    rendered = [f"{'  ' if indented else ''}- {body}{end}" for indented, body, end in lines]
    assert summarizer._line_summed
    assert summarizer._lines_tokens(rendered) == counter.count_text("\n".join(rendered))


_TEXT_PIECES = [
    *_LINE_ENDS, *_LINE_BODIES, "\n", "\n\n", "\n  ", "\n\t", "\n/", "\n-", "\r\n", "\n \n", "\x1c", "\u2028",
    "\u00a0", "- a", "  - b", "x", "Ab", "12",
]  # fmt: skip


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(st.sampled_from(_TEXT_PIECES) | st.text(max_size=6), min_size=1, max_size=12),
    st.sampled_from(["o200k_base", "cl100k_base"]),
)
def test_any_text_counts_as_its_parts_cut_at_line_starts(pieces: list[str], encoding: str) -> None:
    """`_text_tokens` (the previous summary's count) cuts a text only where no piece of the encoder's split runs
    past a newline: what it sums is the encoder's count of the whole, for any text (blank lines, indents, a slash
    or a whitespace that only Python counts as one after the newline)."""
    from windowkeeper.tokens import TiktokenCounter

    counter = TiktokenCounter(encoding)
    text = "".join(pieces)
    assert ExtractiveSummarizer(counter)._text_tokens(text) == counter.count_text(text)


def test_summary_lines_are_summed_only_for_the_encoders_whose_split_was_checked() -> None:
    """Another counter (approximate, or a subclass that may count its own way) is asked for the whole text; the
    summary is the same either way."""
    from windowkeeper.tokenizing.encodings import SPECS
    from windowkeeper.tokens import TiktokenCounter

    assert {SPECS[name].pattern for name in ("o200k_base", "o200k_harmony", "cl100k_base")} == {
        SPECS["o200k_base"].pattern,
        SPECS["cl100k_base"].pattern,
    }

    class Own(TiktokenCounter):
        pass

    messages = generate_session(40, seed=3).messages[1:]
    summed, whole = ExtractiveSummarizer(TiktokenCounter()), ExtractiveSummarizer(Own())
    assert not ExtractiveSummarizer(ApproxCounter())._line_summed
    assert summed.extract(messages, max_tokens=200) == whole.extract(messages, max_tokens=200)
    assert summed._line_summed and not whole._line_summed
