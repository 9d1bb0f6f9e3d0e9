"""The managed Gemini route, through the official google-genai client over real sockets.

``POST /{version}/models/{model}:generateContent`` and ``:streamGenerateContent?alt=sse`` are managed like the
other routes: the list is ``contents``, the system text ``systemInstruction``, the gateway's recall tool one more
``functionDeclarations`` entry that the client never sees; every other Gemini method is relayed unchanged to the
Gemini upstream, and a Gemini key reaches no other host.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

genai = pytest.importorskip("google.genai")
from google.genai import errors, types  # noqa: E402

from windowkeeper.serve import ServeConfig  # noqa: E402
from windowkeeper.serve.protocols import LIMIT_NOTE  # noqa: E402
from windowkeeper.serve.recall import MAX_ROUNDS  # noqa: E402
from windowkeeper.testing.fake_servers import (  # noqa: E402
    FakeAnthropicServer,
    FakeGeminiServer,
    FakeOpenAIServer,
    FakeToolCall,
)

from .harness import BIG_OUTPUT, Gateway, process, running  # noqa: E402

MODEL = "gemini-2.5-flash"
SH = types.Tool(
    function_declarations=[
        types.FunctionDeclaration(
            name="sh",
            description="Run a shell command.",
            parameters_json_schema={"type": "object", "properties": {"cmd": {"type": "string"}}},
        )
    ]
)


@pytest.fixture
def gemini_server() -> Iterator[FakeGeminiServer]:
    with FakeGeminiServer(signatures=True) as srv:
        yield srv  # type: ignore[misc]


@pytest.fixture
def upstreams() -> Iterator[tuple[FakeOpenAIServer, FakeAnthropicServer]]:
    with FakeOpenAIServer() as openai_srv, FakeAnthropicServer() as anthropic_srv:
        yield openai_srv, anthropic_srv  # type: ignore[misc]


@pytest.fixture
def start(
    tmp_path: Path, gemini_server: FakeGeminiServer, upstreams: tuple[FakeOpenAIServer, FakeAnthropicServer]
) -> Iterator[Any]:
    """``start(budget)``: a gateway in front of the fake Gemini (and OpenAI, Anthropic) upstreams."""
    started: list[Any] = []

    def make(budget: int = 128_000, **settings: Any) -> Gateway:
        config = ServeConfig(
            budget=budget,
            store=f"sqlite:///{tmp_path / f'gw{len(started)}.sqlite3'}",
            openai_base_url=upstreams[0].base_url,
            anthropic_base_url=upstreams[1].url,
            gemini_base_url=gemini_server.url,
            **settings,
        )
        ctx = running(config)
        started.append(ctx)
        return ctx.__enter__()

    yield make
    for ctx in reversed(started):
        ctx.__exit__(None, None, None)


@pytest.fixture
def connect() -> Iterator[Any]:
    """``connect(url)``: a google-genai client of the gateway at ``url``, closed when the test ends (a client
    dropped while a chat still uses it closes its connections under the chat)."""
    clients: list[Any] = []

    def make(url: str, key: str = "gemini-key") -> Any:
        clients.append(genai.Client(api_key=key, http_options=types.HttpOptions(base_url=url)))
        return clients[-1]

    yield make
    for client in clients:
        client.close()


def _offered(body: dict[str, Any]) -> list[str]:
    return [d["name"] for t in body.get("tools") or () for d in t.get("functionDeclarations") or ()]


def _dump(content: Any) -> dict[str, Any]:
    """A google-genai content as the REST JSON the SDK sends for it."""
    return content.model_dump(mode="json", by_alias=True, exclude_none=True)


def _over_budget() -> list[dict[str, Any]]:
    """A Gemini conversation over a small budget: one long function response, then a new user turn."""
    return [
        {"role": "user", "parts": [{"text": "start"}]},
        {"role": "model", "parts": [{"functionCall": {"name": "sh", "args": {}, "id": "fc_a"}}]},
        {
            "role": "user",
            "parts": [{"functionResponse": {"name": "sh", "id": "fc_a", "response": {"result": BIG_OUTPUT}}}],
        },
        {"role": "model", "parts": [{"text": "done"}]},
        {"role": "user", "parts": [{"text": "next"}]},
    ]


def _turns(contents: list[dict[str, Any]]) -> list[tuple[str, str]]:
    """``(role, text)`` per turn, consecutive contents of one role joined."""
    out: list[tuple[str, str]] = []
    for content in contents:
        text = "".join(p.get("text", "") for p in content["parts"])
        if out and out[-1][0] == content["role"]:
            out[-1] = (content["role"], out[-1][1] + text)
        else:
            out.append((content["role"], text))
    return out


def _paired(contents: list[dict[str, Any]]) -> None:
    """Every function call is answered in the next content and every response answers a call just before it."""
    for n, content in enumerate(contents):
        calls = [p["functionCall"] for p in content.get("parts", ()) if "functionCall" in p]
        responses = [p["functionResponse"] for p in content.get("parts", ()) if "functionResponse" in p]
        if calls:
            following = contents[n + 1] if n + 1 < len(contents) else {"parts": []}
            answered = [p["functionResponse"] for p in following["parts"] if "functionResponse" in p]
            assert [(c["name"], c.get("id")) for c in calls] == [(r["name"], r.get("id")) for r in answered]
        if responses:
            before = contents[n - 1]["parts"] if n else []
            assert [p["functionCall"]["id"] for p in before if "functionCall" in p] == [r["id"] for r in responses]


# -- the route ---------------------------------------------------------------------------------------------------


def test_generate_content_under_budget_goes_up_as_the_client_sent_it(
    connect: Any, start: Any, gemini_server: FakeGeminiServer
) -> None:
    gw = start()
    gemini_server.reply("Hello there.")
    client = connect(gw.url)
    config = types.GenerateContentConfig(system_instruction="Be brief.", tools=[SH])
    reply = client.models.generate_content(model=MODEL, contents="hi", config=config)
    assert reply.text == "Hello there."
    sent = gemini_server.last_request
    assert sent.path.endswith(f"/models/{MODEL}:generateContent")
    assert sent.headers["x-goog-api-key"] == "gemini-key"
    assert sent.json["systemInstruction"] == {"parts": [{"text": "Be brief."}], "role": "user"}
    assert _offered(sent.json) == ["sh"]  # nothing cut: no recall offered
    headers = reply.sdk_http_response.headers
    assert headers["x-windowkeeper-thread"] and int(headers["x-windowkeeper-tokens-after"]) > 0
    # the bytes the client sent are the bytes the upstream got
    raw = json.dumps({"contents": [{"role": "user", "parts": [{"text": "hi"}]}], "x_vendor": {"a": 1}})
    httpx.post(
        f"{gw.url}/v1beta/models/{MODEL}:generateContent", content=raw, headers={"x-goog-api-key": "k"}
    ).raise_for_status()
    assert gemini_server.last_request.raw == raw.encode()


def test_stream_generate_content_relays_the_events_and_reports_usage(
    connect: Any, start: Any, gemini_server: FakeGeminiServer
) -> None:
    gw = start()
    gemini_server.reply("one two three", tool_calls=[FakeToolCall("sh", {"cmd": "ls"}, id="fc_1")])
    client = connect(gw.url)
    chunks = list(
        client.models.generate_content_stream(
            model=MODEL, contents="hi", config=types.GenerateContentConfig(tools=[SH])
        )
    )
    assert gemini_server.last_request.path.endswith(":streamGenerateContent")
    assert gemini_server.last_request.query == {"alt": ["sse"]}
    assert "".join(c.text or "" for c in chunks if not c.function_calls) == "one two three"
    calls = chunks[-1].function_calls
    assert calls is not None and calls[0].name == "sh" and calls[0].id == "fc_1"
    assert chunks[-1].candidates[0].finish_reason == types.FinishReason.STOP
    assert chunks[-1].usage_metadata.prompt_token_count > 0


def test_a_chat_keeps_its_history_through_the_gateway(
    connect: Any, start: Any, gemini_server: FakeGeminiServer
) -> None:
    """google-genai's chat sends its whole history each turn; streamed or not, each turn is recorded."""
    gw = start()
    chat = connect(gw.url).chats.create(model=MODEL)
    gemini_server.reply("first answer")
    assert chat.send_message("first").text == "first answer"
    gemini_server.reply("second answer")
    assert "".join(c.text or "" for c in chat.send_message_stream("second")) == "second answer"
    gemini_server.reply("third")
    chat.send_message("third?")
    assert _turns(gemini_server.last_request.json["contents"]) == [
        ("user", "first"),
        ("model", "first answer"),
        ("user", "second"),
        ("model", "second answer"),  # the chat keeps each streamed chunk as a content of its own
        ("user", "third?"),
    ]
    assert _turns([_dump(c) for c in chat.get_history(curated=True)])[-1] == ("model", "third")


