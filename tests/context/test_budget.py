"""Behaviour of `TokenBudgetContextManager`: hysteresis, the order of freeing steps, validity and restoring."""

from __future__ import annotations

import asyncio
import itertools
import logging
from collections.abc import Sequence
from typing import Any

import pytest

from windowkeeper.blocks import ReasoningBlock, TextBlock, ToolCallBlock, ToolResultBlock
from windowkeeper.context._compaction import unsummarized_marker
from windowkeeper.context.budget import SUMMARY_FAILURE_LOG, TokenBudgetContextManager
from windowkeeper.context.pointers import OFFLOAD_KEY, clear_reply, is_offloaded
from windowkeeper.errors import ConfigurationError
from windowkeeper.messages import Message
from windowkeeper.state import AgentState, ExecMeta, add_messages
from windowkeeper.summarize.failsafe import CONDENSE_DOCUMENT_ID
from windowkeeper.tokens import default_counter
from windowkeeper.units import validate

COUNTER = default_counter()


def user(i: int, text: str = "question") -> Message:
    return Message.text_message(f"{text} {i}", role="user", message_id=f"u{i}", timestamp=0.0)


def answer(i: int, text: str = "answer") -> Message:
    return Message.text_message(f"{text} {i}", role="assistant", message_id=f"a{i}", timestamp=0.0)


def tool_turn(i: int, output: str, name: str = "read_file") -> list[Message]:
    call = Message(
        message_id=f"c{i}",
        role="assistant",
        content=[ToolCallBlock(id=f"call_{i}", name=name, args={"path": f"src/mod{i}.py"})],
        timestamp=0.0,
    )
    result = Message.tool_message(
        [ToolResultBlock(call_id=f"call_{i}", output=output, name=name)], message_id=f"r{i}", timestamp=0.0
    )
    return [call, result]


def big_output(i: int, lines: int = 60) -> str:
    return "\n".join(f"line {k} of file {i}: value_{i}_{k} = compute({k}, {i})" for k in range(lines))


def tokens(messages: Sequence[Message], summary: str | None = None) -> int:
    from windowkeeper.context.zones import summary_message

    extra = [summary_message(summary)] if summary else []
    return COUNTER.count_messages([*extra, *messages])


SYSTEM = Message.text_message("You are a careful coding agent.", role="system", message_id="sys", timestamp=0.0)


def state_of(messages: list[Message], **fields: Any) -> AgentState:
    return AgentState(context=list(messages), **fields)


# -- configuration -------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "name"),
    [
        ({"max_tokens": 2000, "reserve_tokens": 2000}, "max_tokens"),
        ({"max_tokens": 0}, "max_tokens"),
        ({"max_tokens": 8000, "reserve_tokens": -1}, "reserve_tokens"),
        ({"max_tokens": 8000, "high_watermark": 1.2}, "high_watermark"),
        ({"max_tokens": 8000, "high_watermark": 0}, "high_watermark"),
        ({"max_tokens": 8000, "low_watermark": 1.0}, "low_watermark"),
        ({"max_tokens": 8000, "low_watermark": 0.0}, "low_watermark"),
        ({"max_tokens": 8000, "low_watermark": "0.5"}, "low_watermark"),
        ({"max_tokens": 8000, "keep_tool_results": -1}, "keep_tool_results"),
        ({"max_tokens": 8000, "keep_replies": -1}, "keep_replies"),
        ({"max_tokens": 8000, "clear_reply_min_tokens": -5}, "clear_reply_min_tokens"),
        ({"max_tokens": 8000, "summary_mode": "replace"}, "summary_mode"),
        ({"max_tokens": 8000, "summary_timeout": 0}, "summary_timeout"),
        ({"max_tokens": 8000, "counter": object()}, "counter"),
        ({"max_tokens": 2400, "reserve_tokens": 0, "system_prompt": "rule " * 2000}, "max_tokens"),
        ({"max_tokens": True}, "max_tokens"),
    ],
)
def test_bad_configuration_names_the_parameter(kwargs: dict[str, Any], name: str) -> None:
    with pytest.raises(ConfigurationError, match=name):
        TokenBudgetContextManager(**kwargs)


