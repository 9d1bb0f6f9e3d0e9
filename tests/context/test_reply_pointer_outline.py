"""A cleared reply that listed items keeps the items' heads in its pointer (session 25).

A long assistant reply that lists options ("1. **Lavender Gin Fizz**: gin, lemon juice, ...") became a pointer
holding only its first sentence ("Quinoa salad ... sounds delicious!"), which names none of them; a later turn's
question about one of them then found nothing in the view (LongMemEval at 32k, where a sliding window still held
the reply whole). The pointer now lists the items' heads, within an eighth of the reply's characters.
"""

from __future__ import annotations

from windowkeeper.context.pointers import clear_reply, reply_pointer_text
from windowkeeper.messages import Message

DRINKS = ["Cucumber Gimlet", "Smokey Mango Mule", "Pimm's Cup", "Lavender Gin Fizz", "Cranberry Orange Spritz"]


def _listing(heads: list[str], bold: bool = True) -> str:
    items = [
        f"{i}. {'**' + head + '**' if bold else head}: a refreshing drink made with gin, lime juice and syrup, "
        "topped with soda water and served over crushed ice."
        for i, head in enumerate(heads, 1)
    ]
    return "That sounds delicious! Here are a few ideas for your gathering:\n\n" + "\n".join(items) + "\n\nEnjoy!"


def test_a_cleared_list_reply_names_its_items() -> None:
    text = _listing(DRINKS)
    reply = Message.text_message(text, role="assistant", message_id="a7")
    cleared = clear_reply(reply, tokens_before=300)
    assert cleared is not None
    pointer = cleared.text()
    assert 'it began "That sounds delicious! Here are a few ideas' in pointer
    assert 'it listed "Cucumber Gimlet"; "Smokey Mango Mule"; "Pimm\'s Cup"; "Lavender Gin Fizz"' in pointer
    # items without a bold lead are named by their text up to the colon
    plain = reply_pointer_text(_listing(DRINKS, bold=False), "a7")
    assert '"Lavender Gin Fizz"' in plain and "refreshing" not in plain


def test_the_outline_stays_within_an_eighth_of_the_reply() -> None:
    heads = [f"Option number {i} with a rather long descriptive name" for i in range(40)]
    text = _listing(heads)
    pointer = reply_pointer_text(text, "a1")
    listed = pointer.split("it listed ", 1)[1]
    assert len(listed) <= len(text) // 8 + 60
    assert '"Option number 0 with' in listed and "Option number 39" not in listed


def test_a_reply_without_a_list_keeps_its_first_sentence_only() -> None:
    text = "Short answer: yes, it is safe. " + "Here is why, in some detail. " * 20
    assert "it listed" not in reply_pointer_text(text, "a2")
    # one numbered line is not a list
    assert "it listed" not in reply_pointer_text("Steps:\n1. **Restart** the router, then wait.\nDone.", "a3")


def test_lines_of_a_code_block_are_not_items() -> None:
    text = (
        "Here is the change I would make to the configuration file:\n\n```diff\n- retries: 3\n+ retries: 5\n"
        "- timeout: 10\n```\n\nAnd the steps:\n1. **Deploy** it to staging first.\n2. **Watch** the error rate."
    )
    pointer = reply_pointer_text(text, "a4")
    assert 'it listed "Deploy"; "Watch"' in pointer and "retries" not in pointer
