"""What the compiled graph does with its context manager when it persists a run (`CompiledGraph._persist`).

It trims once more, so the snapshot is the managed view; a manager that fails there does not cost the run its
messages: the state is stored untrimmed and the failure is logged at ERROR, saying why.
"""

from __future__ import annotations

import logging

import pytest

from windowkeeper import AgentState, Message, MessageContextManager
from windowkeeper.graph import END, InMemoryCheckpointer, StateGraph


class Failing:
    """A manager whose every trim raises."""

    async def atrim_context(self, state: AgentState) -> AgentState:
        raise RuntimeError("index offline")


class WrongReturn:
    """A manager that forgets to return the state."""

    async def atrim_context(self, state: AgentState) -> None:
        return None


def _run(manager: object, saver: InMemoryCheckpointer) -> dict[str, object]:
    graph = StateGraph(context_manager=manager)  # type: ignore[arg-type]
    graph.add_node("reply", lambda state: Message.text_message("noted", role="assistant", message_id="a2"))
    graph.set_entry_point("reply")
    graph.add_edge("reply", END)
    history = [
        Message.text_message("first", message_id="u1"),
        Message.text_message("ok", role="assistant", message_id="a1"),
        Message.text_message("second", message_id="u2"),
    ]
    return graph.compile(checkpointer=saver).invoke({"messages": history}, config={"thread_id": "t"})


def test_the_stored_snapshot_is_the_managed_view_and_the_log_keeps_everything() -> None:
    saver = InMemoryCheckpointer()
    result = _run(MessageContextManager(max_messages=1), saver)
    stored = saver.get_state("t")
    assert stored is not None and result["status"] == "completed"
    assert [m.message_id for m in stored.context] == ["u2", "a2"]
    assert [m.message_id for m in saver.get_messages("t")] == ["u1", "a1", "u2", "a2"]


@pytest.mark.parametrize(
    ("manager", "said"),
    [
        (Failing(), "Failing.atrim_context raised while the run was being persisted; the state is stored untrimmed"),
        (WrongReturn(), "WrongReturn.atrim_context returned NoneType while the run was being persisted, not the state"),
    ],
    ids=["raises", "returns-none"],
)
def test_a_manager_failing_at_persist_keeps_the_run_and_says_why(
    manager: object, said: str, caplog: pytest.LogCaptureFixture
) -> None:
    saver = InMemoryCheckpointer()
    with caplog.at_level(logging.ERROR, logger="windowkeeper.graph.compiled"):
        result = _run(manager, saver)
    assert result["status"] == "completed"
    stored = saver.get_state("t")
    assert stored is not None and [m.message_id for m in stored.context] == ["u1", "a1", "u2", "a2"]
    assert [m.message_id for m in saver.get_messages("t")] == ["u1", "a1", "u2", "a2"]
    [record] = [r for r in caplog.records if r.levelno == logging.ERROR]
    assert said in record.getMessage() and "thread t" in record.getMessage()
    assert (record.exc_info is not None) == isinstance(manager, Failing)
