"""A model's reply is normalised once, where it enters (`LLMResponse`), for every client: the Agent and the
summarizers read an assistant message whose tool calls are both blocks and their ``tools_calls`` mirror."""

from __future__ import annotations

from windowkeeper import Agent, AgentState, Message, TextBlock, ToolCallBlock
from windowkeeper.graph import END, InMemoryCheckpointer, StateGraph
from windowkeeper.llm import ScriptedClient
from windowkeeper.llm.client import LLMRequest, LLMResponse, assistant_message, tool_calls_dicts

RAW_CALL = {"id": "c1", "type": "function", "function": {"name": "lookup", "arguments": '{"q": "port"}'}}


class HandRolledClient:
    """A custom client (not built on `assistant_message`) that returns a user-role message with raw calls."""

    provider = "custom"
    model = "m"

    async def acomplete(self, request: LLMRequest) -> LLMResponse:
        return LLMResponse(message=Message(message_id="r1", role="user", content=[], tools_calls=[RAW_CALL]))


def test_a_reply_with_raw_calls_only_gets_its_blocks_and_the_assistant_role() -> None:
    reply = LLMResponse(
        message=Message(message_id="r1", role="user", content=[TextBlock(text="Checking.")], tools_calls=[RAW_CALL])
    ).message
    assert reply.role == "assistant" and reply.message_id == "r1"
    assert reply.content == [TextBlock(text="Checking."), ToolCallBlock(id="c1", name="lookup", args={"q": "port"})]
    assert reply.tools_calls == [RAW_CALL]


def test_a_reply_with_blocks_only_gets_its_mirror() -> None:
    call = ToolCallBlock(id="c2", name="read", args={"path": "a.py"})
    reply = LLMResponse(message=Message(role="assistant", content=[call])).message
    assert reply.tools_calls == tool_calls_dicts([call])


def test_a_built_in_clients_reply_is_taken_as_it_is() -> None:
    built = assistant_message([TextBlock(text="hi"), ToolCallBlock(id="c3", name="f", args={})])
    assert LLMResponse(message=built).message is built


def test_the_agent_stores_the_normalised_reply_of_any_client() -> None:
    graph = StateGraph()
    graph.add_node("MAIN", Agent(client=HandRolledClient()))
    graph.add_edge("MAIN", END)
    graph.set_entry_point("MAIN")
    result = graph.compile(checkpointer=InMemoryCheckpointer()).invoke(
        {"messages": [Message.text_message("Which port?", message_id="u1")]}, config={"thread_id": "t"}
    )
    state = result["state"]
    assert isinstance(state, AgentState)
    reply = state.context[-1]
    assert (reply.message_id, reply.role, reply.metadata["node"]) == ("r1", "assistant", "MAIN")
    assert reply.tool_call_blocks() == [ToolCallBlock(id="c1", name="lookup", args={"q": "port"})]
    assert any(isinstance(b, ToolCallBlock) for b in reply.content) and reply.tools_calls == [RAW_CALL]


def test_a_scripted_reply_reaches_the_state_unchanged_in_shape() -> None:
    client = ScriptedClient([Message(role="assistant", content=[ToolCallBlock(id="c4", name="f", args={"x": 1})])])
    graph = StateGraph()
    graph.add_node("MAIN", Agent(client=client))
    graph.add_edge("MAIN", END)
    graph.set_entry_point("MAIN")
    state = graph.compile().invoke({"messages": [Message.text_message("go", message_id="u1")]})["state"]
    reply = state.context[-1]
    assert reply.tools_calls == tool_calls_dicts([ToolCallBlock(id="c4", name="f", args={"x": 1})])
