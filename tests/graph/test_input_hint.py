"""A new user's first ``invoke`` often passes a provider dict (``{"role": "user", "content": "hi"}``) or a bare
string as a message; the error was pydantic's ("Input should be a valid list") with no word on what to pass. It
now names the fix: ``Message.text_message(...)``, or ``from_openai_chat`` for a list of provider dicts."""

from __future__ import annotations

from typing import Any

import pytest

from windowkeeper import END, Agent, ConfigurationError, Message, StateGraph
from windowkeeper.llm import ScriptedClient


def _graph() -> Any:
    graph = StateGraph()
    graph.add_node("MAIN", Agent(client=ScriptedClient(["ok"]), system_prompt="x"))
    graph.add_edge("MAIN", END)
    graph.set_entry_point("MAIN")
    return graph.compile()


@pytest.mark.parametrize("item", ["hi", {"role": "user", "content": "hi"}])
def test_a_string_or_a_provider_dict_is_told_how_to_make_a_message(item: Any) -> None:
    with pytest.raises(ConfigurationError) as caught:
        _graph().invoke({"messages": [Message.text_message("first"), item]})
    text = str(caught.value)
    assert text.startswith("input['messages'][1] is not a valid Message")
    assert "Message.text_message(" in text
    if isinstance(item, dict):
        assert "from_openai_chat" in text


def test_a_message_dump_still_validates() -> None:
    dumped = Message.text_message("hi").model_dump(mode="json")
    assert _graph().invoke({"messages": [dumped]})["messages"][-1].text() == "ok"
