"""Issue 12, item 9: a message edited in place is counted again, by the token counter and the budget manager.

Before the fix an edit through the content list (``message.content[0] = ...``) kept the memoized fingerprint, so
the counter returned the old count and `TokenBudgetContextManager` sent a 20,021-token view against a 3,500-token
budget while its metrics said 22 tokens.
"""

from __future__ import annotations

import copy

from windowkeeper import Message
from windowkeeper.blocks import TextBlock
from windowkeeper.context.budget import TokenBudgetContextManager
from windowkeeper.messages import BlockList, edit_epoch, edited_since
from windowkeeper.state import AgentState
from windowkeeper.tokens import default_counter
from windowkeeper.units import validate

BIG = "lorem ipsum dolor sit amet " * 4_000


def _chat(n: int) -> list[Message]:
    out: list[Message] = []
    for i in range(n):
        out.append(Message.text_message(f"question {i}", message_id=f"u{i}"))
        out.append(Message.text_message(f"answer {i}", role="assistant", message_id=f"a{i}"))
    return out


def test_every_in_place_edit_changes_the_fingerprint() -> None:
    msg = Message.text_message("short")
    edits = [
        lambda m: m.content.__setitem__(0, TextBlock(text="other")),
        lambda m: m.content.append(TextBlock(text="more")),
        lambda m: m.content.extend([TextBlock(text="x")]),
        lambda m: m.content.insert(0, TextBlock(text="y")),
        lambda m: m.content.pop(),
        lambda m: m.content.__delitem__(0),
        lambda m: m.content.__iadd__([TextBlock(text="z")]),
        lambda m: m.content.reverse(),
        lambda m: m.content.clear(),
    ]
    for edit in edits:
        msg.fingerprint()  # memoized
        epoch = edit_epoch()
        edit(msg)
        assert edited_since(msg, epoch)
        fresh = Message(role="user", content=list(msg.content))
        assert msg.fingerprint() == fresh.fingerprint()  # the memo followed the edit


def test_copies_sharing_a_content_list_see_its_edits() -> None:
    msg = Message.text_message("short", message_id="m")
    shallow = msg.model_copy()
    deep = copy.deepcopy(msg)
    fps = (msg.fingerprint(), shallow.fingerprint(), deep.fingerprint())
    msg.content[0] = TextBlock(text=BIG)
    assert msg.fingerprint() != fps[0]
    assert shallow.fingerprint() != fps[1]  # same list object: told too
    assert deep.fingerprint() == fps[2]  # its own list: unchanged
    assert isinstance(shallow.content, BlockList) and isinstance(deep.content, BlockList)
    replaced = msg.with_content([TextBlock(text="new")])
    assert isinstance(replaced.content, BlockList)
    assert replaced.fingerprint() != msg.fingerprint()


def test_every_live_holder_of_a_shared_content_list_sees_its_edits() -> None:
    """One holder is kept as a bare reference, more as a list; holders that died are dropped, the rest told."""
    msg = Message.text_message("short", message_id="m")
    first, second = msg.model_copy(), msg.model_copy()
    gone = msg.model_copy()
    del gone
    third = msg.model_copy()
    holders = (msg, first, second, third)
    before = [m.fingerprint() for m in holders]
    msg.content.append(TextBlock(text=BIG))
    assert all(m.fingerprint() != fp for m, fp in zip(holders, before, strict=True))
    alone = Message.text_message("alone", message_id="a")
    fp = alone.fingerprint()
    alone.content.clear()
    assert alone.fingerprint() != fp


def test_the_counter_recounts_an_edited_message() -> None:
    counter = default_counter()
    msg = Message.text_message("short", message_id="m")
    small = counter.count_message(msg)
    msg.content[0] = TextBlock(text=BIG)
    assert counter.count_message(msg) > 10_000 > small


def test_the_budget_manager_recounts_an_edited_message() -> None:
    manager = TokenBudgetContextManager(max_tokens=3_500, reserve_tokens=0)
    state = AgentState(context=_chat(10))
    state = manager.trim_context(state)
    assert manager.last_metrics is not None and manager.last_metrics.tokens_after < 300
    state.context[3].content[0] = TextBlock(text=BIG)  # edited in place, same object, same id
    state.context.append(Message.text_message("one more question", message_id="u-new"))
    state = manager.trim_context(state)
    real = default_counter().count_messages(state.context)
    assert real <= 3_500, f"view holds {real} tokens against a 3,500-token budget"
    assert manager.last_metrics is not None
    assert manager.last_metrics.tokens_before > 10_000  # the edit was seen
    assert validate(state.context) == []
    assert state.context[-1].message_id == "u-new"


def test_an_edit_elsewhere_does_not_disturb_an_unchanged_thread() -> None:
    manager = TokenBudgetContextManager(max_tokens=3_500, reserve_tokens=0)
    state = manager.trim_context(AgentState(context=_chat(5)))
    unrelated = Message.text_message("elsewhere")
    unrelated.content.append(TextBlock(text="edit"))  # moves the process-wide edit epoch
    state.context.append(Message.text_message("next", message_id="u-next"))
    manager.trim_context(state)
    assert manager.last_metrics is not None and manager.last_metrics.prefix_stable is True
