"""`RecallStep`, the one recall step: its parts hand recall what each manager's cut did, and a thread is seeded."""

from __future__ import annotations

from windowkeeper import Message
from windowkeeper.context._recall_step import RecallStep, continues
from windowkeeper.context.recall import Recall


def _chat(n: int) -> list[Message]:
    return [Message.text_message(f"message {i} about topic{i}", message_id=f"m{i}") for i in range(n)]


def test_hand_over_queues_what_left_the_unread_part_as_one_reference_and_restores_originals() -> None:
    recall = Recall()
    step = RecallStep(recall, "t")
    before = _chat(10)
    after = before[6:]
    restored: list[str] = []

    def restore(message: Message) -> Message:
        restored.append(str(message.message_id))
        return message

    step.hand_over(before, after, restore=restore, unread=4)
    assert recall.pending("t") == 6  # the 4 unread ones and the 2 read ones that left
    assert restored == ["m4", "m5"]  # the unread part is handed over as the caller sent it


def test_seed_indexes_what_left_the_view_and_marks_the_served_turn() -> None:
    recall = Recall()
    history = _chat(8)
    view = history[5:]
    in_view = {m.message_id for m in view}
    RecallStep(recall, "t").seed(history, lambda m: m.message_id in in_view, served=view[-1])
    assert recall.served("t") == "m7"  # the turn it had decided for is not searched again
    assert any("topic2" in h.passage.text for h in recall.search("t", "topic2"))
    assert recall.search("t", "topic6") == []


def test_continues_compares_by_value() -> None:
    view = _chat(3)
    copies = [m.model_copy() for m in view]
    assert continues([*copies, *_chat(1)], view)
    assert not continues(view[1:], view)