def test_budget_and_watermarks() -> None:
    mgr: TokenBudgetContextManager[AgentState] = TokenBudgetContextManager(10_000, 2000, 0.9, 0.5)
    assert (mgr.budget, mgr.high_limit, mgr.low_limit) == (8000, 7200, 4000)
    # summary budgets: a third of the low mark (capped by 4 summaries) with tools, half of it in a plain chat
    assert (mgr.summary_budget, mgr.chat_summary_budget) == (1333, 2000)
    fixed: TokenBudgetContextManager[AgentState] = TokenBudgetContextManager(10_000, 2000, summary_budget=900)
    assert (fixed.summary_budget, fixed.chat_summary_budget) == (900, 900)


# -- hysteresis ----------------------------------------------------------------------------------------------


def test_below_high_watermark_nothing_changes_and_prefix_is_stable() -> None:
    mgr: TokenBudgetContextManager[AgentState] = TokenBudgetContextManager(4000, 0)
    state = state_of([SYSTEM, user(0), answer(0)])
    same_list = state.context
    state = mgr.trim_context(state)
    assert state.context is same_list
    assert mgr.last_metrics is not None and mgr.last_metrics.prefix_stable is None
    state.context = add_messages(state.context, [user(1), answer(1)])
    before = list(state.context)
    state = mgr.trim_context(state)
    assert state.context == before and all(a is b for a, b in zip(state.context, before, strict=True))
    m = mgr.last_metrics
    assert m is not None and m.prefix_stable is True and m.tokens_saved == 0
    assert m.tokens_before == m.tokens_after == tokens(before)


def test_compacts_to_low_watermark_then_leaves_prefix_alone_until_high_again() -> None:
    mgr: TokenBudgetContextManager[AgentState] = TokenBudgetContextManager(1500, 0, 0.9, 0.5)
    state = state_of([SYSTEM])
    views: list[list[Message]] = []
    compactions = []
    for i in range(40):
        state.context = add_messages(state.context, [user(i, "please explain " * 20), answer(i, "because " * 30)])
        state = mgr.trim_context(state)
        m = mgr.last_metrics
        assert m is not None
        if m.tokens_saved > 0:
            compactions.append(i)
            assert m.tokens_before >= mgr.high_limit
            assert m.tokens_after <= mgr.low_limit
            assert m.prefix_stable is False
        elif views:
            # hysteresis: the previous view is an exact prefix of this one
            prev = views[-1]
            assert all(a is b for a, b in zip(prev, state.context[: len(prev)], strict=True))
            assert m.prefix_stable is True
        views.append(list(state.context))
        assert not validate(state.context, "anthropic")
        assert state.context[0] is SYSTEM
    assert len(compactions) >= 3
    # chunks: several calls between two compactions
    gaps = [b - a for a, b in itertools.pairwise(compactions)]
    assert min(gaps) >= 3
    total = mgr.metrics_total
    assert total.calls == 40 and total.prefix_stable_calls == 39 - len(compactions)


# -- freeing order ---------------------------------------------------------------------------------------------


def test_old_tool_results_are_cleared_first_and_newest_are_kept() -> None:
    msgs: list[Message] = [SYSTEM, user(0, "fix the bug")]
    for i in range(8):
        msgs += tool_turn(i, big_output(i))
    msgs.append(answer(99, "done"))
    size = tokens(msgs)
    mgr: TokenBudgetContextManager[AgentState] = TokenBudgetContextManager(int(size * 0.98), 0, keep_tool_results=3)
    state = mgr.trim_context(state_of(msgs))
    m = mgr.last_metrics
    assert m is not None and m.tokens_after <= mgr.low_limit
    # nothing dropped: clearing alone was enough
    assert [x.message_id for x in state.context] == [x.message_id for x in msgs]
    cleared = [x.message_id for x in state.context if is_offloaded(x)]
    assert cleared == [f"r{i}" for i in range(len(cleared))]  # oldest first
    assert m.tool_results_cleared == len(cleared) >= 1
    for i in (5, 6, 7):  # the newest three tool turns keep their outputs
        assert state.context[msgs.index(next(x for x in msgs if x.message_id == f"r{i}"))].text() == big_output(i)
    pointer = state.context[3]
    assert pointer.message_id == "r0" and pointer.role == "tool"
    block = pointer.tool_result_blocks()[0]
    assert block.call_id == "call_0" and block.name == "read_file"
    text = block.output
    assert isinstance(text, str)
    assert "read_file" in text and "src/mod0.py" in text and "line 0 of file 0" in text
    assert f"{len(big_output(0))} chars" in text and "60 lines" in text
    assert pointer.metadata[OFFLOAD_KEY]["kind"] == "cleared"


