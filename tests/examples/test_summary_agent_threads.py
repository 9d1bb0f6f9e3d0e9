"""The reference's summary-agent example summarizes across turns on one ``thread_id`` with a plain ``compile()``.

``examples/summary_agent.py`` is the reference's example with ``tenxgraph`` renamed; it is run as is (its module
code builds the graph with ``builder.compile()`` and makes the first call), with the official OpenAI SDK pointed at
a local fake server through the environment. The test then keeps talking to the very ``app`` the example built, on
the example's ``thread_id``, with turns long enough to pass the example's 8000-token trigger. Nothing about the
manager, the agent or the graph is changed: the summary can only happen because ``compile()`` keeps the thread.
"""

from __future__ import annotations

import dataclasses
import json
import runpy
from pathlib import Path
from typing import Any

import pytest

from windowkeeper import AgentState
from windowkeeper.context.summary import estimate_tokens
from windowkeeper.testing.fake_servers import FakeOpenAIServer, FakeReply, RecordedRequest

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "summary_agent.py"
AGENT_MODEL, SUMMARY_MODEL = "gpt-4o", "gpt-4o-mini"
TURNS = 14
REPLY = "Here is a detailed answer about the topic. " * 75  # ~3,200 characters, ~800 estimated tokens


class ModelAwareServer(FakeOpenAIServer):
    """Answers the summarizer model with a summary and the agent model with a long reply.

    The summary says whether the name Sam reached the summarizer, so the test can tell that facts travel
    through the summarizer rather than being invented by the fake.
    """

    def __init__(self) -> None:
        super().__init__()
        self.summaries = 0

    def render(self, reply: FakeReply, request: RecordedRequest) -> dict[str, Any]:
        body = request.json
        if body.get("model") == SUMMARY_MODEL:
            self.summaries += 1
            seen = json.dumps(body.get("input"))
            fact = "The user's name is Sam." if "Sam" in seen else "No name was given."
            reply = dataclasses.replace(reply, text=f"Summary {self.summaries}: {fact}")
        else:
            reply = dataclasses.replace(reply, text=REPLY)
        return super().render(reply, request)


def _agent_requests(server: FakeOpenAIServer) -> list[dict[str, Any]]:
    return [r.json for r in server.requests if r.json.get("model") == AGENT_MODEL]


def test_summary_agent_example_summarizes_across_turns_on_one_thread(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    server = ModelAwareServer()
    with server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "test-key")
        example = runpy.run_path(str(EXAMPLE), run_name="__main__")
        assert capsys.readouterr().out == REPLY + "\n"
        app, message_cls = example["app"], example["Message"]
        thread = {"thread_id": "summary-demo"}  # the example's own thread
        for turn in range(TURNS):
            text = f"Question {turn}: please explain part {turn} of the plan in detail. " * 12
            app.invoke({"messages": [message_cls.text_message(text)]}, config=thread)
        example["manager"].close()  # the summarizer it built keeps its connection on the sync calls' loop
        summaries = server.summaries
        agent_calls = _agent_requests(server)
        summarizer_calls = [r.json for r in server.requests if r.json.get("model") == SUMMARY_MODEL]

    state: AgentState = app.get_state(thread)
    log = app.checkpointer.get_messages("summary-demo")
    assert len(agent_calls) == TURNS + 1
    # the 8000-token trigger fired more than once, on this thread, through the example's summarizer model
    assert summaries >= 2 and len(summarizer_calls) == summaries
    assert state.context_summary is not None
    assert state.context_summary.startswith("Summary 1: The user's name is Sam.")
    assert f"Summary {summaries}:" in state.context_summary
    # the kept view is back under the trigger; the log kept every message of every turn
    assert estimate_tokens(state.context) <= 8000
    assert len(log) == 2 * (TURNS + 1) > len(state.context)
    assert log[0].text() == "Hi! Please remember my name: Sam."
    # once summarized, the agent's model sees the summary (in its instructions) and no longer the first turn
    last = agent_calls[-1]
    assert "Summary 1: The user's name is Sam." in last["instructions"]
    sent = json.dumps(last["input"])
    assert "Please remember my name" not in sent
    # the first request was the example's own first call, with only its message
    assert "Please remember my name" in json.dumps(agent_calls[0]["input"])