def test_other_gemini_methods_are_relayed_to_the_gemini_upstream(
    connect: Any, start: Any, gemini_server: FakeGeminiServer, upstreams: tuple[FakeOpenAIServer, FakeAnthropicServer]
) -> None:
    gw = start()
    client = connect(gw.url)
    assert client.models.count_tokens(model=MODEL, contents="hello").total_tokens > 0
    assert client.models.embed_content(model="text-embedding-004", contents="hello").embeddings[0].values
    assert [m.name for m in client.models.list()] == ["models/gemini-fake"]
    assert {r.headers["x-goog-api-key"] for r in gemini_server.requests} == {"gemini-key"}
    # a Gemini key, in its header or the query, goes to the Gemini upstream only
    httpx.get(f"{gw.url}/v1/models", headers={"x-goog-api-key": "k2"}).raise_for_status()
    httpx.get(f"{gw.url}/v1/models?key=k3").raise_for_status()
    assert gemini_server.last_request.query == {"key": ["k3"]}
    assert not upstreams[0].requests and not upstreams[1].requests
    # and the OpenAI models list still goes to OpenAI
    httpx.get(f"{gw.url}/v1/models", headers={"authorization": "Bearer sk"}).raise_for_status()
    assert upstreams[0].requests[-1].path == "/v1/models"