def test_fewer_tool_turns_than_keep_tool_results_are_all_kept_whole() -> None:
    # two tool turns and keep_tool_results=3: both are among the newest three, so neither is cleared (the view is
    # cut instead); a negative slice once protected only the newest of them
    msgs: list[Message] = [SYSTEM, user(0, "fix the bug")]
    for i in range(2):
        msgs += tool_turn(i, big_output(i))
    msgs += [answer(98, "done"), user(99, "thanks, now the docs")]
    size = tokens(msgs)
    mgr: TokenBudgetContextManager[AgentState] = TokenBudgetContextManager(
        int(size * 0.98), 0, keep_tool_results=3, recall=False
    )
    state = mgr.trim_context(state_of(msgs))
    assert not any(is_offloaded(x) for x in state.context)
    m = mgr.last_metrics
    assert m is not None and m.tool_results_cleared == 0


def test_restore_brings_back_originals_byte_identical() -> None:
    msgs: list[Message] = [SYSTEM, user(0)]
    for i in range(6):
        msgs += tool_turn(i, big_output(i, 80))
    msgs += [answer(0, "all six files read"), user(1, "next, please")]  # an answered turn: its results may go
    mgr: TokenBudgetContextManager[AgentState] = TokenBudgetContextManager(int(tokens(msgs) * 0.98), 0)
    originals = {m.message_id: m.model_dump_json() for m in msgs}
    state = mgr.trim_context(state_of(msgs))
    replaced = [m for m in state.context if is_offloaded(m)]
    assert replaced
    for m in replaced:
        back = mgr.restore(m)
        assert back.model_dump_json() == originals[back.message_id]
        assert m.model_dump_json() != originals[m.message_id]
    restored = mgr.restore_context(state)
    assert [m.model_dump_json() for m in restored] == [originals[m.message_id] for m in state.context]
    assert any(is_offloaded(m) for m in state.context)  # the state itself is left as it was
    untouched = state.context[1]
    assert mgr.restore(untouched) is untouched


def test_drops_oldest_whole_units_and_summarizes_them() -> None:
    seen: list[list[str]] = []

    def summarizer(messages: list[Message], previous: str | None) -> str:
        seen.append([m.message_id for m in messages])
        return f"covered {len(messages)} messages"

    msgs: list[Message] = [SYSTEM]
    for i in range(30):
        msgs += [user(i, "tell me about item " * 10), answer(i, "item details " * 20)]
    mgr: TokenBudgetContextManager[AgentState] = TokenBudgetContextManager(
        int(tokens(msgs) * 0.98), 0, summarizer=summarizer, max_summary_tokens=50
    )
    state = mgr.trim_context(state_of(msgs, context_summary="Earlier: Sam lives in Berlin."))
    assert len(seen) == 1
    kept_ids = [m.message_id for m in state.context]
    dropped = [m.message_id for m in msgs if m.message_id not in kept_ids]
    assert seen[0] == dropped
    assert kept_ids[0] == "sys" and kept_ids[1].startswith("u")
    # the kept part is the newest suffix, whole user/assistant pairs
    assert kept_ids[1:] == [m.message_id for m in msgs[len(msgs) - len(kept_ids) + 1 :]]
    assert state.context_summary == f"Earlier: Sam lives in Berlin.\n\ncovered {len(dropped)} messages"
    m = mgr.last_metrics
    assert m is not None and m.summaries_made == 1 and m.tool_results_cleared == 0
    assert m.tokens_after <= mgr.low_limit


