"""What a recall message costs: summed from its passages' memoized counts, equal to counting the whole message."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from windowkeeper import Message
from windowkeeper.context._recall_cost import SEPARATOR, RecallPricing, splits_at_pieces
from windowkeeper.context.recall import RECALL_HEADER, Recall
from windowkeeper.context.recall_index import Passage
from windowkeeper.tokenizing.counters import ApproxCounter, TiktokenCounter

O200K = TiktokenCounter("o200k_base")
CL100K = TiktokenCounter("cl100k_base")
# endings that do and do not join the blank line after them, and characters around them
_ALPHABET = [*"ab9 .}]\"')/,:-\t\n", "é", "日", "—", "🙂", "\u0301", "'s", "  ", "\n\n", "{}", "//", "Port"]


def _passage(i: int, text: str) -> Passage:
    return Passage("t", f"m{i}", i, i // 2, "tool" if i % 3 else "user", None, 0, 1, text)


def _piece(passage: Passage) -> str:
    return f"--- message #{passage.position}, turn {passage.turn}, {passage.role} ---\n{passage.text}"


def _message(passages: list[Passage]) -> Message:
    text = SEPARATOR.join([RECALL_HEADER, *map(_piece, passages)])
    return Message.text_message(text, message_id="recall:u")


@settings(max_examples=300, deadline=None)
@given(st.lists(st.lists(st.sampled_from(_ALPHABET), min_size=1, max_size=40).map("".join), min_size=1, max_size=6))
def test_a_recall_message_costs_the_sum_of_its_pieces(texts: list[str]) -> None:
    passages = [_passage(i, text.strip()) for i, text in enumerate(texts) if text.strip()]
    if not passages:
        return
    message = _message(passages)
    for counter in (O200K, CL100K):
        pricing = RecallPricing(counter)
        assert pricing.additive
        for passage in passages:  # sizing counts each piece alone, as before
            assert pricing.piece_cost("t", passage, _piece) == counter.count_text(_piece(passage)) + 2
        assert pricing.message_tokens("t", message, RECALL_HEADER, passages, _piece) == counter.count_message(message)


def test_other_counters_count_the_whole_message() -> None:
    class Doubled(TiktokenCounter):
        def count_text(self, text: str) -> int:
            return 2 * super().count_text(text)

    passages = [_passage(1, "port 55432."), _passage(2, '{"ok": true}')]
    message = _message(passages)
    for counter in (ApproxCounter(), Doubled()):
        assert not splits_at_pieces(counter)
        pricing = RecallPricing(counter)
        assert pricing.message_tokens("t", message, RECALL_HEADER, passages, _piece) == counter.count_message(message)


def test_built_recall_messages_report_their_exact_tokens() -> None:
    recall = Recall(O200K, min_coverage=0.0)
    endings = ["port 55432", "port 55432.", 'port 55432."}', "port 55432 )]", "port 55432\t}", "port 55432 é"]
    endings.append("—port 55432")  # each passage adds a word to the question, or recall would not show it
    history = [Message.text_message(f"The kestrel database runs on {end}", role="assistant") for end in endings]
    recall.observe("t", history)
    recall.left("t", history)
    user = Message.text_message("Which port does the kestrel database run on?")
    recall.observe("t", [user])
    built = recall.build("t", user, 4000)
    assert built is not None
    message, tokens = built
    assert len(message.metadata["passages"]) == len(endings)
    assert tokens == O200K.count_message_uncached(message)
    # the count is memoized: a manager counting its view again finds it (no second tokenization)
    assert O200K._cache.get((message.message_id, message.fingerprint())) == tokens
