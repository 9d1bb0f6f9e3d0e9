"""The ASGI application: routes, the request path of a managed call, and the relay of everything else.

``POST /v1/chat/completions`` and ``POST /v1/responses`` go to the OpenAI upstream, ``POST /v1/messages`` to the
Anthropic one and Gemini's ``POST /v1beta/models/{model}:generateContent`` and ``:streamGenerateContent`` to the
Gemini one, managed (`gateway`); every other path is relayed unchanged to the upstream of its family, query
string included (`upstream.family_of`: a Gemini key goes to the Gemini upstream only). ``GET /healthz`` and
``GET /metrics`` are the gateway's own.

Failing open: an internal error while managing forwards the client's original bytes and logs one warning naming
the thread; an upstream HTTP error is relayed as received (status, body, headers such as ``retry-after``); a body
the gateway can tell is malformed gets 400 in the upstream family's error shape, naming the problem. A stream that
the upstream breaks off is broken off for the client too, so its SDK reports the truncation as it would directly.
Request bodies and credentials are never logged.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
from collections.abc import AsyncIterator, Callable, Mapping
from email.utils import formatdate
from pathlib import Path
from typing import Any

import httpx
import orjson
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response, StreamingResponse
from starlette.routing import Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ..storage import open_store
from ..storage.url import sqlite_target
from .body_memo import BodyMemo
from .config import ServeConfig
from .gateway import BadRequest, Behind, Gateway, Plan, Unmanaged, check_items, new_tokens
from .identity import scope_of
from .projection import dumps_body
from .protocols import PROTOCOLS, Family, Protocol, echo, error_body, gemini_protocol
from .recall import MAX_ROUNDS, Room, answer
from .streaming import CallFilter, Carried, EventSplitter, UsageReader, echo_event
from .threads import CacheShares
from .upstream import (
    family_of,
    make_client,
    request_headers,
    response_headers,
    upstream_url,
)

logger = logging.getLogger(__name__)


class UpstreamDropped(Exception):
    """The upstream's stream broke off: the client's stream must break off too (not end cleanly)."""


class _Gateway:
    """The state one app instance shares across requests (built in the lifespan)."""

    def __init__(self, config: ServeConfig) -> None:
        self.config = config
        self.gateway: Gateway | None = None
        self.client: httpx.AsyncClient | None = None
        self.bodies = BodyMemo(CacheShares.of(config.cache_bytes).bodies, _parse)

    async def start(self) -> None:
        url = self.config.store_url
        if url.startswith("sqlite:") or "://" not in url:
            database, _, uri = sqlite_target(url)
            if not uri and database != ":memory:":
                Path(database).parent.mkdir(parents=True, exist_ok=True)  # the default lives in the data dir
        self.gateway = Gateway(self.config, open_store(url))
        self.client = make_client(self.config)

    async def stop(self) -> None:
        if self.client is not None:
            await self.client.aclose()
        if self.gateway is not None:
            await self.gateway.close()


def _error(family: Family, status: int, message: str, kind: str = "invalid_request_error") -> Response:
    return JSONResponse(error_body(family, message, kind=kind, code=status), status_code=status)


def _parse(raw: bytes) -> Any:
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError:
        pass
    try:
        return json.loads(raw)  # what orjson refuses but the providers' parsers may take (NaN, huge ints)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise BadRequest(f"the request body is not valid JSON ({exc}); send a JSON object") from None
    except RecursionError:
        raise BadRequest("the request body nests deeper than the gateway reads; send a flatter JSON object") from None


def build_app(config: ServeConfig) -> Starlette:
    state = _Gateway(config)

    def gateway() -> Gateway:
        assert state.gateway is not None, "the app is used outside its lifespan"
        return state.gateway

    def client() -> httpx.AsyncClient:
        assert state.client is not None, "the app is used outside its lifespan"
        return state.client

    async def read_body(request: Request, family: Family) -> bytes | Response:
        declared = request.headers.get("content-length")
        limit = config.max_body_bytes
        if declared and declared.isdigit() and int(declared) > limit:
            return _error(
                family, 413, f"request body of {int(declared):,} bytes is over the gateway's limit of {limit:,}"
            )
        chunks = []
        size = 0
        async for chunk in request.stream():
            size += len(chunk)
            if size > limit:
                return _error(family, 413, f"request body is over the gateway's limit of {limit:,} bytes")
            chunks.append(chunk)
        return b"".join(chunks)

    async def healthz(request: Request) -> Response:
        return JSONResponse({"status": "ok"})

    async def metrics(request: Request) -> Response:
        served = gateway()
        process = [*served.threads.series(), *served.recognizer.series()]
        return PlainTextResponse(served.metrics.render(process), media_type="text/plain; version=0.0.4")

    async def open_upstream(
        request: Request, family: Family, route: str, content: bytes, method: str = "POST", *, again: bool = False
    ) -> httpx.Response | Response:
        """``again``: a follow-up the gateway sends after answering recall, a request of its own with another body,
        so the client's idempotency key stays with the client's request (an upstream that honours it would answer
        the follow-up with the first reply, or refuse a reused key)."""
        url = upstream_url(config, family, request.url.path, request.url.query)
        headers = request_headers(request.headers.items())
        if again:
            headers = [(k, v) for k, v in headers if k.lower() != "idempotency-key"]
        upstream = client().build_request(method, url, headers=headers, content=content)
        started = time.perf_counter()
        try:
            response = await client().send(upstream, stream=True)
        except httpx.TimeoutException:
            gateway().metrics.count("upstream_errors", route)
            logger.warning("%s: the %s upstream did not answer within %ss", route, family, config.timeout)
            return _error(family, 504, f"the {family} upstream ({url.split('?')[0]}) timed out", "api_error")
        except httpx.HTTPError as exc:
            gateway().metrics.count("upstream_errors", route)
            logger.warning("%s: cannot reach the %s upstream (%s)", route, family, type(exc).__name__)
            return _error(
                family,
                502,
                f"cannot reach the {family} upstream ({url.split('?')[0]}): {type(exc).__name__}",
                "api_error",
            )
        gateway().metrics.upstream_latency(route, time.perf_counter() - started)
        return response

    async def relay(request: Request) -> Response:
        """Any other path: forwarded unchanged to its family's upstream, the answer streamed back unchanged; a
        Gemini generate method is managed (its path holds the model, so it has no route of its own)."""
        if request.method == "POST":
            gemini = gemini_protocol(request.url.path, request.url.query)
            if gemini is not None:
                return await manage(request, gemini)
        family = family_of(request.url.path, request.headers.items(), request.url.query)
        raw = await read_body(request, family)
        if isinstance(raw, Response):
            return raw
        opened = await open_upstream(request, family, "other", raw, request.method)
        if isinstance(opened, Response):
            return opened
        gateway().metrics.request("other", str(opened.status_code))
        return _stream_back(opened, [])

    async def managed(request: Request) -> Response:
        return await manage(request, PROTOCOLS[request.url.path])

    async def manage(request: Request, protocol: Protocol) -> Response:
        family, route = protocol.family, protocol.name
        raw = await read_body(request, family)
        if isinstance(raw, Response):
            return raw
        plan: Plan | None = None
        early: Behind | None = None
        extra: list[tuple[bytes, bytes]] = []
        if request.headers.get("x-windowkeeper", "").strip().lower() != "off":
            try:
                # the client's last body of this route, if this one continues it, parsed only where it is new
                reused = state.bodies.hits
                headers = _credentialed(request)
                body = state.bodies.parse((scope_of(headers), route), raw, protocol.list_key)
                if state.bodies.hits != reused:
                    gateway().metrics.count("body_reuses", route)
                if not isinstance(body, dict):
                    raise BadRequest(f"the request body must be a JSON object, got {type(body).__name__}")
                if protocol.manages(body):
                    items = check_items(protocol, body)
                    if items:
                        placed = await gateway().place(protocol, headers, body, items, raw)
                        tokens = gateway().passes_through(placed)
                        if tokens is not None:
                            # the client's bytes go up now and the answer comes back as it arrives; the window's
                            # bookkeeping runs behind them (the thread's next call waits for it)
                            gateway().metrics.count("early_forwards", route)
                            early = gateway().behind(placed, tokens)
                            extra = _headers(placed.name, tokens, tokens)
                        else:
                            plan = await gateway().manage(placed)
                            extra = _headers(plan.name, plan.tokens_before, plan.tokens_after)
            except BadRequest as exc:
                gateway().metrics.request(route, "400")
                return _error(family, 400, str(exc))
            except Unmanaged as exc:
                # the client's bytes, as failing open sends them, and the thread the conversation stays on
                plan, extra = None, [(b"x-windowkeeper-thread", exc.thread.encode())]
            except Exception as exc:
                gateway().failed_open(route, exc)
                plan, extra = None, []
        content = plan.body if plan is not None else raw
        try:
            opened = await open_upstream(request, family, route, content)
        except BaseException:
            if early is not None:
                early.release()
            raise
        if isinstance(opened, Response):
            if early is not None:
                early.release()
            return opened
        gateway().metrics.request(route, str(opened.status_code))
        is_sse = opened.headers.get("content-type", "").startswith("text/event-stream")
        if early is not None:
            return _stream_back(opened, extra, early, _Usage(protocol, is_sse) if opened.status_code == 200 else None)
        if plan is None or opened.status_code != 200 or (protocol.json_stream and not is_sse):
            return _stream_back(opened, extra)
        if is_sse:
            return _stream_managed(request, opened, plan, extra)
        return await _answer_json(request, opened, plan, extra)

    def _stream_back(
        opened: httpx.Response,
        extra: list[tuple[bytes, bytes]],
        early: Behind | None = None,
        usage: _Usage | None = None,
    ) -> Response:
        async def body() -> AsyncIterator[bytes]:
            try:
                async for chunk in opened.aiter_bytes():
                    if usage is not None:
                        usage.feed(chunk)
                    yield chunk
                if usage is not None and early is not None:
                    usage.done(early.task)
            except httpx.HTTPError as exc:
                logger.warning(
                    "the upstream response broke off (%s); breaking off the client's too", type(exc).__name__
                )
                raise UpstreamDropped from None
            finally:
                if early is not None:
                    early.release()
                await opened.aclose()

        response = _Relay(body(), status_code=opened.status_code)
        response.raw_headers = [*response_headers(opened.headers), *extra]
        response.on_close = early.release if early is not None else None
        return response

    async def _answer_json(
        request: Request, opened: httpx.Response, plan: Plan, extra: list[tuple[bytes, bytes]]
    ) -> Response:
        protocol, thread = plan.protocol, plan.thread
        try:
            data = await opened.aread()
        except httpx.HTTPError as exc:
            gateway().metrics.count("upstream_errors", protocol.name)
            return _error(protocol.family, 502, f"the upstream response broke off: {type(exc).__name__}", "api_error")
        finally:
            await opened.aclose()
        headers = opened.headers
        reply = _json_or_none(data)
        body = plan.json
        if plan.recall is not None and isinstance(reply, dict):
            room = Room.after(thread, plan.tokens_after)
            for round_ in range(MAX_ROUNDS + 1):
                calls = protocol.calls(reply)
                ours = [c for c in calls if c.name == plan.recall]
                if not ours:
                    break
                if len(ours) < len(calls) or round_ == MAX_ROUNDS:
                    # a mixed turn goes to the client for its own calls; past the last round, as a finished turn
                    trim = protocol.without_calls if len(ours) < len(calls) else protocol.out_of_rounds
                    reply = trim(reply, {plan.recall})
                    data = dumps_body(reply)
                    break
                gateway().metrics.recall_calls[protocol.name] += len(ours)
                answers = await answer(thread, ours)
                body = _follow_up(protocol, body, reply, answers, room)
                again = await open_upstream(request, protocol.family, protocol.name, dumps_body(body), again=True)
                if isinstance(again, Response):
                    return again
                data = await again.aread()
                await again.aclose()
                headers = again.headers
                if again.status_code != 200:
                    response = Response(data, status_code=again.status_code)
                    response.raw_headers = [*response_headers(headers), *extra, *_length(data)]
                    return response
                reply = _json_or_none(data)
                if not isinstance(reply, dict):
                    break
        if isinstance(reply, dict):
            _observe(plan, protocol.prompt_tokens(reply))
            echoed = echo(reply, plan.echo)
            if echoed is not reply:
                data = dumps_body(echoed)
        response = Response(data, status_code=200)
        response.raw_headers = [*response_headers(headers), *extra, *_length(data)]
        return response

    def _stream_managed(
        request: Request, opened: httpx.Response, plan: Plan, extra: list[tuple[bytes, bytes]]
    ) -> Response:
        protocol, thread = plan.protocol, plan.thread
        first_headers = opened.headers

        async def events() -> AsyncIterator[bytes]:
            current = opened
            body = plan.json
            carried = Carried()
            room = Room.after(thread, plan.tokens_after)
            try:
                for round_ in range(MAX_ROUNDS + 1):
                    usage = UsageReader(protocol)
                    filt = CallFilter(protocol, plan.recall, carried) if plan.recall is not None else None
                    splitter = EventSplitter()
                    async for chunk in current.aiter_bytes():
                        if filt is None and not plan.echo:
                            usage.feed(chunk)
                            yield chunk
                            continue
                        for event in splitter.feed(chunk):
                            usage.see(event)
                            for out in filt.feed(event) if filt is not None else (event.raw,):
                                yield echo_event(out, plan.echo) if plan.echo else out
                    if (filt is not None or plan.echo) and splitter.rest:
                        yield splitter.rest
                    await current.aclose()
                    _observe(plan, usage.prompt_tokens)
                    if filt is None or not filt.recall_only or round_ == MAX_ROUNDS:
                        for held in filt.closing(exhausted=filt.recall_only) if filt is not None else ():
                            yield echo_event(held, plan.echo) if plan.echo else held
                        return
                    for out in filt.continuing():
                        yield out
                    gateway().metrics.recall_calls[protocol.name] += len(filt.our_calls())
                    answers = await answer(thread, filt.our_calls())
                    body = _follow_up(protocol, body, filt.reply(), answers, room)
                    carried = filt.carry()  # the next round streams on as more of the same reply
                    reopened = await open_upstream(
                        request, protocol.family, protocol.name, dumps_body(body), again=True
                    )
                    if isinstance(reopened, Response):
                        yield _error_event(protocol, bytes(reopened.body))
                        return
                    current = reopened
                    if current.status_code != 200:
                        yield _error_event(protocol, await current.aread())
                        return
            except httpx.HTTPError as exc:
                gateway().metrics.count("upstream_errors", protocol.name)
                logger.warning(
                    "%s: the upstream stream of thread %s broke off (%s); breaking off the client's too",
                    protocol.name,
                    plan.name,
                    type(exc).__name__,
                )
                raise UpstreamDropped from None
            finally:
                await current.aclose()

        response = StreamingResponse(events(), status_code=200)
        response.raw_headers = [*response_headers(first_headers), *extra]
        return response

    def _observe(plan: Plan, prompt_tokens: int | None) -> None:
        if prompt_tokens:
            with contextlib.suppress(Exception):
                plan.thread.window.observe_usage(prompt_tokens)

    routes = [
        Route("/healthz", healthz, methods=["GET"]),
        Route("/metrics", metrics, methods=["GET"]),
        *(Route(path, managed, methods=["POST"]) for path in PROTOCOLS),
        Route("/{path:path}", relay, methods=["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"]),
    ]

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        await state.start()
        try:
            yield
        finally:
            await state.stop()

    app = Starlette(routes=routes, lifespan=lifespan)
    app.state.gateway = state
    app.add_middleware(_BreakOff)
    return app


def _credentialed(request: Request) -> Mapping[str, str]:
    """The request's headers, with a Gemini key sent as the ``key`` query parameter as its ``x-goog-api-key``:
    threads are scoped by the client's credential (`identity.scope_of`), wherever the client puts it."""
    if request.headers.get("x-goog-api-key") or "key=" not in request.url.query:
        return request.headers
    key = request.query_params.get("key")
    return {**request.headers, "x-goog-api-key": key} if key else request.headers