def test_a_stream_without_alt_sse_is_relayed_as_its_json_array(start: Any, gemini_server: FakeGeminiServer) -> None:
    gw = start(budget=1500)
    gemini_server.reply("plain array")
    body = {"contents": _over_budget()}
    answer = httpx.post(f"{gw.url}/v1beta/models/{MODEL}:streamGenerateContent", json=body)
    chunks = answer.json()
    assert isinstance(chunks, list) and "".join(c["candidates"][0]["content"]["parts"][0]["text"] for c in chunks)
    sent = gemini_server.last_request.json
    assert len(json.dumps(sent)) < len(json.dumps(body))  # managed
    assert _offered(sent) == []  # the recall calls could not be kept out of the array


def test_a_malformed_body_gets_a_gemini_error(connect: Any, start: Any) -> None:
    gw = start()
    answer = httpx.post(f"{gw.url}/v1beta/models/{MODEL}:generateContent", json={"contents": "hi"})
    assert answer.status_code == 400
    error = answer.json()["error"]
    assert error["status"] == "INVALID_ARGUMENT" and error["code"] == 400 and "'contents'" in error["message"]
    small = start(max_body_bytes=200)
    with pytest.raises(errors.ClientError, match="over the gateway's limit") as raised:
        connect(small.url).models.generate_content(model=MODEL, contents="many words " * 100)
    assert raised.value.code == 413


def test_the_serve_command_takes_the_gemini_upstream(
    connect: Any, tmp_path: Path, gemini_server: FakeGeminiServer
) -> None:
    store = f"sqlite:///{tmp_path / 'cli.sqlite3'}"
    with process("--gemini-base-url", gemini_server.url, "--store", store) as url:
        gemini_server.reply("from the command")
        client = connect(url, "k")
        assert client.models.generate_content(model=MODEL, contents="hi").text == "from the command"


# -- management ----------------------------------------------------------------------------------------------------