def test_failing_summarizer_is_logged_and_the_cut_is_marked(caplog: pytest.LogCaptureFixture) -> None:
    def broken(messages: list[Message]) -> str:
        raise RuntimeError("model unavailable")

    msgs: list[Message] = [SYSTEM]
    for i in range(20):
        msgs += [user(i, "words " * 30), answer(i, "more words " * 30)]
    mgr: TokenBudgetContextManager[AgentState] = TokenBudgetContextManager(
        int(tokens(msgs) * 0.98), 0, summarizer=broken
    )
    with caplog.at_level(logging.ERROR, logger="windowkeeper.context.budget"):
        state = mgr.trim_context(state_of(msgs, context_summary="kept summary"))
    assert SUMMARY_FAILURE_LOG in caplog.text and "model unavailable" in caplog.text
    # a marked cut (issue 12, item 10): the earlier summary stays, and the view says turns are missing
    dropped = len(msgs) - len(state.context)
    assert state.context_summary == f"kept summary\n\n{unsummarized_marker(dropped)}"
    m = mgr.last_metrics
    assert m is not None and m.summaries_made == 0 and m.tokens_after <= mgr.low_limit
    assert not validate(state.context, "anthropic")


def test_agent_loop_keeps_the_task_message_pinned() -> None:
    """One user request followed only by tool turns, over the budget on its own (a turn in progress under the budget
    is never cut): its older steps go, the request stays so the view still starts with a user."""
    msgs: list[Message] = [SYSTEM, user(0, "migrate the database")]
    for i in range(30):
        msgs += tool_turn(i, "ok " * 40)
    mgr: TokenBudgetContextManager[AgentState] = TokenBudgetContextManager(
        int(tokens(msgs) / 1.25), 0, clear_min_tokens=10_000
    )
    state = mgr.trim_context(state_of(msgs))
    ids = [m.message_id for m in state.context]
    assert ids[:3] == ["sys", "u0", ids[2]] and ids[2].startswith("c")
    assert ids[-2:] == ["c29", "r29"]
    assert len(ids) < len(msgs)
    assert not validate(state.context, "anthropic") and not validate(state.context, "openai")


def test_pending_tool_call_is_never_dropped() -> None:
    msgs: list[Message] = [SYSTEM]
    for i in range(10):
        msgs += [user(i, "ask " * 40), answer(i, "reply " * 40)]
    pending = Message(
        message_id="p",
        role="assistant",
        content=[ToolCallBlock(id="call_p1", name="search", args={"q": "x"}), ToolCallBlock(id="call_p2", name="calc")],
        timestamp=0.0,
    )
    partial = Message.tool_message([ToolResultBlock(call_id="call_p1", output="found it")], message_id="pr")
    msgs += [user(10, "now search"), pending, partial]
    mgr: TokenBudgetContextManager[AgentState] = TokenBudgetContextManager(int(tokens(msgs) * 0.98), 0)
    state = mgr.trim_context(state_of(msgs))
    assert [m.message_id for m in state.context][-3:] == ["u10", "p", "pr"]
    assert state.context[-2] is pending and state.context[-1] is partial
    assert not validate(state.context, "anthropic")


def test_unit_larger_than_budget_is_truncated_with_a_marker() -> None:
    huge = "\n".join(f"row {k}: " + "payload " * 12 for k in range(600))
    msgs = [SYSTEM, user(0, "dump the table"), *tool_turn(0, huge, name="sql")]
    mgr: TokenBudgetContextManager[AgentState] = TokenBudgetContextManager(3000, 500)
    state = mgr.trim_context(state_of(msgs))
    ids = [m.message_id for m in state.context]
    assert ids == ["sys", "u0", "c0", "r0"]
    cut = state.context[-1]
    text = cut.text()
    assert "[truncated " in text and " tokens] " in text
    assert text.startswith("row 0: ") and text.rstrip().endswith("payload")
    assert cut.tool_result_blocks()[0].call_id == "call_0"
    m = mgr.last_metrics
    assert m is not None and m.tokens_after <= mgr.budget
    assert cut.metadata[OFFLOAD_KEY]["kind"] == "truncated"
    assert mgr.restore(cut).text() == huge