def _follow_up(
    protocol: Protocol,
    body: Mapping[str, Any],
    reply: Mapping[str, Any],
    answers: Mapping[str, str],
    room: Room | None,
) -> dict[str, Any]:
    """``body`` continued with the model's turn and the recall ``answers``, each cut to its share of the ``room``
    the budget has left (`Room`): the follow-up adds only those to a request the window fitted, so it stays
    within the budget without being fitted again."""
    if room is not None:
        key = protocol.list_key
        bare = protocol.follow_up(body, reply, dict.fromkeys(answers, ""))
        added = bare[key][len(body[key]) :]
        turn = new_tokens(room.counter, protocol.fmt, added)
        if turn is None:  # items the reader cannot take alone: their JSON's tokens, more than they cost
            turn = room.counter.count_text(dumps_body(added).decode())
        answers = room.fit(answers, turn)
    return protocol.follow_up(body, reply, answers)


class _Usage:
    """The prompt size an upstream reported in a relayed answer (streamed, or a JSON body), handed to the thread's
    window once the window has done the request's bookkeeping (a request sent before it, `Gateway.behind`)."""

    MAX_JSON = 8 * 1024 * 1024
    """Bytes of a JSON answer kept to read its usage (beyond that the answer is relayed without)."""

    def __init__(self, protocol: Protocol, sse: bool) -> None:
        self.protocol = protocol
        self.reader = UsageReader(protocol) if sse else None
        self.chunks: list[bytes] | None = None if sse else []
        self.size = 0

    def feed(self, chunk: bytes) -> None:
        if self.reader is not None:
            self.reader.feed(chunk)
        elif self.chunks is not None:
            self.size += len(chunk)
            if self.size <= self.MAX_JSON:
                self.chunks.append(chunk)
            else:
                self.chunks = None

    def done(self, early: asyncio.Task[Plan | None]) -> None:
        if self.reader is not None:
            tokens = self.reader.prompt_tokens
        else:
            reply = _json_or_none(b"".join(self.chunks)) if self.chunks is not None else None
            tokens = self.protocol.prompt_tokens(reply) if isinstance(reply, dict) else None
        if not tokens:
            return
        seen = tokens

        def observe(task: asyncio.Task[Plan | None]) -> None:
            plan = task.result() if not task.cancelled() and task.exception() is None else None
            if plan is not None:
                with contextlib.suppress(Exception):
                    plan.thread.window.observe_usage(seen)

        early.add_done_callback(observe)