def test_a_long_conversation_with_function_calls_stays_under_budget(
    connect: Any, start: Any, gemini_server: FakeGeminiServer
) -> None:
    """Forty tool turns through google-genai under a 3,000-token budget: every request fits, calls and responses
    stay paired, and every content that goes up unchanged is the client's own (signatures and ids included)."""
    budget = 3000
    gw = start(budget=budget, recall=False)
    client = connect(gw.url)
    config = types.GenerateContentConfig(system_instruction="You run commands.", tools=[SH])
    contents: list[Any] = [types.Content(role="user", parts=[types.Part(text="Inspect the logs.")])]
    threads: set[str] = set()
    for turn in range(40):
        gemini_server.reply(
            f"Step {turn}.", tool_calls=[FakeToolCall("sh", {"cmd": f"cat log{turn}"}, id=f"fc_{turn}")]
        )
        reply = client.models.generate_content(model=MODEL, contents=contents, config=config)
        after = int(reply.sdk_http_response.headers["x-windowkeeper-tokens-after"])
        threads.add(reply.sdk_http_response.headers["x-windowkeeper-thread"])
        assert after <= budget
        sent = gemini_server.last_request.json
        _paired(sent["contents"])
        mine = [_dump(c) for c in contents]
        model_turns = [c for c in sent["contents"] if c["role"] == "model"]
        for content in model_turns:  # the model's turns are never rewritten, only left out
            assert content in mine
            assert json.dumps(content) == json.dumps(mine[mine.index(content)])
        assert sent["contents"][-2:] == mine[-2:]  # the newest turn goes as it came
        model = reply.candidates[0].content
        assert model.parts[0].text == f"Step {turn}." and model.parts[1].thought_signature
        contents.append(model)
        output = {"result": f"log {turn}: " + "line of output " * 120}
        contents.append(
            types.Content(
                role="user",
                parts=[
                    types.Part(function_response=types.FunctionResponse(name="sh", id=f"fc_{turn}", response=output))
                ],
            )
        )
    sent = gemini_server.last_request.json
    assert len(json.dumps(sent)) < len(json.dumps([_dump(c) for c in contents])) / 3
    assert int(reply.sdk_http_response.headers["x-windowkeeper-tokens-before"]) > 3 * budget
    assert len(threads) == 1  # one conversation, one manager
    metrics = gw.gateway.metrics
    assert metrics.managed["generate_content"] == 40 and metrics.cuts["generate_content"] > 0
    assert metrics.body_reuses["generate_content"] >= 30  # each call parsed only what the last one did not hold


def test_unknown_keys_and_parts_pass_through_when_the_list_is_cut(start: Any, gemini_server: FakeGeminiServer) -> None:
    """Keys and parts windowkeeper does not model leave as the client sent them, in its key order: in the contents
    the manager left as they were, and in the one whose function response it cleared (its other parts)."""
    gw = start(budget=1500)
    signed = {"functionCall": {"name": "sh", "args": {}, "id": "fc_0"}, "thoughtSignature": "c2lnXzA="}
    contents = [
        {"parts": [{"text": "start"}], "x_vendor": {"trace": 1}},  # no role: the API reads it as the user's
        {"role": "model", "parts": [signed]},
        {"role": "user", "parts": [{"functionResponse": {"id": "fc_0", "name": "sh", "response": {"result": "ok"}}}]},
        {
            "role": "model",
            "parts": [
                {"executableCode": {"language": "PYTHON", "code": "print(1)"}},
                {"codeExecutionResult": {"outcome": "OUTCOME_OK", "output": "1"}},
                {"functionCall": {"name": "sh", "args": {}, "id": "fc_a"}, "thoughtSignature": "c2lnX2E="},
            ],
        },
        {
            "role": "user",
            "parts": [
                {"functionResponse": {"id": "fc_a", "name": "sh", "response": {"result": BIG_OUTPUT}}},
                {"fileData": {"fileUri": "gs://b/p.png", "mimeType": "image/png"}, "mediaResolution": {"level": "LOW"}},
                {"text": "and this", "x_part": 1},
            ],
        },
    ]
    body = {"contents": contents, "safetySettings": [{"category": "HARM_CATEGORY_HATE_SPEECH", "threshold": "OFF"}]}
    answer = httpx.post(f"{gw.url}/v1beta/models/{MODEL}:generateContent", json=body)
    answer.raise_for_status()
    assert int(answer.headers["x-windowkeeper-tokens-after"]) < int(answer.headers["x-windowkeeper-tokens-before"])
    raw = gemini_server.last_request.raw.decode()
    sent = gemini_server.last_request.json
    assert sent["safetySettings"] == body["safetySettings"]
    for content in contents[:4]:  # each unchanged content is the client's, byte for byte (compact JSON)
        assert json.dumps(content, separators=(",", ":")) in raw
    cleared = sent["contents"][4]
    assert BIG_OUTPUT not in json.dumps(cleared) and "recall(pointer_id" in json.dumps(cleared)
    assert cleared["parts"][0]["functionResponse"]["id"] == "fc_a"
    assert cleared["parts"][1:] == contents[4]["parts"][1:]
    _paired(sent["contents"])


