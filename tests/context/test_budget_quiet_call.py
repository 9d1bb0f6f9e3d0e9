"""The budget manager's common call (messages appended, under the high watermark) is finished on a short path, and
its metrics are built only when read: both must give what the general path gives.

A thread fed equal copies of its view each call (as a checkpointer reloads it) never takes the short path, so
driving one live thread and one reloaded thread with the same messages compares the two paths call by call.
"""

from __future__ import annotations

import asyncio
import pickle

from windowkeeper.blocks import ToolCallBlock, ToolResultBlock
from windowkeeper.context.budget import TokenBudgetContextManager, request_tools
from windowkeeper.context.metrics import TrimMetrics
from windowkeeper.messages import Message
from windowkeeper.state import AgentState
from windowkeeper.tokens import default_counter


def turn(i: int) -> list[Message]:
    """One user turn with a tool call, its result and a reply; every fifth turn a system message comes first."""
    out: list[Message] = []
    if i % 5 == 4:
        out.append(Message.text_message(f"Note {i}: be brief.", role="system", message_id=f"s{i}"))
    out += [
        Message.text_message(f"Question {i}: what about item {i * 7}?", role="user", message_id=f"u{i}"),
        Message(
            message_id=f"c{i}",
            role="assistant",
            content=[ToolCallBlock(id=f"call_{i}", name="lookup", args={"item": i * 7})],
        ),
        Message.tool_message(
            [ToolResultBlock(call_id=f"call_{i}", output=f"item {i * 7}: " + "details " * (20 + i % 40))],
            message_id=f"r{i}",
        ),
        Message.text_message(f"Item {i * 7} is fine. " + "More words here. " * (i % 9), message_id=f"a{i}"),
    ]
    return out


def without_duration(metrics: TrimMetrics | None) -> dict[str, object]:
    assert metrics is not None
    return metrics.model_dump(exclude={"duration_s"})


def manager() -> TokenBudgetContextManager[AgentState]:
    return TokenBudgetContextManager(max_tokens=3000, reserve_tokens=500, counter=default_counter(), recall=False)


def test_appending_calls_match_the_general_path_call_by_call() -> None:
    live_manager, reloaded_manager = manager(), manager()
    live, reloaded = AgentState(), AgentState()
    quiet = calls = 0
    for i in range(120):
        for message in turn(i):
            live.context = [*live.context, message]
            reloaded.context = [*(m.model_copy() for m in reloaded.context), message.model_copy()]
            if i % 7 == 3:  # a scratchpad change: the system text's cost changes
                live.scratchpad = reloaded.scratchpad = f"- item {i}"
            with request_tools(40 if i % 11 == 5 else 0):  # the request's tools change the count too
                live = live_manager.trim_context(live)
                reloaded = asyncio.run(reloaded_manager.atrim_context(reloaded))
            assert [m.fingerprint() for m in live.context] == [m.fingerprint() for m in reloaded.context]
            assert live.context_summary == reloaded.context_summary
            assert without_duration(live_manager.last_metrics) == without_duration(reloaded_manager.last_metrics)
            quiet += not live_manager.last_metrics.tokens_saved  # type: ignore[union-attr]
            calls += 1
    assert calls / 2 < quiet < calls  # both paths were taken: compactions happened, most calls appended
    live_totals = live_manager.metrics_total.model_dump(exclude={"duration_s"})
    assert live_totals == reloaded_manager.metrics_total.model_dump(exclude={"duration_s"})


def test_lazy_metrics_read_the_same_from_every_accessor_and_survive_pickling_the_recorder() -> None:
    m = manager()
    state = AgentState()
    seen: list[TrimMetrics] = []
    for i in range(90):  # over 256 calls: totals are added in batches
        for message in turn(i):
            state.context = [*state.context, message]
            state = m.trim_context(state)
            last = m.last_metrics
            assert last is not None and m.metrics_for("default") is last and m.last_metrics is last
            assert sum(last.zones.values()) - last.zones["reserve"] == last.tokens_after
            seen.append(last)
    totals = m.metrics_total
    assert totals.calls == len(seen) > 256
    assert totals.tokens_before == sum(s.tokens_before for s in seen)
    assert totals.tokens_saved == sum(s.tokens_saved for s in seen)
    assert totals.messages_after == sum(s.messages_after for s in seen)
    assert totals.tool_results_cleared == sum(s.tool_results_cleared for s in seen)
    assert totals.prefix_stable_calls == sum(1 for s in seen if s.prefix_stable)
    copy = pickle.loads(pickle.dumps(m._metrics))  # a recorder travels with a copied or pickled manager
    assert copy.last == m.last_metrics and copy.for_thread("default") == m.last_metrics
    assert copy.totals.model_dump(exclude={"duration_s"}) == totals.model_dump(exclude={"duration_s"})
    m.reset_metrics()
    assert m.last_metrics is None and m.metrics_total.calls == 0


def test_a_sync_call_that_yields_nothing_runs_inside_a_running_loop() -> None:
    m = manager()

    async def inside() -> AgentState:
        return m.trim_context(AgentState(context=turn(0)))

    state = asyncio.run(inside())
    assert [x.message_id for x in state.context] == ["u0", "c0", "r0", "a0"]
