"""A new question's recall is not crowded out by the recall messages of earlier turns (issue 20, session 25)."""

from __future__ import annotations

import random

from windowkeeper.evaluation.lineup import standard_lineup
from windowkeeper.evaluation.replay import answer_shown, view_text
from windowkeeper.evaluation.strategies import View
from windowkeeper.messages import Message
from windowkeeper.testing.dialoguegen import generate_dialogue
from windowkeeper.tokens import default_counter


def _turns(messages: list[Message]) -> list[list[Message]]:
    steps: list[list[Message]] = []
    for message in messages:
        if message.role == "user" or not steps:
            steps.append([])
        steps[-1].append(message)
    return steps


async def test_a_question_gets_its_recall_message_though_earlier_turns_filled_the_room() -> None:
    """Two people, 40k tokens, the memory at 2k: at the question the view and two recall messages of earlier turns
    (small talk that found its own earlier copies) left no room for the question's recall, so the answer ("Glass
    Engines", said months before) was in no view. Those earlier recall messages now go to make the room."""
    counter = default_counter()
    dialogue = generate_dialogue(40_000, seed=11, counter=counter)
    fact = random.Random("question:11").choice(dialogue.facts)
    strategy = next(
        s for s in standard_lineup(2000, counter=counter, compare_recall=True) if s.name == "three-tier memory (recall)"
    )
    for step in _turns(list(dialogue.messages)):
        await strategy.step(step)
    question = Message.text_message(fact.question, message_id="question")
    asked = await strategy.step([question])
    shown = View([m for m in asked.messages if m.message_id != "question"], asked.summary)
    assert answer_shown(fact.answer, view_text(shown)), fact.question
