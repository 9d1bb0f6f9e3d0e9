"""Threads survive the process: a second process continues a SQLite thread from the stored, trimmed state."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

from windowkeeper import Message
from windowkeeper.graph import SQLiteCheckpointer

SCRIPT = textwrap.dedent(
    """
    import sys
    from windowkeeper import Message
    from windowkeeper.context import MessageContextManager
    from windowkeeper.graph import END, Agent, SQLiteCheckpointer, StateGraph
    from windowkeeper.llm import ScriptedClient

    path, turn = sys.argv[1], int(sys.argv[2])
    client = ScriptedClient(default=lambda req: "seen " + ",".join(m.text() for m in req.messages if m.role == "user"))
    graph = StateGraph(context_manager=MessageContextManager(max_messages=2))
    graph.add_node("MAIN", Agent(client=client, trim_context=True))
    graph.add_edge("MAIN", END)
    graph.set_entry_point("MAIN")
    app = graph.compile(checkpointer=SQLiteCheckpointer(path))
    result = app.invoke({"messages": [Message.text_message(f"t{turn}", message_id=f"u{turn}")]}, {"thread_id": "p"})
    print(result["messages"][-1].text())
    """,
)


def _turn(path: Path, turn: int) -> str:
    proc = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(path), str(turn)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.strip()


def test_each_process_continues_the_thread_and_the_log_keeps_everything(tmp_path: Path) -> None:
    path = tmp_path / "threads.db"
    outputs = [_turn(path, turn) for turn in range(4)]
    assert outputs == ["seen t0", "seen t0,t1", "seen t1,t2", "seen t2,t3"]
    saver = SQLiteCheckpointer(path)
    log = saver.get_messages("p")
    assert [m.message_id for m in log if m.role == "user"] == ["u0", "u1", "u2", "u3"]
    assert [m.text() for m in log if m.role == "assistant"] == outputs
    state = saver.get_state("p")
    assert state is not None
    assert [m.text() for m in state.context] == ["t2", "seen t1,t2", "t3", "seen t2,t3"]
    assert state.execution_meta.status == "completed"
    assert state.execution_meta.thread_id == "p"
    saver.close()


def test_input_context_field_is_logged_like_messages() -> None:
    from windowkeeper.graph import END, InMemoryCheckpointer, StateGraph

    graph = StateGraph()
    graph.add_node("noop", lambda state: None)
    graph.add_edge("noop", END)
    graph.set_entry_point("noop")
    saver = InMemoryCheckpointer()
    app = graph.compile(checkpointer=saver)
    result = app.invoke({"context": [Message.text_message("via context", message_id="c1")]}, {"thread_id": "x"})
    assert [m.message_id for m in result["messages"]] == ["c1"]
    assert [m.message_id for m in saver.get_messages("x")] == ["c1"]
