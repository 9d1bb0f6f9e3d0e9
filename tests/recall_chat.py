"""A chat for recall tests: one fact in the first turn, then filler turns that never refer back to it or to each other
(each filler word is made up for its turn, so no turn but a question about the fact can match it)."""

from __future__ import annotations

from typing import Any

from windowkeeper import Message, ToolCallBlock, ToolResultBlock
from windowkeeper.context.base import BaseContextManager
from windowkeeper.graph import Agent, StateGraph
from windowkeeper.llm import ScriptedClient
from windowkeeper.units import validate

FACT = "For the record: the staging database runs on host kestrel-4 at port 55432."
QUESTION = "Which host and port does staging use?"
SYLLABLES = ("ka", "lo", "mi", "ne", "su", "ta", "vo", "ri")


def word(n: int) -> str:
    """A made-up word of its own for each ``n``."""
    n += 64
    out = ""
    while n:
        n, digit = divmod(n, len(SYLLABLES))
        out += SYLLABLES[digit]
    return out


def turn_text(turn: int) -> str:
    if turn == 0:
        return FACT
    return f"Turn {turn}: today I tried the {word(turn)} recipe with {word(turn + 1000)} and {word(turn + 2000)}."


def tool_step(step: int) -> list[Message]:
    """One tool call and its result of about 120 tokens: the steps of a turn that must keep its recall message."""
    call = Message(
        role="assistant",
        content=[ToolCallBlock(id=f"c{step}", name="lookup", args={"n": step})],
        message_id=f"c{step}",
    )
    result = Message.tool_message(
        [ToolResultBlock(call_id=f"c{step}", output=f"row {step} " * 40)], message_id=f"r{step}"
    )
    return [call, result]


async def ask_in_graph(manager: BaseContextManager[Any], turns: int, **agent_options: Any) -> ScriptedClient:
    """Send ``turns`` user turns through a graph run by ``manager`` (thread ``"t"``), the last one asking `QUESTION`.

    Returns the scripted client with every request it got; each was checked valid for OpenAI and Anthropic.
    """
    client = ScriptedClient([f"Answer {i}: noted." for i in range(turns)])
    graph = StateGraph(context_manager=manager)
    graph.add_node("MAIN", Agent(client=client, trim_context=True, **agent_options))
    graph.set_entry_point("MAIN")
    app = graph.compile()
    for turn in range(turns):
        text = QUESTION if turn == turns - 1 else turn_text(turn)
        await app.ainvoke({"messages": [Message.text_message(text, message_id=f"u{turn}")]}, {"thread_id": "t"})
    for request in client.requests:
        for provider in ("openai", "anthropic"):
            assert validate(request.messages, provider) == []
    return client