def test_system_prompt_and_tools_count_against_the_budget() -> None:
    tools = [{"name": "search", "description": "find " * 200, "parameters": {"type": "object"}}]
    plain: TokenBudgetContextManager[AgentState] = TokenBudgetContextManager(4000, 0)
    loaded: TokenBudgetContextManager[AgentState] = TokenBudgetContextManager(
        4000, 0, system_prompt="be brief", tools=tools
    )
    msgs = [SYSTEM, user(0), answer(0)]
    plain.trim_context(state_of(msgs))
    loaded.trim_context(state_of(msgs))
    assert plain.last_metrics is not None and loaded.last_metrics is not None
    assert loaded.last_metrics.tokens_before - plain.last_metrics.tokens_before > 200


def test_scratchpad_is_pinned_and_counted() -> None:
    msgs: list[Message] = [SYSTEM]
    for i in range(12):
        msgs += [user(i, "note " * 30), answer(i, "ok " * 30)]
    pad = "Facts: the deploy key is K-42. " * 20
    mgr: TokenBudgetContextManager[AgentState] = TokenBudgetContextManager(int(tokens(msgs) * 0.98), 0)
    state = mgr.trim_context(state_of(msgs, scratchpad=pad))
    assert state.scratchpad == pad
    m = mgr.last_metrics
    assert m is not None and m.tokens_saved > 0
    # with the scratchpad counted, more had to go than its absence would need
    other: TokenBudgetContextManager[AgentState] = TokenBudgetContextManager(int(tokens(msgs) * 0.98), 0)
    plain = other.trim_context(state_of(msgs))
    assert len(state.context) < len(plain.context)


# -- incremental work ----------------------------------------------------------------------------------------------


class CountingCounter:
    """The exact counter, recording which messages were priced."""

    def __init__(self) -> None:
        self.inner = default_counter()
        self.name = self.inner.name
        self.priced: list[str | int] = []

    def count_text(self, text: str) -> int:
        return self.inner.count_text(text)

    def count_message(self, message: Message) -> int:
        self.priced.append(message.message_id)
        return self.inner.count_message(message)

    def count_messages(self, messages: Sequence[Message]) -> int:
        return sum(self.count_message(m) for m in messages) + self.inner.count_messages([])


def test_a_call_prices_only_the_new_messages() -> None:
    counter = CountingCounter()
    mgr: TokenBudgetContextManager[AgentState] = TokenBudgetContextManager(100_000, 0, counter=counter)
    state = state_of([SYSTEM, *[user(i) for i in range(50)]])
    state = mgr.trim_context(state)
    counter.priced.clear()
    state.context = add_messages(state.context, [answer(1), user(99)])
    mgr.trim_context(state)
    assert counter.priced == ["a1", "u99"]


def test_full_history_callers_get_the_same_views_as_graph_callers() -> None:
    history: list[Message] = [SYSTEM]
    graph_mgr: TokenBudgetContextManager[AgentState] = TokenBudgetContextManager(2500, 0)
    full_mgr: TokenBudgetContextManager[AgentState] = TokenBudgetContextManager(2500, 0)
    graph_state = AgentState(context=[SYSTEM], execution_meta=ExecMeta(thread_id="g"))
    for i in range(30):
        new = [user(i, "q " * 25), *tool_turn(i, big_output(i, 8)), answer(i, "a " * 20)]
        history += new
        graph_state.context = add_messages(graph_state.context, new)
        graph_state = graph_mgr.trim_context(graph_state)
        full = full_mgr.trim_context(AgentState(context=list(history)))
        assert [m.model_dump_json() for m in full.context] == [m.model_dump_json() for m in graph_state.context]
        assert full_mgr.last_metrics == graph_mgr.last_metrics.model_copy(
            update={"duration_s": full_mgr.last_metrics.duration_s, "messages_before": len(history)}
        )


def test_threads_are_tracked_separately() -> None:
    mgr: TokenBudgetContextManager[AgentState] = TokenBudgetContextManager(8000, 0)
    a = AgentState(context=[SYSTEM, user(0)], execution_meta=ExecMeta(thread_id="a"))
    b = AgentState(context=[SYSTEM, user(1, "other")], execution_meta=ExecMeta(thread_id="b"))
    mgr.trim_context(a)
    mgr.trim_context(b)
    a.context = add_messages(a.context, [answer(0)])
    mgr.trim_context(a)
    assert mgr.last_metrics is not None and mgr.last_metrics.prefix_stable is True


# -- sync and async --------------------------------------------------------------------------------------------------


