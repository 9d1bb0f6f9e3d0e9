"""Each adapter, driven by its real host package against the fake OpenAI server for the whole scripted session.

Acceptance of issue 10, measured on the requests the server captured: every request is a valid OpenAI sequence,
the running summary is in every request after the first one that carries it, and the share of prefix-stable
requests is within 2 points of windowkeeper's own Agent on the same session.
"""

from __future__ import annotations

import asyncio

import pytest

from . import runners
from .scenario import CALLS, Report, analyze

pytest.importorskip("langchain_openai")


@pytest.fixture(scope="module")
def baseline() -> dict[str, Report]:
    """windowkeeper's own Agent on the same session, once per API style (run in its own event loop)."""
    return {
        "chat": analyze(asyncio.run(runners.run_windowkeeper_agent("chat")), "chat"),
        "responses": analyze(asyncio.run(runners.run_windowkeeper_agent("responses")), "responses"),
    }


def _accept(report: Report, base: Report) -> None:
    assert report.calls == base.calls == CALLS >= 30
    assert report.problems == []
    assert report.first_summary is not None and report.first_summary < CALLS // 2
    assert report.missing_summary == []
    assert base.problems == [] and base.missing_summary == []
    assert abs(report.stable_share - base.stable_share) <= 0.02, (report.line("adapter"), base.line("Agent"))


async def test_langchain_middleware_async(baseline: dict[str, Report]) -> None:
    requests, middleware = await runners.run_langchain(use_async=True)
    _accept(analyze(requests, "chat"), baseline["chat"])
    assert middleware.last_result is not None and middleware.last_result.thread_id == "t1"


async def test_langchain_middleware_sync(baseline: dict[str, Report]) -> None:
    requests, _ = await runners.run_langchain(use_async=False)
    _accept(analyze(requests, "chat"), baseline["chat"])


async def test_langgraph_pre_model_hook_async(baseline: dict[str, Report]) -> None:
    requests, hook = await runners.run_langgraph(use_async=True)
    _accept(analyze(requests, "chat"), baseline["chat"])
    assert hook.hook.last_result.thread_id == "t1"


async def test_langgraph_pre_model_hook_sync(baseline: dict[str, Report]) -> None:
    requests, _ = await runners.run_langgraph(use_async=False)
    _accept(analyze(requests, "chat"), baseline["chat"])


async def test_openai_agents_input_filter(baseline: dict[str, Report]) -> None:
    requests, model_filter = await runners.run_openai_agents()
    report = analyze(requests, "responses")
    _accept(report, baseline["responses"])
    # the summary reaches the model in the Responses' native place: the instructions
    last = requests[-1].json
    assert "Summary of the earlier conversation" in last["instructions"]
    assert model_filter.last_result is not None
