"""Graph definition errors are caught by `compile`, with the offending node names in the message."""

from __future__ import annotations

import pytest

from windowkeeper import AgentState, ConfigurationError, GraphCompileError, Message
from windowkeeper.graph import END, START, InMemoryCheckpointer, StateGraph


def reply(state: AgentState) -> Message:
    return Message.text_message("hi", role="assistant")


def test_missing_entry_point_names_the_nodes() -> None:
    graph = StateGraph()
    graph.add_node("A", reply)
    graph.add_edge("A", END)
    with pytest.raises(GraphCompileError, match=r"no entry point.*\['A'\]"):
        graph.compile()


def test_unknown_edge_target_is_named() -> None:
    graph = StateGraph()
    graph.add_node("A", reply)
    graph.add_edge("A", "B")
    graph.set_entry_point("A")
    with pytest.raises(GraphCompileError, match=r"edge 'A' -> 'B': unknown target node 'B'"):
        graph.compile()


def test_unknown_conditional_target_is_named() -> None:
    graph = StateGraph()
    graph.add_node("A", reply)
    graph.add_conditional_edges("A", lambda s: "x", {"x": "NOPE", "y": END})
    graph.set_entry_point("A")
    with pytest.raises(GraphCompileError, match=r"'A' -\['x'\]-> 'NOPE': unknown target node 'NOPE'"):
        graph.compile()


def test_unreachable_nodes_are_listed() -> None:
    graph = StateGraph()
    for name in ("A", "B", "C"):
        graph.add_node(name, reply)
    graph.add_edge(START, "A")
    graph.add_edge("A", END)
    graph.add_edge("B", "C")
    with pytest.raises(GraphCompileError, match=r"unreachable node\(s\) \['B', 'C'\].*'A'"):
        graph.compile()


def test_entry_point_must_exist() -> None:
    graph = StateGraph()
    graph.add_node("A", reply)
    graph.set_entry_point("MAIN")
    with pytest.raises(GraphCompileError, match=r"entry point 'MAIN' is not a node"):
        graph.compile()


def test_interrupt_on_unknown_node_and_interrupts_without_a_checkpointer() -> None:
    graph = StateGraph()
    graph.add_node("A", reply)
    graph.set_entry_point("A")
    with pytest.raises(GraphCompileError, match=r"interrupt on unknown node 'Z'"):
        graph.compile(checkpointer=InMemoryCheckpointer(), interrupt_before=["Z"])
    # no checkpointer: the graph keeps its threads in memory, so an interrupt can be resumed
    app = graph.compile(interrupt_before=["A"])
    paused = app.invoke({"messages": [Message.text_message("go", message_id="u1")]}, {"thread_id": "t"})
    assert paused["interrupted"] == "A" and [m.message_id for m in paused["messages"]] == ["u1"]
    resumed = app.invoke(None, {"thread_id": "t"})
    assert resumed["interrupted"] is None
    assert [m.role for m in resumed["state"].context] == ["user", "assistant"]


def test_node_parameter_the_graph_cannot_fill() -> None:
    def needs_user(state: AgentState, user_id: str) -> None:
        return None

    graph = StateGraph()
    graph.add_node("A", needs_user)
    graph.set_entry_point("A")
    with pytest.raises(GraphCompileError, match=r"node 'A': parameter 'user_id'"):
        graph.compile()


def test_builder_rejects_reserved_and_duplicate_names() -> None:
    graph = StateGraph()
    graph.add_node("A", reply)
    with pytest.raises(ConfigurationError, match="already in the graph"):
        graph.add_node("A", reply)
    with pytest.raises(ConfigurationError, match="reserved"):
        graph.add_node(END, reply)
    with pytest.raises(ConfigurationError, match="use add_conditional_edges"):
        graph.add_edge("A", END).add_edge("A", "B")


def test_state_argument_forms() -> None:
    class MyState(AgentState):
        user_id: str = ""

    assert StateGraph(MyState).state_cls is MyState
    template = MyState(user_id="u1")
    graph = StateGraph(template)
    assert graph.state_cls is MyState and graph.state_template is template
    with pytest.raises(ConfigurationError, match="AgentState"):
        StateGraph(dict)  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError, match="atrim_context"):
        StateGraph(context_manager=object())  # type: ignore[arg-type]


def test_add_node_with_function_only_uses_its_name() -> None:
    graph = StateGraph()
    graph.add_node(reply)
    graph.set_entry_point("reply")
    app = graph.compile()
    assert app.invoke({"messages": []})["messages"][-1].text() == "hi"