async def test_async_trim_awaits_an_async_summarizer() -> None:
    calls: list[int] = []

    async def summarizer(messages: list[Message]) -> str:
        await asyncio.sleep(0)
        calls.append(len(messages))
        return "short summary"

    msgs: list[Message] = [SYSTEM]
    for i in range(20):
        msgs += [user(i, "alpha " * 30), answer(i, "beta " * 30)]
    mgr: TokenBudgetContextManager[AgentState] = TokenBudgetContextManager(
        int(tokens(msgs) * 0.98), 0, summarizer=summarizer
    )
    state = await mgr.atrim_context(state_of(msgs))
    assert calls and state.context_summary == "short summary"
    assert mgr.last_metrics is not None and mgr.last_metrics.summaries_made == 1


async def test_sync_trim_inside_a_running_loop() -> None:
    msgs: list[Message] = [SYSTEM]
    for i in range(20):
        msgs += [user(i, "alpha " * 30), answer(i, "beta " * 30)]
    quiet: TokenBudgetContextManager[AgentState] = TokenBudgetContextManager(100_000, 0, summarizer=lambda m: "s")
    assert quiet.trim_context(state_of(msgs)).context == msgs  # nothing to summarize: fine inside a loop
    busy: TokenBudgetContextManager[AgentState] = TokenBudgetContextManager(
        int(tokens(msgs) * 0.98), 0, summarizer=lambda m: "s"
    )
    state = state_of(msgs)
    with pytest.raises(RuntimeError, match="atrim_context"):
        busy.trim_context(state)
    assert state.context == msgs and state.context_summary is None
    done = await busy.atrim_context(state)
    assert done.context_summary == "s"


def test_text_blocks_keep_annotations_when_cut() -> None:
    from windowkeeper.blocks import AnnotationRef
    from windowkeeper.context.pointers import truncate_message

    msg = Message(
        message_id="x",
        role="user",
        content=[TextBlock(text="word " * 3000, annotations=[AnnotationRef(url="https://example.com")])],
    )
    cut = truncate_message(msg, 200, COUNTER)
    assert cut is not None and COUNTER.count_message(cut) <= 200
    block = cut.content[0]
    assert isinstance(block, TextBlock) and block.annotations == msg.content[0].annotations  # type: ignore[union-attr]
    assert "[truncated " in block.text


def test_a_short_question_is_never_cut_into_a_longer_marker() -> None:
    """An oversized turn (a pasted log, a video clip, then "What went wrong?") was cut until it fit: with the log
    cut and the clip (which cannot be cut) still over, the next largest block was the 4-token question, which
    became the ~10-token marker, so the model lost the question and the turn grew. A cut that saves nothing is not
    made."""
    from windowkeeper.context.pointers import truncate_message

    question = TextBlock(text="What went wrong?")
    msg = Message(message_id="q", role="user", content=[TextBlock(text="ERROR at line 42\n" * 2000), question])
    cut = truncate_message(msg, 5, COUNTER)  # the log's marker alone costs more than that
    assert cut is not None and cut.content[1] == question
    assert "[truncated " in cut.content[0].text  # type: ignore[union-attr]
    assert COUNTER.count_message(cut) < COUNTER.count_message(msg)


# -- in a graph --------------------------------------------------------------------------------------------------------


def test_works_as_the_graph_context_manager() -> None:
    from windowkeeper.graph import END, Agent, InMemoryCheckpointer, StateGraph
    from windowkeeper.llm import ScriptedClient

    client = ScriptedClient(default=lambda req: "noted: " + "detail " * 40)
    manager: TokenBudgetContextManager[AgentState] = TokenBudgetContextManager(1200, 200)
    graph = StateGraph(context_manager=manager)
    graph.add_node("MAIN", Agent(client=client, trim_context=True))
    graph.add_edge("MAIN", END)
    graph.set_entry_point("MAIN")
    app = graph.compile(checkpointer=InMemoryCheckpointer())
    for i in range(25):
        app.invoke({"messages": [user(i, "remember item " * 15)]}, config={"thread_id": "budget"})
    sent = [req.messages for req in client.requests]
    assert len(sent) == 25
    for messages in sent:
        assert not validate(messages, "anthropic")
        assert COUNTER.count_messages(messages) <= manager.budget
    assert sent[-1][-1].message_id == "u24"
    assert sent[0][0].message_id == "u0" and sent[-1][0].message_id != "u0"  # old turns left the view
    stable = sum(
        1
        for prev, now in itertools.pairwise(sent)
        if [m.fingerprint() for m in now[: len(prev)]] == [m.fingerprint() for m in prev]
    )
    assert stable >= 15


