"""The fake provider servers at the HTTP level (plain urllib, no SDK)."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from typing import Any

import pytest

from windowkeeper.testing.fake_servers import FakeAnthropicServer, FakeGeminiServer, FakeOpenAIServer, FakeUsage


def _post(url: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    request = urllib.request.Request(
        url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json", "X-Test": "1"}
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def test_records_requests_and_replays_queue_in_order() -> None:
    with FakeOpenAIServer(["first"], default_text="default") as srv:
        srv.reply("second", tool_calls=[("f", {"a": 1})], usage=FakeUsage(input_tokens=3, output_tokens=4))
        srv.fail(503, "overloaded")
        assert srv.pending == 3
        status1, one = _post(srv.base_url + "/chat/completions", {"model": "m", "messages": []})
        status2, two = _post(srv.base_url + "/chat/completions?x=1", {"model": "m2", "messages": []})
        status3, three = _post(srv.base_url + "/responses", {"model": "m3", "input": []})
        status4, four = _post(srv.base_url + "/responses", {"model": "m4", "input": []})
    assert [status1, status2, status3, status4] == [200, 200, 503, 200]
    assert one["choices"][0]["message"]["content"] == "first"
    assert two["model"] == "m2"
    assert two["choices"][0]["finish_reason"] == "tool_calls"
    assert two["choices"][0]["message"]["tool_calls"][0]["function"] == {"name": "f", "arguments": '{"a": 1}'}
    assert two["usage"]["total_tokens"] == 7
    assert three == {"error": {"message": "overloaded", "type": "server_error", "param": None, "code": None}}
    assert four["output"][0]["content"][0]["text"] == "default"
    assert [r.path for r in srv.requests] == [
        "/v1/chat/completions",
        "/v1/chat/completions",
        "/v1/responses",
        "/v1/responses",
    ]
    assert srv.requests[1].query == {"x": ["1"]}
    assert srv.requests[0].headers["x-test"] == "1"
    assert srv.requests[2].json["model"] == "m3"


def test_unknown_route_is_404_and_not_recorded() -> None:
    with FakeAnthropicServer() as srv:
        status, body = _post(srv.url + "/v1/complete", {})
        assert status == 404
        assert body["type"] == "error" and "no route" in body["error"]["message"]
        assert srv.requests == []
        with pytest.raises(AssertionError, match="no request"):
            _ = srv.last_request


def test_gemini_shapes_and_model_from_path() -> None:
    with FakeGeminiServer() as srv:
        srv.reply("hi", reasoning="hmm", usage=FakeUsage(input_tokens=10, output_tokens=6, reasoning_tokens=2))
        srv.empty()
        _, body = _post(srv.url + "/v1beta/models/gemini-x:generateContent", {"contents": []})
        _, empty = _post(srv.url + "/v1beta/models/gemini-x:generateContent", {"contents": []})
    assert body["candidates"][0]["content"]["parts"] == [{"text": "hmm", "thought": True}, {"text": "hi"}]
    assert body["usageMetadata"] == {
        "promptTokenCount": 10,
        "candidatesTokenCount": 4,
        "totalTokenCount": 16,
        "thoughtsTokenCount": 2,
    }
    assert body["modelVersion"] == "gemini-x"
    assert "parts" not in empty["candidates"][0]["content"]


def test_not_running_server_has_no_port() -> None:
    srv = FakeOpenAIServer()
    with pytest.raises(RuntimeError, match="not running"):
        _ = srv.base_url
    srv.start()
    try:
        assert srv.base_url.startswith("http://127.0.0.1:") and srv.base_url.endswith("/v1")
    finally:
        srv.stop()
    srv.stop()
