"""Local HTTP servers that speak the OpenAI, Anthropic and Gemini wire formats.

Provider code is tested by pointing the *official* SDKs at one of these servers (``base_url=srv.base_url``), so
the real request serialization, response parsing, retries and timeouts run, with no network and no API key.
Each server records every request it receives and answers from a FIFO queue of programmed replies: text, tool
calls (parallel included), reasoning, an HTTP error status, a delay (to trigger client timeouts) or an empty
reply. When the queue is empty it answers with ``default_text``.

Usage::

    with FakeOpenAIServer() as srv:
        srv.reply("Sam likes tea.")
        client = create_client("gpt-4o-mini", base_url=srv.base_url, api_key="test")
        ...
        assert srv.last_request.body["instructions"] == "..."
"""

from __future__ import annotations

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


@dataclass(frozen=True)
class RecordedRequest:
    """A request as the server received it; header names are lower-cased."""

    method: str
    path: str
    query: dict[str, list[str]]
    headers: dict[str, str]
    body: Any

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
        self, status: int = 500, message: str = "the fake server was told to fail", *, times: int = 1
    ) -> FakeProviderServer:
        """Queue ``times`` HTTP error answers (one per attempt, so SDK retries consume them too)."""
        for _ in range(times):
            self.enqueue(FakeReply(status=status, error_message=message))
        return self

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

    def handle_error(self, request: Any, client_address: Any) -> None:
        logger.debug("fake server connection from %s ended with %r", client_address, sys.exc_info()[1])


def _make_handler(owner: FakeProviderServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        timeout = 30.0

        def handle(self) -> None:
            try:
                super().handle()
            except (OSError, ValueError) as exc:
                logger.debug("fake server connection closed: %r", exc)

        def log_message(self, format: str, *args: Any) -> None:
            logger.debug("%s: " + format, type(owner).__name__, *args)

        def _send(self, status: int, body: bytes) -> None:
            try:
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
                self.wfile.flush()
            except (BrokenPipeError, ConnectionResetError):
                logger.debug("client went away before the reply was written (a timeout test, usually)")

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
            )
            if not owner.route(self.command, parts.path):
                message = f"{type(owner).__name__} has no route for {self.command} {parts.path}"
                self._send(404, json.dumps(owner.render_error(404, message)).encode())
                return
            owner._record(request)
            reply = owner._next_reply()
            if reply.delay:
                owner._wait(reply.delay)
            if reply.body is not None:
                self._send(reply.status, reply.body)
            elif reply.status != 200:
                self._send(reply.status, json.dumps(owner.render_error(reply.status, reply.error_message)).encode())
            else:
                self._send(200, json.dumps(owner.render(reply, request), ensure_ascii=False).encode("utf-8"))

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

    def render(self, reply: FakeReply, request: RecordedRequest) -> dict[str, Any]:
        if request.path.endswith("/responses"):
            return self._responses(reply, request)
        return self._chat(reply, request)

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
    """Gemini ``POST /v1beta/models/{model}:generateContent`` (``/v1/`` too); ``base_url`` is the server root."""

    provider = "google"

    def route(self, method: str, path: str) -> bool:
        return (
            method == "POST"
            and path.startswith(("/v1beta/models/", "/v1/models/"))
            and path.endswith(":generateContent")
        )

    @staticmethod
    def model_of(request: RecordedRequest) -> str:
        """The model named in a ``generateContent`` path."""
        return request.path.partition("/models/")[2].removesuffix(":generateContent")

    def render_error(self, status: int, message: str) -> dict[str, Any]:
        name = "INTERNAL" if status >= 500 else "INVALID_ARGUMENT"
        return {"error": {"code": status, "message": message, "status": name}}

    def render(self, reply: FakeReply, request: RecordedRequest) -> dict[str, Any]:
        usage = self.usage_for(reply, request)
        parts: list[dict[str, Any]] = []
        if not reply.empty:
            if reply.reasoning:
                parts.append({"text": reply.reasoning, "thought": True})
            if reply.text is not None:
                parts.append({"text": reply.text})
            for call in reply.tool_calls:
                fc: dict[str, Any] = {"name": call.name, "args": call.args}
                if call.id is not None:
                    fc["id"] = call.id
                parts.append({"functionCall": fc})
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