def test_long_chat_replies_are_cleared_to_restorable_pointers_before_user_turns_are_dropped() -> None:
    reply = " ".join(f"Here is suggestion number {k}, with plenty of general advice attached." for k in range(40))
    chat: list[Message] = [SYSTEM]
    for i in range(12):
        chat.append(user(i, f"My sister Maya turned {20 + i} and I spent {i} hours on question"))
        chat.append(Message.text_message(f"Great question! {reply}", role="assistant", message_id=f"a{i}"))
    manager = TokenBudgetContextManager(max_tokens=5000, reserve_tokens=1000, keep_replies=2)
    original = {m.message_id: m.model_dump_json() for m in chat}
    state = manager.trim_context(state_of(chat))

    assert validate(state.context, "anthropic") == []
    assert tokens(state.context, state.context_summary) <= 4000
    kept_users = [m for m in state.context if m.role == "user"]
    replies = [m for m in state.context if m.role == "assistant"]
    cleared = [m for m in replies if is_offloaded(m)]
    assert cleared, "old long replies should become pointers"
    assert all("Great question!" in m.text() and "restorable" in m.text() for m in cleared)
    # the newest replies stay verbatim, and every user statement still in view is verbatim
    assert [m.message_id for m in replies if not is_offloaded(m)][-2:] == ["a10", "a11"]
    assert all(m.model_dump_json() == original[m.message_id] for m in kept_users)
    # clearing replies keeps more user turns than dropping whole turns would
    assert len(kept_users) > 4
    for msg in manager.restore_context(state):
        assert msg.model_dump_json() == original[msg.message_id]


