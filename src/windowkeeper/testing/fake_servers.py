"""Local HTTP servers that speak the OpenAI, Anthropic and Gemini wire formats.

Provider code is tested by pointing the *official* SDKs at one of these servers (``base_url=srv.base_url``), so
the real request serialization, response parsing, retries and timeouts run, with no network and no API key.
Each server records every request it receives and answers from a FIFO queue of programmed replies: text, tool
calls (parallel included), reasoning, an HTTP error status, a delay (to trigger client timeouts) or an empty
reply. When the queue is empty it answers with ``default_text``.

A request whose body says ``"stream": true`` is answered with server-sent events in the provider's own streaming
shape (Chat Completions chunks ending in ``data: [DONE]``, Responses ``response.*`` events, Anthropic
``message_start`` ... ``message_stop``), written with chunked transfer encoding one event at a time; a reply's
``event_delay`` spaces them out and ``drop_after`` cuts the connection after that many events (a stream that dies
mid-way). ``headers`` are added to the response (``retry-after`` on an error, say).

Usage::

    with FakeOpenAIServer() as srv:
        srv.reply("Sam likes tea.")
        client = create_client("gpt-4o-mini", base_url=srv.base_url, api_key="test")
        ...
        assert srv.last_request.body["instructions"] == "..."
"""

from __future__ import annotations

import base64
import itertools
import json
import logging
import sys
import threading
import time
from abc import ABC, abstractmethod
from collections import deque
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class FakeToolCall:
    """A tool call the fake model will emit; ``id`` is generated (``call_1``, ...) when omitted."""

    name: str
    args: dict[str, Any] = field(default_factory=dict)
    id: str | None = None


@dataclass(frozen=True)
class FakeUsage:
    """Token counts the fake server reports; ``input_tokens`` includes ``cached_tokens`` (OpenAI convention)."""

    input_tokens: int = 0
    output_tokens: int = 0
    cached_tokens: int = 0
    reasoning_tokens: int = 0
    cache_creation_tokens: int = 0


@dataclass(frozen=True)
class FakeReply:
    """One programmed answer.

    ``status`` other than 200 returns that HTTP error in the provider's error shape; ``delay`` sleeps before
    answering; ``empty`` returns a well-formed reply with no content at all; ``body`` sends these exact bytes.
    """

    text: str | None = None
    tool_calls: tuple[FakeToolCall, ...] = ()
    reasoning: str | None = None
    usage: FakeUsage | None = None
    status: int = 200
    delay: float = 0.0
    empty: bool = False
    body: bytes | None = None
    error_message: str = "the fake server was told to fail"
    headers: tuple[tuple[str, str], ...] = ()
    event_delay: float = 0.0
    drop_after: int | None = None


@dataclass(frozen=True)
class RecordedRequest:
    """A request as the server received it; header names are lower-cased."""

    method: str
    path: str
    query: dict[str, list[str]]
    headers: dict[str, str]
    body: Any
    raw: bytes = b""
    """The body's bytes exactly as received."""

    @property
    def json(self) -> dict[str, Any]:
        """The JSON body as a dict (empty when the body was not a JSON object)."""
        return self.body if isinstance(self.body, dict) else {}


ToolCallLike = FakeToolCall | Mapping[str, Any] | tuple[str, Mapping[str, Any]]


def _as_tool_call(value: ToolCallLike) -> FakeToolCall:
    if isinstance(value, FakeToolCall):
        return value
    if isinstance(value, tuple):
        name, args = value
        return FakeToolCall(name=name, args=dict(args))
    return FakeToolCall(name=str(value["name"]), args=dict(value.get("args", {})), id=value.get("id"))


