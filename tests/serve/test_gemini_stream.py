"""Gemini server-sent events through the gateway's recall filter (`streaming.CallFilter`), event by event, in the
shapes Gemini sends that the fake server does not: text and a call in one event, a closing event without parts,
a call without an id, a stream that calls only the client's tools. And threads scoped by a key sent as ``?key=``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx

from windowkeeper.serve import ServeConfig
from windowkeeper.serve.protocols import LIMIT_NOTE, GenerateContent, StreamGenerateContent, gemini_protocol
from windowkeeper.serve.streaming import CallFilter, Carried, EventSplitter
from windowkeeper.testing.fake_servers import FakeGeminiServer

from .harness import BIG_OUTPUT, running

STREAM = StreamGenerateContent()


def _event(parts: list[dict[str, Any]], finish: bool = False, **extra: Any) -> bytes:
    candidate: dict[str, Any] = {"content": {"role": "model", "parts": parts}, "index": 0}
    if finish:
        candidate["finishReason"] = "STOP"
    return f"data: {json.dumps({'candidates': [candidate], **extra})}\r\n\r\n".encode()


def _run(events: list[bytes], carried: Carried | None = None) -> tuple[CallFilter, list[bytes]]:
    filt = CallFilter(STREAM, "recall", carried or Carried())
    splitter = EventSplitter()
    out = [raw for event in splitter.feed(b"".join(events)) for raw in filt.feed(event)]
    return filt, out


def _payloads(raws: list[bytes]) -> list[dict[str, Any]]:
    return [json.loads(raw.decode().removeprefix("data: ")) for raw in raws]


def _parts(payload: dict[str, Any]) -> list[Any]:
    return payload["candidates"][0]["content"]["parts"]


def test_text_beside_a_recall_call_reaches_the_client_when_the_gateway_goes_on() -> None:
    recall = {"functionCall": {"name": "recall", "args": {"query": "port"}}, "thoughtSignature": "c2ln"}
    filt, out = _run([_event([{"text": "Let me "}]), _event([{"text": "check."}, recall], finish=True)])
    assert _payloads(out) == [
        {"candidates": [{"content": {"role": "model", "parts": [{"text": "Let me "}]}, "index": 0}]}
    ]
    assert filt.recall_only and [c.name for c in filt.our_calls()] == ["recall"]
    (going_on,) = _payloads(filt.continuing())
    assert _parts(going_on) == [{"text": "check."}, {"text": "", "thoughtSignature": "c2ln"}]
    assert "finishReason" not in going_on["candidates"][0]  # the next round's last event brings it
    # the model's turn, for the follow-up: the streamed text joined, the call as it came (signed, no id)
    turn = filt.reply()["candidates"][0]["content"]
    assert turn == {"role": "model", "parts": [{"text": "Let me check."}, recall]}
    body = STREAM.follow_up({"contents": []}, filt.reply(), {filt.our_calls()[0].id: "port 8080"})
    assert body["contents"][-1] == {
        "role": "user",
        "parts": [{"functionResponse": {"name": "recall", "response": {"result": "port 8080"}}}],
    }


def test_a_closing_event_left_without_parts_gives_its_finish_to_the_last_event_with_parts() -> None:
    """google-genai's chat drops a turn with an event without parts, or with no finishReason."""
    mine = {"functionCall": {"name": "sh", "args": {"cmd": "ls"}, "id": "c1"}}
    recall = {"functionCall": {"name": "recall", "args": {"query": "x"}}}
    usage = {"promptTokenCount": 900, "candidatesTokenCount": 12}
    filt, out = _run([_event([mine]), _event([recall], finish=True, usageMetadata=usage)])
    assert out == [] and not filt.recall_only
    (closing,) = _payloads(filt.closing(exhausted=False))
    assert _parts(closing) == [mine]
    assert closing["candidates"][0]["finishReason"] == "STOP" and closing["usageMetadata"] == usage


def test_a_stream_of_the_clients_calls_only_is_relayed_byte_for_byte() -> None:
    """Held from the call on, and relayed as they came: the closing event without parts too."""
    events = [
        _event([{"text": "Running."}]),
        _event([{"functionCall": {"name": "sh", "args": {}}}]),
        _event([], finish=True, usageMetadata={"promptTokenCount": 5}),
    ]
    filt, out = _run(events)
    assert out == [events[0].replace(b"\r\n", b"\n")]
    assert filt.closing(exhausted=False) == [e.replace(b"\r\n", b"\n") for e in events[1:]]


def test_out_of_rounds_the_last_event_carries_the_note() -> None:
    recall = {"functionCall": {"name": "recall", "args": {"query": "x"}}}
    filt, out = _run([_event([recall], finish=True)], Carried(continued=True, shown=True))
    assert out == []
    (closing,) = _payloads(filt.closing(exhausted=True))
    assert _parts(closing) == [{"text": LIMIT_NOTE}] and closing["candidates"][0]["finishReason"] == "STOP"


def test_the_route_of_each_gemini_path() -> None:
    assert isinstance(gemini_protocol("/v1beta/models/gemini-2.5-pro:generateContent", ""), GenerateContent)
    tuned = gemini_protocol("/v1beta/tunedModels/mine:streamGenerateContent", "key=k&alt=sse")
    assert isinstance(tuned, StreamGenerateContent) and not tuned.json_stream
    array = gemini_protocol("/v1/models/m:streamGenerateContent", "")
    assert array is not None and array.json_stream and not array.can_offer_tools({})
    assert gemini_protocol("/v1beta/models/m:countTokens", "") is None
    assert gemini_protocol("/v1/chat/completions", "") is None


def test_a_key_sent_as_a_query_parameter_scopes_the_threads(tmp_path: Path) -> None:
    """Threads are scoped by the client's credential: a Gemini key in ``?key=`` is one too, so another key's
    client sending the same conversation does not continue this one's thread."""
    contents = [
        {"role": "user", "parts": [{"text": "start"}]},
        {"role": "model", "parts": [{"text": BIG_OUTPUT[:300]}]},
        {"role": "user", "parts": [{"text": "next"}]},
    ]
    with FakeGeminiServer() as upstream:
        config = ServeConfig(store=f"sqlite:///{tmp_path / 'k.sqlite3'}", gemini_base_url=upstream.url)
        with running(config) as gw:
            url = f"{gw.url}/v1beta/models/m:generateContent"

            def thread(key: str, items: list[dict[str, Any]]) -> str:
                answer = httpx.post(f"{url}?key={key}", json={"contents": items})
                answer.raise_for_status()
                return answer.headers["x-windowkeeper-thread"]

            first = thread("a", contents)
            longer = [
                *contents,
                {"role": "model", "parts": [{"text": "ok"}]},
                {"role": "user", "parts": [{"text": "more"}]},
            ]
            assert thread("a", longer) == first
            assert thread("b", longer) != first
        assert {r.query["key"][0] for r in upstream.requests} == {"a", "b"}
