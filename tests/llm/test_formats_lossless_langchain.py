"""A LangChain message windowkeeper cut to fit keeps what the cut did not change (issue 19).

A ``ToolMessage`` larger than the budget (the turn in progress) or a pasted ``HumanMessage`` is cut in its text and
written anew: it lost its ``artifact``, ``additional_kwargs`` and ``response_metadata``, and a content block of a
type the reader does not model went out as ``[unknown x] {...}`` text, with no warning.
"""

from __future__ import annotations

import warnings
from typing import Any

import pytest

from windowkeeper.integrations import Window

pytest.importorskip("langchain_core")

LOG = "\n".join(f"line {i} of the audit log" for i in range(3000))
BLOB = {"type": "x_blob", "v": 1}
IMAGE = {"type": "image", "url": "https://x.test/s.png"}


def _fit(items: list[Any]) -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # nothing is lost, so nothing is said
        return list(Window(budget=4_000, format="langchain", prompt_cache=False).fit(items).messages)[-1]


def test_a_tool_message_cut_to_fit_keeps_its_fields_and_blocks() -> None:
    from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

    tool = ToolMessage(
        content=[{"type": "text", "text": LOG}, BLOB, IMAGE],
        tool_call_id="c1",
        status="error",
        id="t1",
        name="f",
        artifact={"raw": 1},
        additional_kwargs={"x": 1},
        response_metadata={"r": 2},
    )
    call = AIMessage(content="", id="a1", tool_calls=[{"name": "f", "args": {}, "id": "c1", "type": "tool_call"}])
    sent = _fit([HumanMessage(content="go", id="h1"), call, tool])
    assert "[truncated " in sent.content[0]["text"]
    assert sent.content[1:] == [BLOB, IMAGE]
    mine, theirs = sent.model_dump(), tool.model_dump()
    assert {k: v for k, v in mine.items() if k != "content"} == {k: v for k, v in theirs.items() if k != "content"}


def test_a_human_message_cut_to_fit_keeps_its_fields_and_blocks() -> None:
    from langchain_core.messages import HumanMessage

    image = {"type": "image_url", "image_url": {"url": "https://x.test/s.png", "detail": "low"}}
    human = HumanMessage(
        content=[{"type": "text", "text": LOG}, image], id="h1", name="bob", additional_kwargs={"x": 1}
    )
    sent = _fit([human])
    assert "[truncated " in sent.content[0]["text"]
    assert sent.content[1] == image
    mine, theirs = sent.model_dump(), human.model_dump()
    assert {k: v for k, v in mine.items() if k != "content"} == {k: v for k, v in theirs.items() if k != "content"}