def _json_or_none(data: bytes) -> Any:
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError:
        return None


def _length(data: bytes) -> list[tuple[bytes, bytes]]:
    return [(b"content-length", str(len(data)).encode())]


def _headers(name: str, before: int, after: int) -> list[tuple[bytes, bytes]]:
    return [
        (b"x-windowkeeper-thread", name.encode()),
        (b"x-windowkeeper-tokens-before", str(before).encode()),
        (b"x-windowkeeper-tokens-after", str(after).encode()),
    ]


def _error_event(protocol: Protocol, data: bytes) -> bytes:
    """An upstream error met while continuing a stream after recall, as the protocol's in-stream error event."""
    payload = data.decode("utf-8", "replace") or json.dumps(error_body(protocol.family, "upstream error"))
    if protocol.family == "anthropic":
        return b"event: error\ndata: " + payload.encode() + b"\n\n"
    return b"data: " + payload.encode() + b"\n\n"


class _Relay(StreamingResponse):
    """A streamed response that calls ``on_close`` once it is over, however it ended (a client gone before the
    first chunk never starts the body's generator, so the generator's own ``finally`` cannot be relied on)."""

    on_close: Callable[[], None] | None = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            await super().__call__(scope, receive, send)
        finally:
            if self.on_close is not None:
                self.on_close()


class _BreakOff:
    """Outermost: an `UpstreamDropped` ends the response without its terminator (uvicorn closes the socket), and a
    response without a ``date`` (the gateway's own: errors, health, metrics) gets one. The server adds none
    (`windowkeeper.serve.SERVER_OPTIONS`): a relayed response carries the upstream's."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        async def dated(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = list(message.get("headers", ()))
                if not any(name.lower() == b"date" for name, _ in headers):
                    headers.append((b"date", formatdate(usegmt=True).encode()))
                    message = {**message, "headers": headers}
            await send(message)

        try:
            await self.app(scope, receive, dated if scope["type"] == "http" else send)
        except UpstreamDropped:
            return
        except BaseExceptionGroup as group:
            if group.subgroup(UpstreamDropped) is None or group.subgroup(lambda e: not isinstance(e, UpstreamDropped)):
                raise