class FakeProviderServer(ABC):
    """Base class: threading, recording and the reply queue; subclasses render the provider's JSON."""

    provider = "fake"
    api_prefix = ""

    def __init__(self, replies: Iterable[FakeReply | str] = (), *, default_text: str = "ok") -> None:
        self.default_text = default_text
        self.requests: list[RecordedRequest] = []
        self._queue: deque[FakeReply] = deque()
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._ids: dict[str, itertools.count[int]] = {}
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        for reply in replies:
            self.enqueue(FakeReply(text=reply) if isinstance(reply, str) else reply)

    # -- programming ----------------------------------------------------------------------------------------

    def enqueue(self, reply: FakeReply) -> FakeProviderServer:
        with self._lock:
            self._queue.append(reply)
        return self

    def reply(
        self,
        text: str | None = None,
        *,
        tool_calls: Iterable[ToolCallLike] = (),
        reasoning: str | None = None,
        usage: FakeUsage | None = None,
    ) -> FakeProviderServer:
        """Queue a successful answer with text and/or tool calls."""
        calls = tuple(_as_tool_call(c) for c in tool_calls)
        return self.enqueue(FakeReply(text=text, tool_calls=calls, reasoning=reasoning, usage=usage))

    def fail(
        self,
        status: int = 500,
        message: str = "the fake server was told to fail",
        *,
        times: int = 1,
        headers: Mapping[str, str] | None = None,
    ) -> FakeProviderServer:
        """Queue ``times`` HTTP error answers (one per attempt, so SDK retries consume them too)."""
        extra = tuple((headers or {}).items())
        for _ in range(times):
            self.enqueue(FakeReply(status=status, error_message=message, headers=extra))
        return self

    def drop(self, after_events: int, text: str = "cut off mid-way") -> FakeProviderServer:
        """Queue a streamed answer whose connection is closed after ``after_events`` events (no clean end)."""
        return self.enqueue(FakeReply(text=text, drop_after=after_events))

    def sleep(self, seconds: float, text: str = "too late") -> FakeProviderServer:
        """Queue an answer that arrives only after ``seconds`` (use a shorter client timeout)."""
        return self.enqueue(FakeReply(text=text, delay=seconds))

    def empty(self) -> FakeProviderServer:
        """Queue a well-formed reply that contains no text and no tool call."""
        return self.enqueue(FakeReply(empty=True))

    def raw(self, body: bytes, status: int = 200) -> FakeProviderServer:
        """Queue exact response bytes (for malformed-reply tests)."""
        return self.enqueue(FakeReply(body=body, status=status))

    # -- inspection ------------------------------------------------------------------------------------------

    @property
    def last_request(self) -> RecordedRequest:
        with self._lock:
            if not self.requests:
                raise AssertionError(f"{type(self).__name__} has received no request")
            return self.requests[-1]

    @property
    def pending(self) -> int:
        """How many programmed replies have not been used yet."""
        with self._lock:
            return len(self._queue)

    @property
    def port(self) -> int:
        if self._httpd is None:
            raise RuntimeError(f"{type(self).__name__} is not running; use it as a context manager or call start()")
        return int(self._httpd.server_address[1])

    @property
    def url(self) -> str:
        """Root URL of the server, without any API prefix."""
        return f"http://127.0.0.1:{self.port}"

    @property
    def base_url(self) -> str:
        """The value to pass as the SDK's ``base_url``."""
        return self.url + self.api_prefix

    # -- lifecycle -------------------------------------------------------------------------------------------

    def start(self) -> FakeProviderServer:
        if self._httpd is not None:
            return self
        handler = _make_handler(self)
        httpd = _QuietServer(("127.0.0.1", 0), handler)
        self._stop.clear()
        self._httpd = httpd
        self._thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self._thread.start()
        logger.debug("%s listening on %s", type(self).__name__, self.url)
        return self

    def stop(self) -> None:
        httpd, thread = self._httpd, self._thread
        if httpd is None:
            return
        self._stop.set()
        httpd.shutdown()
        httpd.server_close()
        if thread is not None:
            thread.join(timeout=5)
        self._httpd = None
        self._thread = None

    def __enter__(self) -> FakeProviderServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- request handling (called from server threads) -------------------------------------------------------

    def _next_reply(self) -> FakeReply:
        with self._lock:
            return self._queue.popleft() if self._queue else FakeReply(text=self.default_text)

    def _record(self, request: RecordedRequest) -> None:
        with self._lock:
            self.requests.append(request)

    def _wait(self, seconds: float) -> None:
        self._stop.wait(seconds)

    def new_id(self, prefix: str) -> str:
        """``prefix_1``, ``prefix_2``, ...: numbered per prefix so tests can predict generated ids."""
        with self._lock:
            counter = self._ids.setdefault(prefix, itertools.count(1))
            return f"{prefix}_{next(counter)}"

    def usage_for(self, reply: FakeReply, request: RecordedRequest) -> FakeUsage:
        """The usage to report: the programmed one, else a deterministic size-based estimate."""
        if reply.usage is not None:
            return reply.usage
        size = len(json.dumps(request.body, ensure_ascii=False)) if request.body is not None else 0
        out = len(reply.text or "") + len(reply.reasoning or "")
        out += sum(len(c.name) + len(json.dumps(c.args)) for c in reply.tool_calls)
        return FakeUsage(input_tokens=max(1, size // 4), output_tokens=max(1, out // 4) if not reply.empty else 0)

    @abstractmethod
    def route(self, method: str, path: str) -> bool:
        """Whether this server answers ``method path``."""

    @abstractmethod
    def render(self, reply: FakeReply, request: RecordedRequest) -> dict[str, Any]:
        """The provider's JSON for a successful reply."""

    def render_events(self, reply: FakeReply, request: RecordedRequest) -> list[bytes]:
        """The server-sent events of a streamed successful reply (each a complete ``event:``/``data:`` record)."""
        raise NotImplementedError(f"{type(self).__name__} does not stream")

    def answer_other(self, request: RecordedRequest) -> dict[str, Any] | None:
        """The JSON for a side route (model lists, token counting); None when there is none."""
        return None

    def streams(self, request: RecordedRequest) -> bool:
        """Whether the request asks for a streamed answer (its body's ``"stream": true``)."""
        return request.json.get("stream") is True

    def stream_type(self, request: RecordedRequest) -> str:
        """The content type of a streamed answer."""
        return "text/event-stream"

    def render_error(self, status: int, message: str) -> dict[str, Any]:
        return {"error": {"message": message, "type": "server_error", "param": None, "code": None}}

    def call_ids(self, reply: FakeReply, prefix: str) -> list[str]:
        return [c.id or self.new_id(prefix) for c in reply.tool_calls]


class _QuietServer(ThreadingHTTPServer):
    """A threaded server whose connection errors are logged in one line, never as a printed traceback.

    Clients that time out or drop keep-alive connections are normal here. Printing their tracebacks from server
    threads is not just noise: on Python 3.11 traceback formatting calls ``ast.parse``, and doing that in a
    server thread while the main thread parses (pytest rewriting an import) can crash the interpreter with
    "AST constructor recursion depth mismatch".
    """

    daemon_threads = True
    block_on_close = False
    request_queue_size = 128  # the default backlog of 5 resets connections when a gateway opens 50 at once

    def handle_error(self, request: Any, client_address: Any) -> None:
        logger.debug("fake server connection from %s ended with %r", client_address, sys.exc_info()[1])


def sse(data: Mapping[str, Any] | str, event: str | None = None) -> bytes:
    """One server-sent event record (``event:`` line when named, one ``data:`` line, blank line)."""
    payload = data if isinstance(data, str) else json.dumps(data, ensure_ascii=False)
    head = f"event: {event}\n" if event else ""
    return f"{head}data: {payload}\n\n".encode()


def text_pieces(text: str) -> list[str]:
    """``text`` in the small deltas a streaming model sends (word by word, spaces kept)."""
    pieces: list[str] = []
    for word in text.split(" "):
        pieces.append(word if not pieces else " " + word)
    return [p for p in pieces if p] or [text]


def _make_handler(owner: FakeProviderServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        timeout = 30.0
        # headers and body go out in separate writes: with Nagle on, the body waits for the client's delayed ACK
        # (~40 ms a request on Linux), which would swamp every latency measured against these servers
        disable_nagle_algorithm = True

        def handle(self) -> None:
            try:
                super().handle()
            except (OSError, ValueError) as exc:
                logger.debug("fake server connection closed: %r", exc)

        def log_message(self, format: str, *args: Any) -> None:
            logger.debug("%s: " + format, type(owner).__name__, *args)

        def _send(self, status: int, body: bytes, headers: Iterable[tuple[str, str]] = ()) -> None:
            try:
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                for name, value in headers:
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(body)
                self.wfile.flush()
            except (BrokenPipeError, ConnectionResetError):
                logger.debug("client went away before the reply was written (a timeout test, usually)")

        def _stream(self, reply: FakeReply, events: list[bytes], content_type: str = "text/event-stream") -> None:
            """Write ``events`` one chunk each (chunked encoding), or cut the connection after ``drop_after``."""
            try:
                self.send_response(200)
                self.send_header("Content-Type", content_type)
                self.send_header("Cache-Control", "no-cache")
                self.send_header("Transfer-Encoding", "chunked")
                for name, value in reply.headers:
                    self.send_header(name, value)
                self.end_headers()
                for n, event in enumerate(events):
                    if reply.drop_after is not None and n >= reply.drop_after:
                        self.wfile.flush()
                        self.close_connection = True
                        self.connection.shutdown(2)
                        return
                    if reply.event_delay and n:
                        owner._wait(reply.event_delay)
                    self.wfile.write(f"{len(event):x}\r\n".encode() + event + b"\r\n")
                    self.wfile.flush()
                self.wfile.write(b"0\r\n\r\n")
                self.wfile.flush()
            except (BrokenPipeError, ConnectionResetError):
                logger.debug("client went away mid-stream")

        def _handle(self) -> None:
            parts = urlsplit(self.path)
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            try:
                body: Any = json.loads(raw) if raw else None
            except json.JSONDecodeError:
                body = raw.decode("utf-8", "replace")
            request = RecordedRequest(
                method=self.command,
                path=parts.path,
                query=parse_qs(parts.query),
                headers={k.lower(): v for k, v in self.headers.items()},
                body=body,
                raw=raw,
            )
            if not owner.route(self.command, parts.path):
                other = owner.answer_other(request)
                if other is not None:
                    owner._record(request)
                    self._send(200, json.dumps(other).encode())
                    return
                message = f"{type(owner).__name__} has no route for {self.command} {parts.path}"
                self._send(404, json.dumps(owner.render_error(404, message)).encode())
                return
            owner._record(request)
            reply = owner._next_reply()
            if reply.delay:
                owner._wait(reply.delay)
            if reply.body is not None:
                self._send(reply.status, reply.body, reply.headers)
            elif reply.status != 200:
                error = json.dumps(owner.render_error(reply.status, reply.error_message)).encode()
                self._send(reply.status, error, reply.headers)
            elif owner.streams(request):
                self._stream(reply, owner.render_events(reply, request), owner.stream_type(request))
            else:
                body = json.dumps(owner.render(reply, request), ensure_ascii=False).encode("utf-8")
                self._send(200, body, reply.headers)

        def do_POST(self) -> None:
            self._handle()

        def do_GET(self) -> None:
            self._handle()

    return Handler


class FakeOpenAIServer(FakeProviderServer):
    """OpenAI ``POST /v1/chat/completions`` and ``POST /v1/responses``; ``base_url`` ends in ``/v1``."""

    provider = "openai"
    api_prefix = "/v1"

    def route(self, method: str, path: str) -> bool:
        return method == "POST" and path in ("/v1/chat/completions", "/v1/responses")

    def answer_other(self, request: RecordedRequest) -> dict[str, Any] | None:
        if request.method == "GET" and request.path == "/v1/models":
            return {"object": "list", "data": [{"id": "gpt-fake", "object": "model", "created": 0, "owned_by": "fake"}]}
        return None

    def render(self, reply: FakeReply, request: RecordedRequest) -> dict[str, Any]:
        if request.path.endswith("/responses"):
            return self._responses(reply, request)
        return self._chat(reply, request)

    def render_events(self, reply: FakeReply, request: RecordedRequest) -> list[bytes]:
        if request.path.endswith("/responses"):
            return self._responses_events(reply, request)
        return self._chat_events(reply, request)

    def _chat_events(self, reply: FakeReply, request: RecordedRequest) -> list[bytes]:
        """Chat Completions chunks: role, content deltas, tool-call deltas (name, then arguments), finish, usage."""
        whole = self._chat(reply, request)
        message = whole["choices"][0]["message"]
        head = {k: whole[k] for k in ("id", "created", "model", "system_fingerprint")}
        head["object"] = "chat.completion.chunk"

        def chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
            choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}
            return sse({**head, "choices": [choice]})

        events = [chunk({"role": "assistant", "content": ""})]
        events += [chunk({"content": piece}) for piece in text_pieces(message["content"] or "") if piece]
        for i, call in enumerate(message.get("tool_calls") or []):
            fn = call["function"]
            first = {
                "index": i,
                "id": call["id"],
                "type": "function",
                "function": {"name": fn["name"], "arguments": ""},
            }
            events.append(chunk({"tool_calls": [first]}))
            args = fn["arguments"]
            for j in range(0, len(args), 16):
                events.append(chunk({"tool_calls": [{"index": i, "function": {"arguments": args[j : j + 16]}}]}))
        events.append(chunk({}, whole["choices"][0]["finish_reason"]))
        options = request.json.get("stream_options")
        if isinstance(options, dict) and options.get("include_usage"):
            events.append(sse({**head, "choices": [], "usage": whole["usage"]}))
        events.append(sse("[DONE]"))
        return events

    def _responses_events(self, reply: FakeReply, request: RecordedRequest) -> list[bytes]:
        """Responses events: created, each output item added/deltas/done, completed with the whole response."""
        whole = self._responses(reply, request)
        seq = itertools.count()
        pending = {**whole, "status": "in_progress", "output": [], "usage": None}

        def ev(kind: str, **fields: Any) -> bytes:
            return sse({"type": kind, "sequence_number": next(seq), **fields}, event=kind)

        events = [ev("response.created", response=pending), ev("response.in_progress", response=pending)]
        for index, item in enumerate(whole["output"]):
            kind = item["type"]
            if kind == "message":
                events.append(ev("response.output_item.added", output_index=index, item={**item, "content": []}))
                part = item["content"][0]
                empty = {**part, "text": ""}
                loc = {"item_id": item["id"], "output_index": index, "content_index": 0}
                events.append(ev("response.content_part.added", **loc, part=empty))
                for piece in text_pieces(part["text"]):
                    events.append(ev("response.output_text.delta", **loc, delta=piece, logprobs=[]))
                events.append(ev("response.output_text.done", **loc, text=part["text"], logprobs=[]))
                events.append(ev("response.content_part.done", **loc, part=part))
            elif kind == "function_call":
                added = {**item, "arguments": "", "status": "in_progress"}
                events.append(ev("response.output_item.added", output_index=index, item=added))
                loc = {"item_id": item["id"], "output_index": index}
                events.append(ev("response.function_call_arguments.delta", **loc, delta=item["arguments"]))
                events.append(ev("response.function_call_arguments.done", **loc, arguments=item["arguments"]))
            else:
                events.append(ev("response.output_item.added", output_index=index, item=item))
            events.append(ev("response.output_item.done", output_index=index, item=item))
        events.append(ev("response.completed", response=whole))
        return events

    def _chat(self, reply: FakeReply, request: RecordedRequest) -> dict[str, Any]:
        usage = self.usage_for(reply, request)
        ids = self.call_ids(reply, "call")
        message: dict[str, Any] = {"role": "assistant", "content": None if reply.empty else reply.text, "refusal": None}
        if reply.tool_calls and not reply.empty:
            message["tool_calls"] = [
                {"id": cid, "type": "function", "function": {"name": c.name, "arguments": json.dumps(c.args)}}
                for cid, c in zip(ids, reply.tool_calls, strict=True)
            ]
        return {
            "id": self.new_id("chatcmpl"),
            "object": "chat.completion",
            "created": int(time.time()),
            "model": request.json.get("model", "unknown"),
            "choices": [
                {
                    "index": 0,
                    "message": message,
                    "logprobs": None,
                    "finish_reason": "tool_calls" if "tool_calls" in message else "stop",
                },
            ],
            "usage": {
                "prompt_tokens": usage.input_tokens,
                "completion_tokens": usage.output_tokens,
                "total_tokens": usage.input_tokens + usage.output_tokens,
                "prompt_tokens_details": {"cached_tokens": usage.cached_tokens, "audio_tokens": 0},
                "completion_tokens_details": {"reasoning_tokens": usage.reasoning_tokens, "audio_tokens": 0},
            },
            "system_fingerprint": "fp_fake",
        }

    def _responses(self, reply: FakeReply, request: RecordedRequest) -> dict[str, Any]:
        usage = self.usage_for(reply, request)
        output: list[dict[str, Any]] = []
        if not reply.empty:
            if reply.reasoning:
                output.append(
                    {
                        "type": "reasoning",
                        "id": self.new_id("rs"),
                        "summary": [{"type": "summary_text", "text": reply.reasoning}],
                    },
                )
            if reply.text is not None:
                output.append(
                    {
                        "type": "message",
                        "id": self.new_id("msg"),
                        "status": "completed",
                        "role": "assistant",
                        "content": [{"type": "output_text", "text": reply.text, "annotations": []}],
                    },
                )
            for cid, call in zip(self.call_ids(reply, "call"), reply.tool_calls, strict=True):
                output.append(
                    {
                        "type": "function_call",
                        "id": self.new_id("fc"),
                        "call_id": cid,
                        "name": call.name,
                        "arguments": json.dumps(call.args),
                        "status": "completed",
                    },
                )
        body = request.json
        return {
            "id": self.new_id("resp"),
            "object": "response",
            "created_at": int(time.time()),
            "status": "completed",
            "error": None,
            "incomplete_details": None,
            "instructions": body.get("instructions"),
            "max_output_tokens": body.get("max_output_tokens"),
            "model": body.get("model", "unknown"),
            "output": output,
            "parallel_tool_calls": True,
            "temperature": body.get("temperature", 1.0),
            "tool_choice": "auto",
            "tools": body.get("tools", []),
            "top_p": 1.0,
            "metadata": {},
            "text": {"format": {"type": "text"}},
            "truncation": "disabled",
            "usage": {
                "input_tokens": usage.input_tokens,
                "input_tokens_details": {"cached_tokens": usage.cached_tokens},
                "output_tokens": usage.output_tokens,
                "output_tokens_details": {"reasoning_tokens": usage.reasoning_tokens},
                "total_tokens": usage.input_tokens + usage.output_tokens,
            },
        }


class FakeAnthropicServer(FakeProviderServer):
    """Anthropic ``POST /v1/messages``; ``base_url`` is the server root (the SDK adds ``/v1``)."""

    provider = "anthropic"

    def route(self, method: str, path: str) -> bool:
        return method == "POST" and path == "/v1/messages"

    def answer_other(self, request: RecordedRequest) -> dict[str, Any] | None:
        if request.method == "POST" and request.path == "/v1/messages/count_tokens":
            return {"input_tokens": self.usage_for(FakeReply(), request).input_tokens}
        if request.method == "GET" and request.path == "/v1/models":
            model = {
                "type": "model",
                "id": "claude-fake",
                "display_name": "Claude Fake",
                "created_at": "2025-01-01T00:00:00Z",
            }
            return {"data": [model], "has_more": False, "first_id": "claude-fake", "last_id": "claude-fake"}
        return None

    def render_events(self, reply: FakeReply, request: RecordedRequest) -> list[bytes]:
        """Anthropic message events: message_start, one start/delta(s)/stop per content block, delta, stop."""
        whole = self.render(reply, request)
        usage = whole["usage"]
        start = {**whole, "content": [], "stop_reason": None, "usage": {**usage, "output_tokens": 1}}
        events = [sse({"type": "message_start", "message": start}, event="message_start")]
        for index, block in enumerate(whole["content"]):
            kind = block["type"]
            if kind == "text":
                opening: dict[str, Any] = {"type": "text", "text": ""}
                deltas = [{"type": "text_delta", "text": piece} for piece in text_pieces(block["text"])]
            elif kind == "thinking":
                opening = {"type": "thinking", "thinking": "", "signature": ""}
                deltas = [{"type": "thinking_delta", "thinking": block["thinking"]}]
                deltas.append({"type": "signature_delta", "signature": block["signature"]})
            else:
                opening = {**block, "input": {}}
                deltas = [{"type": "input_json_delta", "partial_json": json.dumps(block["input"])}]
            events.append(
                sse({"type": "content_block_start", "index": index, "content_block": opening}, "content_block_start")
            )
            for delta in deltas:
                events.append(
                    sse({"type": "content_block_delta", "index": index, "delta": delta}, "content_block_delta")
                )
            events.append(sse({"type": "content_block_stop", "index": index}, "content_block_stop"))
        final = {"stop_reason": whole["stop_reason"], "stop_sequence": None}
        events.append(
            sse(
                {"type": "message_delta", "delta": final, "usage": {"output_tokens": usage["output_tokens"]}},
                "message_delta",
            )
        )
        events.append(sse({"type": "message_stop"}, "message_stop"))
        return events

    def render_error(self, status: int, message: str) -> dict[str, Any]:
        kind = "api_error" if status >= 500 else "invalid_request_error"
        return {"type": "error", "error": {"type": kind, "message": message}}

    def render(self, reply: FakeReply, request: RecordedRequest) -> dict[str, Any]:
        usage = self.usage_for(reply, request)
        content: list[dict[str, Any]] = []
        if not reply.empty:
            if reply.reasoning:
                content.append({"type": "thinking", "thinking": reply.reasoning, "signature": "fake-signature"})
            if reply.text is not None:
                content.append({"type": "text", "text": reply.text})
            for cid, call in zip(self.call_ids(reply, "toolu"), reply.tool_calls, strict=True):
                content.append({"type": "tool_use", "id": cid, "name": call.name, "input": call.args})
        return {
            "id": self.new_id("msg"),
            "type": "message",
            "role": "assistant",
            "model": request.json.get("model", "unknown"),
            "content": content,
            "stop_reason": "tool_use" if reply.tool_calls and not reply.empty else "end_turn",
            "stop_sequence": None,
            "usage": {
                "input_tokens": usage.input_tokens - usage.cached_tokens - usage.cache_creation_tokens,
                "output_tokens": usage.output_tokens,
                "cache_creation_input_tokens": usage.cache_creation_tokens,
                "cache_read_input_tokens": usage.cached_tokens,
            },
        }


class FakeGeminiServer(FakeProviderServer):
    """Gemini ``POST /v1beta/models/{model}:generateContent`` and ``:streamGenerateContent`` (``/v1/`` too);
    ``base_url`` is the server root.

    ``:streamGenerateContent?alt=sse`` (what google-genai sends) answers with server-sent events, each a whole
    ``GenerateContentResponse`` (``\r\n\r\n`` between them, as Google writes them): the text word by word, then
    the function calls and the ``finishReason`` with the usage in the last one; without ``alt=sse`` the same
    responses come as one JSON array. ``countTokens``, ``embedContent``, ``batchEmbedContents`` and
    ``GET .../models`` are answered too.
    With ``signatures=True`` the first function call of each reply carries a ``thoughtSignature``
    (``sig_1``, ... in base64), as Gemini 2.5 and later models' calls do."""

    provider = "google"

    def __init__(
        self, replies: Iterable[FakeReply | str] = (), *, default_text: str = "ok", signatures: bool = False
    ) -> None:
        super().__init__(replies, default_text=default_text)
        self.signatures = signatures

    def route(self, method: str, path: str) -> bool:
        return (
            method == "POST"
            and path.startswith(("/v1beta/models/", "/v1/models/"))
            and path.endswith((":generateContent", ":streamGenerateContent"))
        )

    def answer_other(self, request: RecordedRequest) -> dict[str, Any] | None:
        path = request.path
        if request.method == "POST" and path.endswith(":countTokens"):
            return {"totalTokens": self.usage_for(FakeReply(), request).input_tokens}
        if request.method == "POST" and path.endswith(":embedContent"):
            return {"embedding": {"values": [0.25, 0.5, 0.75]}}
        if request.method == "POST" and path.endswith(":batchEmbedContents"):
            return {"embeddings": [{"values": [0.25, 0.5, 0.75]} for _ in request.json.get("requests") or ()]}
        if request.method == "GET" and path in ("/v1beta/models", "/v1/models"):
            model = {"name": "models/gemini-fake", "displayName": "Gemini Fake", "inputTokenLimit": 1_048_576}
            return {"models": [model]}
        return None

    def streams(self, request: RecordedRequest) -> bool:
        return request.path.endswith(":streamGenerateContent")

    @staticmethod
    def _sse(request: RecordedRequest) -> bool:
        return request.query.get("alt", [""])[-1] == "sse"

    def stream_type(self, request: RecordedRequest) -> str:
        return "text/event-stream" if self._sse(request) else "application/json"

    @staticmethod
    def model_of(request: RecordedRequest) -> str:
        """The model named in a ``generateContent`` or ``streamGenerateContent`` path."""
        return request.path.partition("/models/")[2].rpartition(":")[0]

    def render_error(self, status: int, message: str) -> dict[str, Any]:
        name = "INTERNAL" if status >= 500 else "INVALID_ARGUMENT"
        return {"error": {"code": status, "message": message, "status": name}}

    def render_events(self, reply: FakeReply, request: RecordedRequest) -> list[bytes]:
        """The reply as streamed responses: one per word of its text, the thought and the calls in the last."""
        whole = self.render(reply, request)
        candidate = whole["candidates"][0]
        parts = candidate["content"].get("parts", [])
        head = {k: whole[k] for k in ("modelVersion", "responseId")}
        usage = {k: v for k, v in whole["usageMetadata"].items() if k == "promptTokenCount"}
        chunks: list[dict[str, Any]] = []
        for part in parts:
            if set(part) == {"text"}:
                for piece in text_pieces(part["text"]):
                    content = {"role": "model", "parts": [{"text": piece}]}
                    chunks.append({"candidates": [{"content": content, "index": 0}], "usageMetadata": usage, **head})
        rest = [p for p in parts if set(p) != {"text"}]
        last = {"role": "model", "parts": rest} if rest else {"role": "model", "parts": [{"text": ""}]}
        if not chunks or rest:
            chunks.append({"candidates": [{"content": last, "index": 0}], "usageMetadata": usage, **head})
        chunks[-1] = {**chunks[-1], "usageMetadata": whole["usageMetadata"]}
        chunks[-1]["candidates"] = [{**chunks[-1]["candidates"][0], "finishReason": "STOP"}]
        if not self._sse(request):
            body = json.dumps(chunks, ensure_ascii=False).encode()
            return [body[: len(body) // 2], body[len(body) // 2 :]]
        return [f"data: {json.dumps(c, ensure_ascii=False)}\r\n\r\n".encode() for c in chunks]

    def render(self, reply: FakeReply, request: RecordedRequest) -> dict[str, Any]:
        usage = self.usage_for(reply, request)
        parts: list[dict[str, Any]] = []
        if not reply.empty:
            if reply.reasoning:
                parts.append({"text": reply.reasoning, "thought": True})
            if reply.text is not None:
                parts.append({"text": reply.text})
            for n, call in enumerate(reply.tool_calls):
                fc: dict[str, Any] = {"name": call.name, "args": call.args}
                if call.id is not None:
                    fc["id"] = call.id
                part: dict[str, Any] = {"functionCall": fc}
                if self.signatures and n == 0:
                    part["thoughtSignature"] = base64.b64encode(self.new_id("sig").encode()).decode()
                parts.append(part)
        content: dict[str, Any] = {"role": "model"}
        if parts:
            content["parts"] = parts
        visible = usage.output_tokens - usage.reasoning_tokens
        usage_metadata: dict[str, Any] = {
            "promptTokenCount": usage.input_tokens,
            "candidatesTokenCount": visible,
            "totalTokenCount": usage.input_tokens + usage.output_tokens,
        }
        if usage.cached_tokens:
            usage_metadata["cachedContentTokenCount"] = usage.cached_tokens
        if usage.reasoning_tokens:
            usage_metadata["thoughtsTokenCount"] = usage.reasoning_tokens
        return {
            "candidates": [{"content": content, "finishReason": "STOP", "index": 0}],
            "usageMetadata": usage_metadata,
            "modelVersion": self.model_of(request),
            "responseId": self.new_id("resp"),
        }


__all__ = [
    "FakeAnthropicServer",
    "FakeGeminiServer",
    "FakeOpenAIServer",
    "FakeProviderServer",
    "FakeReply",
    "FakeToolCall",
    "FakeUsage",
    "RecordedRequest",
]
