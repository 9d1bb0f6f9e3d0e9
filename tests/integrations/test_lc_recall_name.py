"""A tool of the caller's named ``recall`` beside `WindowkeeperMiddleware` in ``create_agent``."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from windowkeeper.testing.fake_servers import FakeOpenAIServer, FakeReply

from .runners import chat_model

pytest.importorskip("langchain_openai")


def recall(key: str) -> str:
    """A saved preference of the user, by key.

    Args:
        key: The preference's key.
    """
    return f"preference {key}"


def test_a_tool_of_the_callers_named_recall_is_warned_about_once(caplog: pytest.LogCaptureFixture) -> None:
    """``create_agent`` keeps one tool per name, so the caller's ``recall`` silently took the place of the
    middleware's: the pointers then (rightly) tell the model to ask the user, and nothing said why."""
    from langchain.agents import create_agent
    from langchain_core.messages import HumanMessage
    from langchain_core.tools import tool

    from windowkeeper.integrations.langchain import WindowkeeperMiddleware

    with FakeOpenAIServer([FakeReply(text="one"), FakeReply(text="two")]) as srv:
        agent = create_agent(chat_model(srv), tools=[tool(recall)], middleware=[WindowkeeperMiddleware(8000)])
        with caplog.at_level(logging.WARNING, logger="windowkeeper.integrations.langchain"):
            state: Any = agent.invoke({"messages": [HumanMessage("hi")]})
            agent.invoke({"messages": [*state["messages"], HumanMessage("again")]})
    warned = [r.getMessage() for r in caplog.records if "recall" in r.getMessage()]
    assert len(warned) == 1, warned
    assert "'recall'" in warned[0] and "rename" in warned[0].lower()


def test_no_warning_without_a_tool_of_that_name(caplog: pytest.LogCaptureFixture) -> None:
    from langchain.agents import create_agent
    from langchain_core.messages import HumanMessage

    from windowkeeper.integrations.langchain import WindowkeeperMiddleware

    with FakeOpenAIServer([FakeReply(text="one")]) as srv:
        agent = create_agent(chat_model(srv), tools=[], middleware=[WindowkeeperMiddleware(8000)])
        with caplog.at_level(logging.WARNING, logger="windowkeeper.integrations.langchain"):
            agent.invoke({"messages": [HumanMessage("hi")]})
    assert not [r for r in caplog.records if "recall" in r.getMessage()]