def long_chat(turns: int, reply_words: int = 120) -> list[Message]:
    chat: list[Message] = [SYSTEM]
    for i in range(turns):
        chat.append(user(i, f"I adopted a cat named Tom{i} and paid ${100 + i} at the shelter. Any tips for"))
        advice = " ".join(f"Tip {k}: brush the coat gently and often." for k in range(reply_words // 8))
        chat.append(Message.text_message(f"Congratulations on Tom{i}! {advice}", role="assistant", message_id=f"a{i}"))
    return chat


def test_reply_pointer_keeps_first_sentence_size_and_other_blocks() -> None:
    thinking = ReasoningBlock(text="weighing options", signature="sig-1")
    reply = Message(
        role="assistant",
        message_id="a9",
        content=[thinking, TextBlock(text="Short answer: yes, it is safe. Here are the details.\nMore lines.")],
    )
    cleared = clear_reply(reply, tokens_before=200)
    assert cleared is not None
    assert cleared.message_id == "a9" and cleared.content[0] == thinking
    text = cleared.text()
    assert '"Short answer: yes, it is safe."' in text and "64 chars" in text and "restorable" in text
    assert cleared.metadata[OFFLOAD_KEY] == {"kind": "cleared", "tokens_before": 200, "original": reply.fingerprint()}
    tool_call = Message(role="assistant", content=[ToolCallBlock(id="x", name="f")])
    assert clear_reply(tool_call, tokens_before=50) is None


def test_a_reply_pointer_quotes_what_was_said_not_the_json_of_parts_no_format_models() -> None:
    """An Anthropic reply that ran a server-side web search holds the call and its results as stand-ins (text
    blocks holding their JSON): its pointer began with that JSON (``it began "[unknown server_tool_use] {..."``)
    and counted its characters as said. The stand-ins leave with the text (a server tool's call and its result go
    together); the pointer quotes the text and names their kinds."""
    from windowkeeper.llm.formats import from_anthropic

    search = {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {"query": "trams"}}
    found = {"type": "web_search_tool_result", "tool_use_id": "srvtoolu_1", "content": []}
    said = {"type": "text", "text": "Lisbon's trams run until midnight. Line 28 is the scenic one."}
    reply = from_anthropic(
        None, [{"role": "user", "content": "Trams?"}, {"role": "assistant", "content": [search, found, said]}]
    )[1]
    cleared = clear_reply(reply, tokens_before=400)
    assert cleared is not None and [b.type for b in cleared.content] == ["text"]
    text = cleared.text()
    assert 'it began "Lisbon\'s trams run until midnight."' in text and f"{len(said['text'])} chars" in text
    assert "it also held server_tool_use, web_search_tool_result]" in text and "srvtoolu_1" not in text
    step = from_anthropic(
        None, [{"role": "user", "content": "Search."}, {"role": "assistant", "content": [search, found]}]
    )
    alone = clear_reply(step[1], tokens_before=300)
    assert alone is not None and alone.text().startswith("[earlier assistant turn cleared from context")
    assert alone.text().endswith("it held server_tool_use, web_search_tool_result]")


def test_summaries_are_made_from_the_original_text_of_cleared_replies() -> None:
    seen: list[Message] = []

    def summarizer(messages: list[Message], previous: str | None) -> str:
        seen.extend(messages)
        return f"{len(messages)} messages"

    chat = long_chat(45)
    manager: TokenBudgetContextManager[AgentState] = TokenBudgetContextManager(
        3000, 0, summarizer=summarizer, keep_replies=1
    )
    state = manager.trim_context(state_of(chat))
    assert any(is_offloaded(m) for m in state.context)
    gone = [m for m in seen if m.role == "assistant"]
    assert gone and not any(is_offloaded(m) for m in gone)
    originals = {m.message_id: m for m in chat}
    assert all(m is originals[m.message_id] for m in gone)


def test_reply_clearing_can_be_turned_off() -> None:
    chat = long_chat(20)
    off: TokenBudgetContextManager[AgentState] = TokenBudgetContextManager(3000, 0, clear_reply_min_tokens=None)
    on: TokenBudgetContextManager[AgentState] = TokenBudgetContextManager(3000, 0)
    plain = off.trim_context(state_of(chat)).context
    cleared = on.trim_context(state_of(chat)).context
    assert not any(is_offloaded(m) for m in plain)
    assert sum(m.role == "user" for m in cleared) > sum(m.role == "user" for m in plain)
    # the newest replies stay whole under the default keep_replies=3
    assert [m.message_id for m in cleared if m.role == "assistant" and not is_offloaded(m)][-3:] == [
        "a17",
        "a18",
        "a19",
    ]


def test_condensing_passes_the_running_summary_as_previous_summary() -> None:
    calls: list[tuple[list[str], str | None, int, str | None]] = []

    def summarizer(messages: list[Message], previous: str | None, *, max_tokens: int, instructions: str | None) -> str:
        calls.append(([m.message_id for m in messages], previous, max_tokens, instructions))
        return "condensed" if not messages else "more facts " * 40

    chat = long_chat(30)
    manager: TokenBudgetContextManager[AgentState] = TokenBudgetContextManager(
        3000, 0, summarizer=summarizer, summary_budget=120
    )
    state = manager.trim_context(state_of(chat, context_summary="old fact " * 30))
    condense = [c for c in calls if not c[0]]
    assert condense, calls
    _, previous, max_tokens, instructions = condense[0]
    assert previous is not None and previous.startswith("old fact") and previous.endswith("more facts")
    assert max_tokens == 120 * 7 // 8 and instructions is not None and "running summary" in instructions
    assert state.context_summary == "condensed"


def test_a_messages_only_summarizer_condenses_the_summary_as_a_document() -> None:
    calls: list[list[Message]] = []

    def summarizer(messages: list[Message]) -> str:
        calls.append(messages)
        return "short" if messages[0].message_id == CONDENSE_DOCUMENT_ID else "fact " * 60

    manager: TokenBudgetContextManager[AgentState] = TokenBudgetContextManager(
        3000, 0, summarizer=summarizer, summary_budget=40
    )
    state = manager.trim_context(state_of(long_chat(30)))
    documents = [c for c in calls if c[0].message_id == CONDENSE_DOCUMENT_ID]
    assert len(documents) >= 1 and len(documents[0]) == 1
    assert documents[0][0].text().startswith("fact fact")
    assert state.context_summary == "short"
