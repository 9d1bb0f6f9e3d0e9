"""BaseContextManager: the both-methods rule, generics, and the metrics every built-in manager records."""

from __future__ import annotations

import pytest

from windowkeeper.context import BaseContextManager, MessageContextManager, MetricsTotals, TrimMetrics
from windowkeeper.messages import Message
from windowkeeper.prompt import summary_section, system_message
from windowkeeper.state import AgentState, ExecMeta
from windowkeeper.tokens import default_counter


class OnlySync(BaseContextManager[AgentState]):
    def trim_context(self, state: AgentState) -> AgentState:
        return state


class OnlyAsync(BaseContextManager[AgentState]):
    async def atrim_context(self, state: AgentState) -> AgentState:
        return state


class Both(BaseContextManager[AgentState]):
    def __init__(self, n: int) -> None:  # deliberately no super().__init__()
        self.n = n

    def trim_context(self, state: AgentState) -> AgentState:
        state.context = state.context[-self.n :]
        return state

    async def atrim_context(self, state: AgentState) -> AgentState:
        return self.trim_context(state)


@pytest.mark.parametrize(("cls", "missing"), [(OnlySync, "atrim_context"), (OnlyAsync, "trim_context")])
def test_subclass_with_one_method_fails_at_instantiation(cls: type, missing: str) -> None:
    with pytest.raises(TypeError) as info:
        cls()
    text = str(info.value)
    assert "must implement both trim_context and atrim_context" in text
    assert f"missing: {missing}" in text
    assert cls.__name__ in text


def test_base_itself_cannot_be_instantiated() -> None:
    with pytest.raises(TypeError, match="both trim_context and atrim_context"):
        BaseContextManager()  # type: ignore[abstract]


def test_complete_subclass_without_super_init_has_metrics() -> None:
    mgr = Both(2)
    state = AgentState(context=[Message.text_message(str(i), message_id=f"m{i}") for i in range(4)])
    out = mgr.trim_context(state)
    assert [m.message_id for m in out.context] == ["m2", "m3"]
    assert mgr.last_metrics is None  # user code never records
    assert mgr.metrics_total == MetricsTotals()


def _msgs(*pairs: tuple[str, str]) -> list[Message]:
    return [Message.text_message(text, role=role, message_id=f"m{i}") for i, (role, text) in enumerate(pairs)]  # type: ignore[arg-type]


def test_metrics_count_tokens_exactly_and_track_prefix_stability() -> None:
    counter = default_counter()
    mgr: MessageContextManager[AgentState] = MessageContextManager(max_messages=1)
    ctx = _msgs(("system", "be brief"), ("user", "one"), ("assistant", "a1"), ("user", "two"))
    state = AgentState(context=list(ctx), execution_meta=ExecMeta(thread_id="T"))
    mgr.trim_context(state)
    m = mgr.last_metrics
    assert isinstance(m, TrimMetrics)
    assert [x.message_id for x in state.context] == ["m0", "m3"]
    assert m.tokens_before == counter.count_messages(ctx)
    assert m.tokens_after == counter.count_messages([ctx[0], ctx[3]])
    assert m.tokens_saved == m.tokens_before - m.tokens_after > 0
    assert (m.messages_before, m.messages_after) == (4, 2)
    assert m.prefix_stable is None  # first call on thread T
    assert m.summaries_made == 0 and m.tool_results_cleared == 0
    assert m.duration_s >= 0

    # the next call only appends: the previous view is a prefix of the new one
    state.context.append(Message.text_message("a2", role="assistant", message_id="m4"))
    mgr.trim_context(state)
    assert mgr.last_metrics is not None and mgr.last_metrics.prefix_stable is True

    # a new user turn pushes the old one out: the prefix changes
    state.context.append(Message.text_message("three", message_id="m5"))
    mgr.trim_context(state)
    assert mgr.last_metrics is not None and mgr.last_metrics.prefix_stable is False
    assert [x.message_id for x in state.context] == ["m0", "m5"]

    total = mgr.metrics_total
    assert total.calls == 3
    assert total.prefix_stable_calls == 1
    assert total.tokens_saved == total.tokens_before - total.tokens_after
    assert total.prefix_stable_ratio == pytest.approx(1 / 3)


def test_prefix_tracking_is_per_thread_and_summary_counts_as_system_message() -> None:
    counter = default_counter()
    mgr: MessageContextManager[AgentState] = MessageContextManager(max_messages=5)
    a = AgentState(context=_msgs(("user", "hi")), context_summary="Sam lives in Berlin.")
    a.execution_meta.thread_id = "A"
    b = AgentState(context=_msgs(("user", "other")))
    b.execution_meta.thread_id = "B"
    mgr.trim_context(a)
    # the summary is sent under its header in the one system text the prompt assembly builds
    summary_msg = system_message(summary_section("Sam lives in Berlin.") or "")
    assert mgr.last_metrics is not None
    assert mgr.last_metrics.tokens_before == counter.count_messages([summary_msg, *a.context])
    assert mgr.last_metrics.zones["summary"] == counter.count_message(summary_msg)
    mgr.trim_context(b)
    assert mgr.last_metrics is not None and mgr.last_metrics.prefix_stable is None
    mgr.trim_context(a)
    assert mgr.last_metrics is not None and mgr.last_metrics.prefix_stable is True
    a.context_summary = "changed"
    mgr.trim_context(a)
    assert mgr.last_metrics is not None and mgr.last_metrics.prefix_stable is False
    mgr.reset_metrics()
    assert mgr.metrics_total.calls == 0 and mgr.last_metrics is None
    mgr.trim_context(a)
    assert mgr.last_metrics is not None and mgr.last_metrics.prefix_stable is None


def test_metrics_total_is_a_copy() -> None:
    mgr: MessageContextManager[AgentState] = MessageContextManager()
    mgr.trim_context(AgentState())
    snapshot = mgr.metrics_total
    snapshot.calls = 99
    assert mgr.metrics_total.calls == 1


def test_managers_with_metrics_can_be_copied_and_pickled() -> None:
    import copy
    import pickle

    mgr: MessageContextManager[AgentState] = MessageContextManager(max_messages=1)
    mgr.trim_context(AgentState(context=_msgs(("user", "a"), ("user", "b"))))
    clone = copy.deepcopy(mgr)
    restored = pickle.loads(pickle.dumps(mgr))
    for other in (clone, restored):
        assert other.metrics_total.calls == 1
        other.trim_context(AgentState(context=_msgs(("user", "a"))))
        assert other.metrics_total.calls == 2
    assert mgr.metrics_total.calls == 1