# -- server-side recall --------------------------------------------------------------------------------------------


def test_recall_is_answered_by_the_gateway(connect: Any, start: Any, gemini_server: FakeGeminiServer) -> None:
    gw = start(budget=1500)
    gemini_server.reply("Let me look.", tool_calls=[FakeToolCall("recall", {"query": "log line"})])
    gemini_server.reply("The log repeats one line.")
    client = connect(gw.url)
    contents = [types.Content.model_validate(c) for c in _over_budget()]
    reply = client.models.generate_content(
        model=MODEL, contents=contents, config=types.GenerateContentConfig(tools=[SH])
    )
    assert reply.text == "The log repeats one line." and not reply.function_calls
    first, second = gemini_server.requests[-2:]
    assert _offered(first.json) == ["sh", "recall"]
    declaration = first.json["tools"][0]["functionDeclarations"][1]
    assert declaration["parametersJsonSchema"]["properties"]["query"]["type"] == "string"
    turn, answer = second.json["contents"][-2:]
    call = {"functionCall": {"name": "recall", "args": {"query": "log line"}}, "thoughtSignature": "c2lnXzE="}
    assert turn == {"role": "model", "parts": [{"text": "Let me look."}, call]}  # as the model sent it, signed
    response = answer["parts"][0]["functionResponse"]
    assert answer["role"] == "user" and response["name"] == "recall" and "log line" in response["response"]["result"]


def test_recall_in_a_stream_never_reaches_the_client(connect: Any, start: Any, gemini_server: FakeGeminiServer) -> None:
    gw = start(budget=1500)
    gemini_server.reply("Let me look.", tool_calls=[FakeToolCall("recall", {"query": "log line"})])
    gemini_server.reply("It repeats.")
    chat_history = [types.Content.model_validate(c) for c in _over_budget()[:-1]]
    chat = connect(gw.url).chats.create(
        model=MODEL, config=types.GenerateContentConfig(tools=[SH]), history=chat_history
    )
    chunks = list(chat.send_message_stream("next"))
    assert len(gemini_server.requests) == 2
    parts = [p for c in chunks for p in c.candidates[0].content.parts]
    assert all(p.function_call is None for p in parts)
    text = "".join(p.text or "" for p in parts)
    assert text == "Let me look.It repeats."
    assert [c.candidates[0].finish_reason for c in chunks].count(types.FinishReason.STOP) == 1
    assert chunks[-1].candidates[0].finish_reason == types.FinishReason.STOP
    # the chat took the turn (every chunk had parts, one a finish reason); its signature part stays with it
    history = [_dump(c) for c in chat.get_history(curated=True)]
    assert _turns(history)[-2:] == [("user", "next"), ("model", "Let me look.It repeats.")]
    signed = [p for c in history for p in c["parts"] if "thoughtSignature" in p]
    assert signed == [{"text": "", "thoughtSignature": "c2lnXzE="}]  # recall's signature, left in its place


@pytest.mark.parametrize("stream", [False, True])
def test_a_mixed_turn_reaches_the_client_with_its_own_call_signed(
    connect: Any, start: Any, gemini_server: FakeGeminiServer, stream: bool
) -> None:
    """The model called recall and the client's tool in one turn: the client gets its own call, carrying the
    signature Gemini put on the turn's first call (recall's), which Gemini asks back on the turn's first call."""
    gw = start(budget=1500)
    gemini_server.reply(tool_calls=[FakeToolCall("recall", {"query": "x"}), FakeToolCall("sh", {"cmd": "ls"}, id="m")])
    client = connect(gw.url)
    contents = [types.Content.model_validate(c) for c in _over_budget()]
    config = types.GenerateContentConfig(tools=[SH])
    if stream:
        chunks = list(client.models.generate_content_stream(model=MODEL, contents=contents, config=config))
        parts = [p for c in chunks for p in c.candidates[0].content.parts]
        assert chunks[-1].candidates[0].finish_reason == types.FinishReason.STOP
    else:
        parts = (
            client.models.generate_content(model=MODEL, contents=contents, config=config).candidates[0].content.parts
        )
    assert len(gemini_server.requests) == 1
    assert [(p.function_call.name, p.function_call.id, p.thought_signature) for p in parts] == [("sh", "m", b"sig_1")]


