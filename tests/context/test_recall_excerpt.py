"""When the passages a recall message would show do not fit whole, it quotes of each only the lines that hold the
query's rarest words (the rest marked `[...]`), under a shorter header, so the answer fits beside its task."""

from __future__ import annotations

from windowkeeper import Message
from windowkeeper.context.recall import EXCERPT_HEADER, RECALL_HEADER, Recall
from windowkeeper.context.recall_index import EXCERPT_GAP, Entry, RecallIndex, excerpt

MODULES = ("currency", "ranking", "backoff", "shards", "sessions", "batching")


def bench_log(turn: int) -> str:
    lines = [
        f"$ python -m bench.{MODULES[turn]} --requests 5000",
        "warming up (500 requests)...",
        "requests: 5000",
        "errors: 0",
        f"p50 latency: {70 + turn} ms",
        f"p95 latency: {230 + turn} ms",
        f"throughput: {3000 + turn} requests/s",
        f"peak memory: {900 + turn} MiB",
    ]
    return "\n".join(lines)


def tasks() -> RecallIndex:
    index = RecallIndex()
    entries: list[Entry] = []
    names = ("render_sessions", "apply_records", "flush_events", "merge_rows", "load_jobs", "parse_pages")
    for turn, name in enumerate(names):
        at = 10 * turn
        entries.append(
            Entry(
                f"task{turn}",
                f"Hi! Please fix `{name}` in `src/{MODULES[turn]}.py`: it fails to parse values exported by the "
                "legacy system. The logs show `ValueError: invalid literal for int()`. Reproduce it before changing "
                "anything.",
                at,
                turn,
                "user",
            )
        )
        entries.append(Entry(f"read{turn}", f"Reading `{name}` first.", at + 1, turn, "assistant"))
        entries.append(Entry(f"test{turn}", f"Running the tests of `{name}` now.", at + 2, turn, "assistant"))
        entries.append(Entry(f"bench{turn}", bench_log(turn), at + 3, turn, "tool"))
    index.add_many("t", entries)
    return index


QUESTION = "While we worked on this task: fix `render_sessions` in `src/currency.py` - what peak memory did we measure?"


def test_excerpt_keeps_the_lines_holding_the_words_and_marks_the_rest() -> None:
    text = bench_log(0)
    assert excerpt(text, frozenset({"peak", "memory"})) == f"{EXCERPT_GAP}\npeak memory: 900 MiB"
    assert excerpt(text, frozenset({"nowhere"})) is None  # nothing to keep it for
    assert excerpt("One. Two peak. Three.", frozenset({"peak"})) == f"{EXCERPT_GAP} Two peak. {EXCERPT_GAP}"


def test_a_short_room_quotes_the_telling_lines_so_the_answer_fits() -> None:
    question = Message.text_message(QUESTION, message_id="q")
    whole = Recall(index=tasks()).build("t", question, 2_000)
    assert whole is not None and RECALL_HEADER in whole[0].text() and "900 MiB" in whole[0].text()
    header = whole[0].text().split("\n\n")[0]
    # room for the header and the turn's first three passages whole, not its run (the answer): quoted in part, the
    # four fit
    recall = Recall(index=tasks())
    first = recall._search("t", question, 8)[:3]
    assert [h.passage.message_id for h in first] == ["task0", "read0", "test0"]
    room = recall._header_tokens(question) + sum(recall._cost("t", h.passage) for h in first) + 10
    built = recall.build("t", question, room)
    assert built is not None and built[1] <= room
    text = built[0].text()
    assert text.startswith(EXCERPT_HEADER) and header not in text
    assert "peak memory: 900 MiB" in text and "p50 latency" not in text and EXCERPT_GAP in text
    assert built[1] == recall.counter.count_message(built[0])
    # the index and the recall tool keep the whole original
    assert recall.original_text("t", "bench0") == bench_log(0)
    assert any("p50 latency: 70 ms" in hit.passage.text for hit in recall.search("t", "p50 latency", limit=8))
