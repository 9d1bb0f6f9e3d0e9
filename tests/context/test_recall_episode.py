"""Which passages recall shows after the best one: the rest of the turn the best passage was said in, and the reply
to a recalled question."""

from __future__ import annotations

from windowkeeper import Message
from windowkeeper.context.recall import Recall
from windowkeeper.context.recall_index import Entry, Passage, RecallIndex


def task_turns() -> RecallIndex:
    """Four tasks told alike, each followed in its own turn by a benchmark run: only the task names which run
    belongs to it."""
    index = RecallIndex()
    entries: list[Entry] = []
    for turn, name in enumerate(("render_sessions", "apply_records", "flush_events", "merge_rows")):
        at = 10 * turn
        entries.append(
            Entry(
                f"task{turn}",
                f"Please fix `{name}` in the scheduler queue: it fails to parse values exported by the legacy system.",
                at,
                turn,
                "user",
            )
        )
        entries.append(Entry(f"note{turn}", f"Reading the code of `{name}` first.", at + 1, turn, "assistant"))
        entries.append(
            Entry(
                f"bench{turn}",
                f"$ python -m bench.run\nrequests: 5000\npeak memory: {900 + turn} MiB",
                at + 2,
                turn,
                "tool",
            )
        )
    index.add_many("t", entries)
    return index


def test_the_turn_of_the_best_passage_comes_first() -> None:
    recall = Recall(index=task_turns())
    question = Message.text_message(
        "What peak memory did we measure after the fix of `render_sessions` in the scheduler queue?",
        message_id="q",
    )
    # the run of the task the question names comes right after its turn's other passages, before the other tasks
    # (which match more of the question's words): with room for three passages, those three are shown
    ranked = [h.passage.message_id for h in recall._search("t", question, 8)]
    assert ranked[:3] == ["task0", "note0", "bench0"]
    built = recall.build("t", question, 2_000)
    assert built is not None and "900 MiB" in built[0].text()
    # the search a caller asks for keeps plain BM25 order
    plain = [h.passage.message_id for h in recall.search("t", question.text(), limit=8)]
    assert plain[0] == "task0" and plain.index("bench0") > plain.index("task1")


def chat_with_a_question() -> RecallIndex:
    index = RecallIndex()
    lines = [
        ("Ines", "The weather turned cold again."),
        ("Luca", "Who are you seeing in May?"),
        ("Ines", "Glass Engines!"),
        ("Luca", "The train was late this morning."),
        ("Ines", "I fell asleep early again."),
        ("Luca", "My cousin called from Porto."),
    ]
    index.add_many(
        "t",
        [
            Entry(f"m{i}", f"{who}: {text}", i, i // 2, "user" if i % 2 == 0 else "assistant")
            for i, (who, text) in enumerate(lines * 3)
        ],
    )
    return index


def test_a_recalled_question_brings_its_reply() -> None:
    index = chat_with_a_question()
    recall = Recall(index=index)
    question = Message.text_message("Which band did Ines get tickets to see in May?", message_id="q")
    built = recall.build("t", question, 2_000)
    assert built is not None
    text = built[0].text()
    # the reply shares no word with the question: it is shown because it answers the passage that matched
    assert "Glass Engines" in text
    assert text.index("Who are you seeing in May?") < text.index("Glass Engines")


def test_following_is_the_next_message_only_when_it_was_indexed() -> None:
    index = chat_with_a_question()
    first = index.message_passages("t", "m1")[0]
    after = index.following("t", first)
    assert after is not None and after.message_id == "m2" and after.part == 0
    last = Passage("t", "m17", 17, 8, "assistant", None, 0, 1, "Luca: My cousin called from Porto.")
    assert index.following("t", last) is None  # message 18 never left the view
    assert index.following("other", first) is None
