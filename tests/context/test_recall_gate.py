"""Which turns recall answers: questions judged on the words the conversation used, echoes skipped, and room made
for a turn that refers back when the view is at the top of its budget."""

from __future__ import annotations

from windowkeeper import AgentState, Message
from windowkeeper.context import TokenBudgetContextManager
from windowkeeper.context.metrics import thread_key
from windowkeeper.context.recall import QUESTION_COVERAGE, Recall, is_recall
from windowkeeper.context.recall_index import Entry, RecallIndex
from windowkeeper.state import add_messages

DEFAULT_GATE = 0.4
FILLERS = [
    "Elliot: The weather was grey all day.",
    "Elliot: I fell asleep early again.",
    "Elliot: Work was busy with the quarterly report.",
    "Elliot: The train was late this morning.",
    "Elliot: We watched a film about whales.",
    "Elliot: My cousin called from Porto.",
]


def sofa_index() -> RecallIndex:
    """A thread where the speaker's name is in every passage and the answer shares one rare word with the question."""
    index = RecallIndex()
    entries = [Entry(f"f{i}", text, i, i, "user") for i, text in enumerate(FILLERS * 4)]
    entries.append(Entry("fact", "Elliot: The sofa came to $356 in the end.", 100, 100, "user"))
    entries.append(Entry("other", "Elliot: The sofa is so comfy.", 101, 101, "user"))
    index.add_many("t", entries)
    return index


def test_a_question_is_judged_on_the_words_the_conversation_used() -> None:
    index = sofa_index()
    question = "How much did Elliot pay for the sofa?"  # "pay" was never said: it weighs most of all
    assert index.search("t", question, min_coverage=0.1, gate=DEFAULT_GATE) == []
    hits = index.search("t", question, min_coverage=0.1, gate=DEFAULT_GATE, said_gate=QUESTION_COVERAGE)
    assert "fact" in [h.passage.message_id for h in hits]
    # a name said in every passage tells none of them apart: it alone does not make a question refer back
    assert index.search("t", "Did Elliot pay?", gate=DEFAULT_GATE, said_gate=QUESTION_COVERAGE) == []


def test_recall_answers_a_question_but_not_a_statement_with_the_same_words() -> None:
    recall = Recall(index=sofa_index())
    asked = Message.text_message("How much did Elliot pay for the sofa?", message_id="q")
    said = Message.text_message("Elliot will pay for the sofa.", message_id="s")
    built = recall.build("t", asked, 2_000)
    assert built is not None and "$356" in built[0].text()
    assert recall.build("t", said, 2_000) is None


def test_a_passage_that_only_repeats_the_message_is_not_recalled() -> None:
    index = RecallIndex()
    index.add_many(
        "t",
        [
            Entry("a", "Greta: Work was fine, mostly meetings. You?", 1, 1, "assistant"),
            Entry("b", "Greta: The meetings moved to Thursday because the auditor is in Leeds.", 2, 2, "assistant"),
            # the other speaker says half the lines: "Greta" is on too many of them to tell any apart
            *(
                Entry(f"g{i}", text.replace("Elliot", "Greta"), 10 + i, 10 + i, "user")
                for i, text in enumerate(FILLERS)
            ),
            *(Entry(f"f{i}", text, 20 + i, 20 + i, "user") for i, text in enumerate(FILLERS)),
        ],
    )
    query = "Work was fine, mostly meetings. You?"
    found = [h.passage.message_id for h in index.search("t", query, skip_echoes=True)]
    assert "a" not in found and "b" in found
    assert "a" in [h.passage.message_id for h in index.search("t", query)]  # a search someone asked for shows it


def filler(i: int) -> Message:
    text = f"Entry {i}: the garden needed watering and the gate squeaked again."
    return Message.text_message(text, message_id=f"u{i}")


def test_a_turn_that_refers_back_gets_room_when_the_view_is_at_the_top_of_its_budget() -> None:
    manager: TokenBudgetContextManager[AgentState] = TokenBudgetContextManager(1_000, 0)
    recall = manager.recall
    assert recall is not None
    state = AgentState()
    fact = Message.text_message("The locksmith quoted 240 euros for the cellar door.", message_id="fact")
    state.context = [fact]
    state = manager.trim_context(state)
    question = Message.text_message("What did the locksmith quote for the cellar door?", message_id="q")
    i = 0
    while True:  # feed short turns until the fact has left the view and the room left is under one passage
        state.context = add_messages(state.context, [filler(i)])
        state = manager.trim_context(state)
        i += 1
        metrics = manager.last_metrics
        assert metrics is not None and i < 500
        gone = all(m.message_id != "fact" for m in state.context)
        if gone and 0 < manager.budget - metrics.tokens_after < 40:
            break
    need = recall.least_room(thread_key(state), question, state.context)
    before = list(state.context)
    state.context = add_messages(state.context, [question])
    state = manager.trim_context(state)
    placed = [m for m in state.context if is_recall(m)]
    assert placed and "240 euros" in placed[-1].text()
    assert state.context[: len(before)] != before  # the view was compacted to make the room
    metrics = manager.last_metrics
    assert metrics is not None and metrics.tokens_after <= manager.budget
    assert need > 40  # the room left could not hold the smallest recall message