@pytest.mark.parametrize("stream", [False, True])
def test_recall_past_the_last_round_ends_the_turn_with_a_note(
    connect: Any, start: Any, gemini_server: FakeGeminiServer, stream: bool
) -> None:
    gw = start(budget=1500)
    for _ in range(MAX_ROUNDS + 1):
        gemini_server.reply(tool_calls=[FakeToolCall("recall", {"query": "x"})])
    client = connect(gw.url)
    contents = [types.Content.model_validate(c) for c in _over_budget()]
    if stream:
        chunks = list(client.models.generate_content_stream(model=MODEL, contents=contents))
        text = "".join(p.text or "" for c in chunks for p in c.candidates[0].content.parts)
        assert not any(c.function_calls for c in chunks)
    else:
        reply = client.models.generate_content(model=MODEL, contents=contents)
        text = reply.text
        assert not reply.function_calls
    assert len(gemini_server.requests) == MAX_ROUNDS + 1
    assert text == LIMIT_NOTE


def test_recall_is_not_offered_where_gemini_would_refuse_it(start: Any, gemini_server: FakeGeminiServer) -> None:
    gw = start(budget=1500)
    url = f"{gw.url}/v1beta/models/{MODEL}:generateContent"
    cases = [
        {"tools": [{"googleSearch": {}}]},
        {"generationConfig": {"responseMimeType": "application/json"}},
        {
            "toolConfig": {"functionCallingConfig": {"mode": "NONE"}},
            "tools": [SH.model_dump(mode="json", by_alias=True, exclude_none=True)],
        },
        {"generationConfig": {"candidateCount": 2}},
    ]
    for extra in cases:
        httpx.post(url, json={"contents": _over_budget(), **extra}).raise_for_status()
        assert "recall" not in _offered(gemini_server.last_request.json), extra
    # beside functions of the client's own, the model takes declarations: the gateway's joins them
    tools = [{"googleSearch": {}}, SH.model_dump(mode="json", by_alias=True, exclude_none=True)]
    httpx.post(url, json={"contents": _over_budget(), "tools": tools}).raise_for_status()
    assert gemini_server.last_request.json["tools"][0] == {"googleSearch": {}}
    assert _offered(gemini_server.last_request.json) == ["sh", "recall"]


def test_the_async_client_streams_through_recall_too(start: Any, gemini_server: FakeGeminiServer) -> None:
    """google-genai's async client (``client.aio``) reads the same events."""
    gw = start(budget=1500)
    gemini_server.reply("Looking.", tool_calls=[FakeToolCall("recall", {"query": "log line"})])
    gemini_server.reply("Found it.")
    contents = [types.Content.model_validate(c) for c in _over_budget()]

    async def run() -> list[Any]:
        client = genai.Client(api_key="k", http_options=types.HttpOptions(base_url=gw.url))
        try:
            stream = await client.aio.models.generate_content_stream(model=MODEL, contents=contents)
            return [chunk async for chunk in stream]
        finally:
            await client.aio.aclose()
            client.close()

    chunks = asyncio.run(run())
    assert "".join(c.text or "" for c in chunks) == "Looking.Found it."
    assert not any(c.function_calls for c in chunks) and len(gemini_server.requests) == 2


def test_a_request_on_a_cached_content_goes_up_unmanaged(start: Any, gemini_server: FakeGeminiServer) -> None:
    """The cache holds the conversation's head (and may hold the system instruction and tools, which the request
    may then not set): the contents are only its tail, which the gateway leaves as sent, even over budget."""
    gw = start(budget=1500)
    raw = json.dumps({"cachedContent": "cachedContents/abc", "contents": _over_budget()}).encode()
    answer = httpx.post(f"{gw.url}/v1beta/models/{MODEL}:generateContent", content=raw)
    answer.raise_for_status()
    assert gemini_server.last_request.raw == raw and "x-windowkeeper-thread" not in answer.headers
