"""The model's streamed turn as the gateway rebuilds it to continue the conversation after answering recall itself.

When the model calls the gateway's recall tool, the gateway answers and sends the model's turn back upstream with
the result. An Anthropic turn that also ran a server-side web search streamed the search call's input as JSON
deltas and the answer's citations as ``citations_delta`` events: the rebuilt turn kept the search call with an
empty input and the answer without its citations.
"""

from __future__ import annotations

import json
from typing import Any

from windowkeeper.serve.protocols import PROTOCOLS
from windowkeeper.serve.streaming import CallFilter, EventSplitter


def _sse(events: list[dict[str, Any]]) -> bytes:
    return b"".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n".encode() for e in events)


def _start(index: int, block: dict[str, Any]) -> dict[str, Any]:
    return {"type": "content_block_start", "index": index, "content_block": block}


def _delta(index: int, kind: str, **fields: Any) -> dict[str, Any]:
    return {"type": "content_block_delta", "index": index, "delta": {"type": kind, **fields}}


def _stop(index: int) -> dict[str, Any]:
    return {"type": "content_block_stop", "index": index}


def test_an_anthropic_turn_with_a_server_search_is_rebuilt_whole() -> None:
    citation = {
        "type": "web_search_result_location",
        "url": "https://x.test",
        "title": "X",
        "encrypted_index": "Eo8B",
        "cited_text": "runs until midnight",
    }
    result = {"type": "web_search_result", "url": "https://x.test", "title": "X", "encrypted_content": "abc"}
    found = {"type": "web_search_tool_result", "tool_use_id": "srvtoolu_1", "content": [result]}
    answer = "Line 28 runs until midnight."
    events = [
        {"type": "message_start", "message": {"id": "msg_1", "role": "assistant", "content": []}},
        _start(0, {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {}}),
        _delta(0, "input_json_delta", partial_json='{"query": '),
        _delta(0, "input_json_delta", partial_json='"trams"}'),
        _stop(0),
        _start(1, found),
        _stop(1),
        _start(2, {"type": "text", "text": ""}),
        _delta(2, "citations_delta", citation=citation),
        _delta(2, "text_delta", text=answer),
        _stop(2),
        _start(3, {"type": "tool_use", "id": "toolu_9", "name": "recall", "input": {}}),
        _delta(3, "input_json_delta", partial_json='{"query": "tram pass"}'),
        _stop(3),
        {"type": "message_delta", "delta": {"stop_reason": "tool_use"}},
        {"type": "message_stop"},
    ]
    calls = CallFilter(PROTOCOLS["/v1/messages"], "recall")
    relayed = [raw for event in EventSplitter().feed(_sse(events)) for raw in calls.feed(event)]
    assert calls.recall_only and not any(b"toolu_9" in raw for raw in relayed)  # the client never sees recall
    assert calls.reply()["content"] == [
        {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {"query": "trams"}},
        found,
        {"type": "text", "text": answer, "citations": [citation]},
        {"type": "tool_use", "id": "toolu_9", "name": "recall", "input": {"query": "tram pass"}},
    ]


def _chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    return {
        "id": "c1",
        "object": "chat.completion.chunk",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }


def test_a_chat_turn_that_called_recall_goes_back_upstream_with_its_reasoning() -> None:
    """DeepSeek's thinking mode refuses (400) a request whose assistant message with tool calls lacks the
    ``reasoning_content`` it was answered with. Continuing after recall, the gateway sent the model's turn back
    with its role, content and calls only, streamed or not; now its reasoning goes too, under its own key, and a
    reply-only key (``annotations``) does not."""
    protocol = PROTOCOLS["/v1/chat/completions"]
    call = {"index": 0, "id": "call_1", "type": "function", "function": {"name": "recall", "arguments": ""}}
    events = [
        _chunk({"role": "assistant", "reasoning_content": "The user asked about "}),
        _chunk({"reasoning_content": "an earlier order."}),
        _chunk({"tool_calls": [call]}),
        _chunk({"tool_calls": [{"index": 0, "function": {"arguments": '{"query": "order"}'}}]}),
        _chunk({}, "tool_calls"),
    ]
    streamed = CallFilter(protocol, "recall")
    body = b"".join(f"data: {json.dumps(e)}\n\n".encode() for e in events) + b"data: [DONE]\n\n"
    relayed = [raw for event in EventSplitter().feed(body) for raw in streamed.feed(event)]
    assert streamed.recall_only and not any(b"call_1" in raw for raw in relayed)
    request = {"model": "deepseek-v4-pro", "messages": [{"role": "user", "content": "Where is my order?"}]}
    turn = protocol.follow_up(request, streamed.reply(), {"call_1": "found"})["messages"][1]
    assert turn["reasoning_content"] == "The user asked about an earlier order."
    assert turn["tool_calls"][0]["function"] == {"name": "recall", "arguments": '{"query": "order"}'}

    message = {
        **turn,
        "annotations": [],
        "refusal": None,
        "audio": {"id": "audio_1", "data": "UklGR", "transcript": "x"},
    }
    reply = {"choices": [{"index": 0, "message": message, "finish_reason": "tool_calls"}]}
    sent = protocol.follow_up(request, reply, {"call_1": "found"})["messages"]
    assert sent[1] == {**turn, "audio": {"id": "audio_1"}}
    assert sent[2] == {"role": "tool", "tool_call_id": "call_1", "content": "found"}
