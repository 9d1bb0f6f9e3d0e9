"""Storage conformance suite: one set of behavioural specs every `SessionStore` backend must pass.

A backend is registered with a factory that, given a scratch directory and a unique prefix, returns a `Backend`:
how to open a store (each call a new connection onto the same data), the URL another process can open, and how
to clean up. Test suites parametrize over `cases()` and call `run_spec`; a third-party backend only has to
`register_backend(...)` to be held to the same contract as the built-in four::

    from windowkeeper.testing import conformance

    conformance.register_backend("mystore", lambda workdir, prefix: conformance.Backend(...))
    for backend_name, spec_name in conformance.cases(["mystore"]):
        ...  # await conformance.run_spec(spec_name, conformance.make_backend(backend_name, tmp, prefix))

Specs return measurements (e.g. appends per second) rather than asserting on timings. The module is also the
child program for the multi-process specs: ``python -m windowkeeper.testing.conformance read|write|crash-writer``.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import sys
import time
import uuid
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import Field

from ..blocks import (
    AnnotationBlock,
    AnnotationRef,
    AudioBlock,
    DataBlock,
    DocumentBlock,
    ErrorBlock,
    ImageBlock,
    MediaRef,
    ReasoningBlock,
    TextBlock,
    ToolCallBlock,
    ToolResultBlock,
    VideoBlock,
)
from ..errors import StorageError
from ..graph.checkpointer import Checkpointer
from ..messages import Message, TokenUsages
from ..state import AgentState, ExecutionStatus
from ..storage.base import ConflictError, RecordNotFoundError, SessionStore
from ..storage.memory import InMemoryStore
from ..storage.sqlite import SQLiteStore
from ..storage.url import open_store, postgres_url, redis_url, with_prefix

Measurements = dict[str, float]
Spec = Callable[["Backend"], Awaitable[Measurements | None]]


# -- backends -------------------------------------------------------------------------------------------------


@dataclass
class Backend:
    """A live backend under test.

    ``open`` returns a store on the backend's data; for durable backends every call is a new connection. ``url``
    is what another process passes to `open_store` (``None`` when the data cannot leave this process).
    """

    name: str
    opener: Callable[[], SessionStore]
    url: str | None = None
    cleanup: Callable[[], Awaitable[None]] | None = None
    durable: bool = True
    crash_safe: bool = True
    _opened: list[SessionStore] = field(default_factory=list)

    def open(self) -> SessionStore:
        store = self.opener()
        self._opened.append(store)
        return store

    async def release(self, store: SessionStore) -> None:
        """Close a store this spec opened (a shared in-process store stays open until `aclose`)."""
        if self.durable:
            await store.close()

    async def aclose(self) -> None:
        """Close whatever is still open and remove the backend's data."""
        for store in self._opened:
            with contextlib.suppress(Exception):
                await store.close()
        self._opened.clear()
        if self.cleanup is not None:
            await self.cleanup()


BackendFactory = Callable[[Path, str], Backend]
"""``factory(scratch_dir, unique_prefix) -> Backend``."""


@dataclass(frozen=True)
class BackendInfo:
    name: str
    factory: BackendFactory
    durable: bool
    multiprocess: bool
    crash_safe: bool
    server: str | None
    """Which server the backend needs (``"postgres"``, ``"redis"``), so a test runner can gate on reachability."""


_BACKENDS: dict[str, BackendInfo] = {}


def register_backend(
    name: str,
    factory: BackendFactory,
    *,
    durable: bool = True,
    multiprocess: bool = True,
    crash_safe: bool = True,
    server: str | None = None,
) -> None:
    """Add (or replace) a backend the suite runs against; the flags decide which specs apply."""
    _BACKENDS[name] = BackendInfo(name, factory, durable, multiprocess and durable, crash_safe and durable, server)


def backends() -> dict[str, BackendInfo]:
    return dict(_BACKENDS)


def make_backend(name: str, workdir: Path, prefix: str | None = None) -> Backend:
    """Instantiate a registered backend in ``workdir`` with ``prefix`` (random when omitted)."""
    if name not in _BACKENDS:
        raise KeyError(f"no conformance backend named {name!r}; registered: {sorted(_BACKENDS)}")
    return _BACKENDS[name].factory(workdir, prefix or f"wkt_{uuid.uuid4().hex[:12]}")


def _memory_backend(workdir: Path, prefix: str) -> Backend:
    store = InMemoryStore()
    return Backend("memory", opener=lambda: store, url=None, durable=False, crash_safe=False)


def _sqlite_backend(workdir: Path, prefix: str) -> Backend:
    path = workdir / f"{prefix}.sqlite3"
    return Backend(
        "sqlite",
        opener=lambda: SQLiteStore(path, prefix=prefix),
        url=with_prefix(f"sqlite:///{path}", prefix),
    )


def _postgres_backend(workdir: Path, prefix: str) -> Backend:
    from ..storage.postgres import PostgresStore

    url = postgres_url()

    async def cleanup() -> None:
        store = PostgresStore(url, prefix=prefix)
        try:
            await store.drop()
        finally:
            await store.close()

    return Backend(
        "postgres",
        opener=lambda: PostgresStore(url, prefix=prefix),
        url=with_prefix(url, prefix),
        cleanup=cleanup,
    )


def _redis_backend(workdir: Path, prefix: str) -> Backend:
    from ..storage.redis import RedisStore

    url = redis_url()

    async def cleanup() -> None:
        store = RedisStore(url, prefix=prefix)
        try:
            await store.drop()
        finally:
            await store.close()

    return Backend(
        "redis",
        opener=lambda: RedisStore(url, prefix=prefix),
        url=with_prefix(url, prefix),
        cleanup=cleanup,
    )


register_backend("memory", _memory_backend, durable=False)
register_backend("sqlite", _sqlite_backend)
register_backend("postgres", _postgres_backend, server="postgres")
register_backend("redis", _redis_backend, server="redis")


# -- spec registry --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class SpecInfo:
    name: str
    fn: Spec
    needs: tuple[str, ...]

    def applies_to(self, info: BackendInfo) -> bool:
        return all(getattr(info, need) for need in self.needs)


_SPECS: dict[str, SpecInfo] = {}


def conformance_spec(*needs: str) -> Callable[[Spec], Spec]:
    """Register a spec; ``needs`` names `BackendInfo` flags (``durable``, ``multiprocess``, ``crash_safe``)."""
    for need in needs:
        if need not in ("durable", "multiprocess", "crash_safe"):
            raise ValueError(f"unknown spec requirement {need!r}; use durable, multiprocess or crash_safe")

    def register(fn: Spec) -> Spec:
        name = fn.__name__.removeprefix("spec_")
        _SPECS[name] = SpecInfo(name, fn, tuple(needs))
        return fn

    return register


def specs() -> dict[str, SpecInfo]:
    return dict(_SPECS)


def cases(backend_names: Sequence[str] | None = None) -> list[tuple[str, str]]:
    """Every applicable ``(backend, spec)`` pair, for ``pytest.mark.parametrize``."""
    names = list(backend_names) if backend_names is not None else list(_BACKENDS)
    return [(b, s) for b in names for s, spec in _SPECS.items() if spec.applies_to(_BACKENDS[b])]


async def run_spec(spec_name: str, backend: Backend) -> Measurements:
    """Run one spec against a live backend; raises `AssertionError` on a violation."""
    result = await _SPECS[spec_name].fn(backend)
    return result or {}


async def run_all(backend_name: str, workdir: Path) -> dict[str, Measurements]:
    """Run every applicable spec, each on a fresh prefix, cleaning up after each."""
    out: dict[str, Measurements] = {}
    for b, s in cases([backend_name]):
        backend = make_backend(b, workdir)
        try:
            out[s] = await run_spec(s, backend)
        finally:
            await backend.aclose()
    return out


# -- sample data ----------------------------------------------------------------------------------------------


def full_media_ref(kind: str = "url") -> MediaRef:
    """A `MediaRef` with every field set, so a backend that drops one is caught."""
    return MediaRef(
        kind=kind,  # type: ignore[arg-type]
        url="https://example.invalid/media/cat.png",
        file_id="file-abc123",
        data_base64="iVBORw0KGgo=",
        mime_type="image/png",
        size_bytes=123_456,
        filename="cat é 猫.png",
        sha256="0" * 64,
        width=640,
        height=480,
        duration_ms=1500,
        page=3,
    )


def all_block_messages(prefix: str = "rt") -> list[Message]:
    """Messages that together use all 11 block types and every optional `Message` field."""
    ann = AnnotationRef(url="https://example.invalid/doc", file_id="file-9", page=2, index=7, title="Spec §3")
    return [
        Message.text_message("You are terse. 系统提示 🚀", role="system", message_id=f"{prefix}-sys"),
        Message(
            message_id=f"{prefix}-user",
            role="user",
            content=[
                TextBlock(text="Look at these:", annotations=[ann]),
                ImageBlock(media=full_media_ref("url"), alt_text="a cat", bbox=[0.1, 0.2, 0.5, 0.75]),
                AudioBlock(media=full_media_ref("data"), transcript="meow", sample_rate=16_000, channels=1),
                VideoBlock(media=full_media_ref("file_id"), thumbnail=full_media_ref("url")),
                DocumentBlock(media=full_media_ref("file_id"), text="page text", pages=[1, 2], excerpt="excerpt"),
                DataBlock(mime_type="application/json", data_base64="e30=", media=full_media_ref("data")),
            ],
            metadata={"source": "conformance", "nested": {"list": [1, 2.5, None, True], "ünï": "cødé"}},
            timestamp=1_700_000_000.123456,
        ),
        Message(
            message_id=17,
            role="assistant",
            content=[
                ReasoningBlock(text="I should call the tool.", summary="call tool"),
                TextBlock(text="Checking."),
                ToolCallBlock(
                    id="call_1", name="lookup", args={"q": "cat", "n": 3, "deep": {"x": [1]}}, tool_type="function"
                ),
            ],
            tools_calls=[
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "lookup", "arguments": '{"q": "cat", "n": 3}'},
                }
            ],
            reasoning="provider-level reasoning text",
            usages=TokenUsages(
                prompt_tokens=120,
                completion_tokens=30,
                total_tokens=150,
                reasoning_tokens=12,
                cache_read_input_tokens=64,
                image_tokens=None,
            ),
            raw={"id": "resp_1", "object": "response", "output": [{"type": "message"}]},
        ),
        Message.tool_message(
            [
                ToolResultBlock(call_id="call_1", output={"hits": [{"title": "Cat", "score": 0.93}]}, name="lookup"),
                ErrorBlock(error="second source timed out", tool_call_id="call_1", code="timeout"),
            ],
            message_id=f"{prefix}-tool",
        ),
        Message(
            message_id=f"{prefix}-final",
            role="assistant",
            content=[
                TextBlock(text="A cat."),
                AnnotationBlock(annotation=ann),
                ToolResultBlock(call_id="call_x", output="plain", status="error"),
            ],
        ),
    ]


def _dump(messages: Sequence[Message]) -> list[dict[str, Any]]:
    return [m.model_dump(mode="json") for m in messages]


def _text(mid: str, text: str | None = None) -> Message:
    return Message.text_message(text or f"message {mid}", message_id=mid, timestamp=1.0)


class _CustomState(AgentState):
    """A subclass with extra fields, to check checkpointers validate into the caller's class."""

    counter: int = 0
    notes: list[str] = Field(default_factory=list)
    plan: dict[str, Any] | None = None


# -- specs ----------------------------------------------------------------------------------------------------


@conformance_spec()
async def spec_round_trip_all_blocks(backend: Backend) -> None:
    """Every block type, MediaRef field and Message field survives the store unchanged."""
    messages = all_block_messages()
    block_types = {b.type for m in messages for b in m.content}
    assert len(block_types) == 11, f"sample lacks block types: {sorted(block_types)}"
    store = backend.open()
    cp = Checkpointer(store, owns_store=False)
    state = _CustomState(
        context=messages[-3:],
        context_summary="earlier: greetings",
        scratchpad="notes ✓",
        counter=5,
        notes=["a", "b"],
        plan={"steps": [1, 2]},
    )
    state.execution_meta.step = 4
    state.execution_meta.status = ExecutionStatus.INTERRUPTED_AFTER
    await cp.aput("rt-thread", state, messages)
    await backend.release(store)

    reader = backend.open()
    cp2 = Checkpointer(reader, owns_store=False)
    loaded = await cp2.aget_messages("rt-thread")
    assert _dump(loaded) == _dump(messages)
    assert [type(b) for m in loaded for b in m.content] == [type(b) for m in messages for b in m.content]
    assert loaded[2].message_id == 17 and isinstance(loaded[2].message_id, int)
    restored = await cp2.aget_state("rt-thread", _CustomState)
    assert isinstance(restored, _CustomState)
    assert restored.model_dump(mode="json") == state.model_dump(mode="json")
    base = await cp2.aget_state("rt-thread")
    assert type(base) is AgentState and _dump(base.context) == _dump(messages[-3:])
    await backend.release(reader)


@conformance_spec()
async def spec_thread_isolation(backend: Backend) -> None:
    """Threads and sessions whose ids look alike never see each other's data."""
    store = backend.open()
    threads = ["a", "A", "a:b", "a%3Ab", "a}{b", "a:b:state", "x" * 300, "线程"]
    for i, tid in enumerate(threads):
        # the same message ids in every thread: dedup must be per thread
        await store.append_messages(tid, [_text("m1", f"{tid}-1"), _text("m2", f"{tid}-2")])
        await store.put_state(tid, {"owner": tid, "i": i})
    for i, tid in enumerate(threads):
        assert [m.text() for m in await store.load_messages(tid)] == [f"{tid}-1", f"{tid}-2"]
        assert await store.get_state(tid) == {"owner": tid, "i": i}
    assert await store.load_messages("never-written") == []
    assert await store.get_state("never-written") is None
    await store.delete_thread("a")
    assert await store.load_messages("a") == [] and await store.get_state("a") is None
    assert [m.text() for m in await store.load_messages("A")] == ["A-1", "A-2"]
    assert await store.get_state("a:b") == {"owner": "a:b", "i": 2}

    pairs = [("ns", "s:x"), ("ns:s", "x"), ("ns", "s"), ("NS", "s"), ("ns2", "s")]
    for ns, sid in pairs:
        await store.add_record(ns, sid, "k", {"ns": ns, "sid": sid})
    for ns, sid in pairs:
        records = await store.list_records(ns, sid)
        assert [(r.key, r.seq, r.version, r.doc) for r in records] == [("k", 1, 1, {"ns": ns, "sid": sid})]
    assert await store.delete_session("ns", "s") == 1
    assert await store.list_records("ns", "s") == []
    assert (await store.get_record("ns", "s:x", "k")) is not None
    await backend.release(store)


@conformance_spec()
async def spec_idempotent_append(backend: Backend) -> None:
    """Re-appending ids is a no-op, the first stored copy wins, and 1 and "1" are different ids."""
    store = backend.open()
    t = "idem"
    assert await store.append_messages(t, []) == 0
    assert await store.append_messages(t, [_text("m1"), _text("m2")]) == 2
    assert await store.append_messages(t, [_text("m2"), _text("m3"), _text("m1"), _text("m3")]) == 1
    assert await store.append_messages(t, [_text("m1", "a different body")]) == 0
    assert await store.append_messages(t, [_text("1")]) == 1
    assert await store.append_messages(t, [Message.text_message("int id", message_id=1, timestamp=1.0)]) == 1
    loaded = await store.load_messages(t)
    assert [m.message_id for m in loaded] == ["m1", "m2", "m3", "1", 1]
    assert loaded[0].text() == "message m1"

    cp = Checkpointer(store, owns_store=False)
    state = AgentState(context=[_text("c1"), _text("c2")])
    partial = Message.text_message("stream chunk", message_id="delta-1", delta=True)
    for _ in range(3):  # a replayed run persists the same checkpoint again
        await cp.aput("idem-cp", state, [*state.context, partial])
    assert [m.message_id for m in await cp.aget_messages("idem-cp")] == ["c1", "c2"]
    await backend.release(store)


@conformance_spec()
async def spec_log_ranges_and_delta_checkpoints(backend: Backend) -> None:
    """Log counts and position ranges; checkpoints refer to logged messages and load back in any process.

    A step writes only its new messages and references; a message whose body differs from its logged copy (a
    pointer) is stored inline; a writer that appended in between does not corrupt the reference; a snapshot in
    the format older versions wrote still loads.
    """
    store = backend.open()
    t = "ranges"
    assert await store.count_messages(t) == 0
    assert await store.load_messages_range(t, 0, 5) == []
    await store.append_messages(t, [_text(f"g{i}") for i in range(5)])
    assert await store.count_messages(t) == 5
    assert [m.message_id for m in await store.load_messages_range(t, 1, 3)] == ["g1", "g2"]
    assert [m.message_id for m in await store.load_messages_range(t, 3, 99)] == ["g3", "g4"]
    assert await store.load_messages_range(t, 4, 4) == []

    writer = Checkpointer(store, owns_store=False)
    state = _CustomState(context=[_text("d0"), _text("d1")], counter=1)
    await writer.aput("delta", state, state.context)
    for step in range(2, 5):
        new = _text(f"d{step}")
        state.context = [*state.context, new]
        state.counter = step
        await writer.aput("delta", state, [new])
    raw = await store.get_state("delta")
    assert raw is not None and raw["context"] == [[0, 5, '"d0"', '"d4"']]
    assert "context" not in raw["state"]

    pointer = Message.text_message("[cleared]", message_id="d1", timestamp=1.0)
    state.context = [state.context[0], pointer, *state.context[2:]]
    await writer.aput("delta", state, [])
    raw = await store.get_state("delta")
    assert raw is not None and len(raw["context"]) == 3 and raw["context"][1]["m"]["message_id"] == "d1"
    other = backend.open()
    await other.append_messages("delta", [_text("x0")])  # another writer appends in between
    state.context = [*state.context, _text("d5")]
    await writer.aput("delta", state, state.context[-1:])
    raw = await store.get_state("delta")
    assert raw is not None and raw["context"][-1]["m"]["message_id"] == "d5"  # its position was uncertain
    reader = Checkpointer(backend.open())
    loaded = await reader.aget_state("delta", _CustomState)
    assert isinstance(loaded, _CustomState) and loaded.counter == 4
    assert [m.text() for m in loaded.context] == [m.text() for m in state.context]
    assert (await reader.aload_state("delta") or {})["context"][1]["content"][0]["text"] == "[cleared]"
    loaded.context.append(_text("d6"))
    await reader.aput("delta", loaded, loaded.context[-1:])
    again = await Checkpointer(backend.open()).aget_state("delta")
    assert again is not None and [m.message_id for m in again.context][-3:] == ["d4", "d5", "d6"]
    assert [m.message_id for m in await reader.aget_messages("delta")][-3:] == ["x0", "d5", "d6"]

    legacy = AgentState(context=[_text("l0"), _text("l1")]).model_dump(mode="json")
    await store.put_state("legacy", legacy)
    old = await reader.aget_state("legacy")
    assert old is not None and [m.message_id for m in old.context] == ["l0", "l1"]
    await backend.release(other)
    await backend.release(reader.store)
    await backend.release(store)


@conformance_spec("durable")
async def spec_resume_after_reopen(backend: Backend) -> None:
    """A new connection sees exactly what a closed one committed, and can continue the thread."""
    first = Checkpointer(backend.open())
    state = _CustomState(context=[_text("r1"), _text("r2")], counter=2)
    await first.aput("resume", state, state.context)
    await first.store.add_record("mem", "resume", "e1", {"v": 1})
    await first.aclose()

    second = Checkpointer(backend.open())
    restored = await second.aget_state("resume", _CustomState)
    assert isinstance(restored, _CustomState) and restored.counter == 2
    assert [m.message_id for m in restored.context] == ["r1", "r2"]
    restored.counter += 1
    restored.context.append(_text("r3"))
    await second.aput("resume", restored, restored.context[-1:])
    record = await second.store.update_record("mem", "resume", "e1", {"v": 2}, expected_version=1)
    assert record.version == 2
    await second.aclose()

    third = Checkpointer(backend.open())
    final = await third.aget_state("resume", _CustomState)
    assert isinstance(final, _CustomState) and final.counter == 3
    assert [m.message_id for m in await third.aget_messages("resume")] == ["r1", "r2", "r3"]
    assert (await third.store.get_record("mem", "resume", "e1")) is not None
    await third.aclose()


@conformance_spec("multiprocess")
async def spec_resume_in_new_process(backend: Backend) -> None:
    """A child process reads what this one wrote, and this one reads what the child wrote."""
    assert backend.url is not None
    writer = Checkpointer(backend.open())
    messages = all_block_messages("mp")
    state = _CustomState(context=messages[-2:], counter=41, notes=["from parent"])
    await writer.aput("mp-thread", state, messages)
    await writer.aclose()

    out = await _child("read", backend.url, "mp-thread")
    payload = json.loads(out)
    assert payload["messages"] == _dump(messages)
    assert payload["state"] == state.model_dump(mode="json")

    await _child("write", backend.url, "mp-child", "25")
    reader = Checkpointer(backend.open())
    child_state = await reader.aget_state("mp-child", _CustomState)
    assert isinstance(child_state, _CustomState) and child_state.counter == 25
    assert [m.message_id for m in await reader.aget_messages("mp-child")] == [f"w{i}" for i in range(25)]
    await reader.aclose()


@conformance_spec()
async def spec_concurrent_appends(backend: Backend) -> Measurements:
    """1,000 appends from 8 tasks (over two connections where possible) lose nothing and duplicate nothing."""
    tasks, per_task = 8, 125
    stores = [backend.open(), backend.open()] if backend.durable else [backend.open()]
    thread = "concurrent"
    calls = 0
    added: list[int] = []

    async def worker(t: int) -> None:
        nonlocal calls
        store = stores[t % len(stores)]
        for j in range(per_task):
            batch = [_text(f"t{t}-{j}")]
            if j % 10 == 9:  # replay an earlier message of this task together with the new one
                batch.insert(0, _text(f"t{t}-{j - 5}"))
            added.append(await store.append_messages(thread, batch))
            calls += 1

    start = time.perf_counter()
    await asyncio.gather(*(worker(t) for t in range(tasks)))
    elapsed = time.perf_counter() - start

    ids = [m.message_id for m in await stores[0].load_messages(thread)]
    expected = {f"t{t}-{j}" for t in range(tasks) for j in range(per_task)}
    assert sum(added) == tasks * per_task, f"appends reported {sum(added)} new messages"
    assert len(ids) == len(expected), f"log holds {len(ids)} messages, expected {len(expected)}"
    assert set(ids) == expected
    for t in range(tasks):
        own = [i for i in ids if isinstance(i, str) and i.startswith(f"t{t}-")]
        assert own == [f"t{t}-{j}" for j in range(per_task)], f"task {t}'s messages are out of order"
    for store in stores:
        await backend.release(store)
    return {"appends_per_s": calls / elapsed, "appends": float(calls), "seconds": elapsed}


@conformance_spec("crash_safe")
async def spec_crash_leaves_last_checkpoint(backend: Backend) -> Measurements:
    """SIGKILL a process that writes checkpoints in a loop: the last committed one is readable and whole."""
    assert backend.url is not None
    last = await _kill_writer("crash-writer", backend.url, "crash", steps=20, pause=0.003)

    cp = Checkpointer(backend.open())
    state = await cp.aget_state("crash")
    assert state is not None, "no checkpoint readable after the crash"
    step = state.execution_meta.step
    assert step >= last, f"checkpoint {last} was reported committed but the store holds step {step}"
    assert state.scratchpad == _crash_payload(step), "the stored state is a mix of two checkpoints"
    assert [m.message_id for m in state.context] == [f"c{i}" for i in range(max(0, step - 4), step + 1)]
    ids = [m.message_id for m in await cp.aget_messages("crash")]
    assert ids in ([f"c{i}" for i in range(step + 1)], [f"c{i}" for i in range(step + 2)]), ids[-5:]
    # the store is not wedged: a new process can keep writing the thread
    state.execution_meta.step += 1
    await cp.aput("crash", state, [_text("after-crash")])
    again = await cp.aget_state("crash")
    assert again is not None and again.execution_meta.step == step + 1
    await cp.aclose()
    return {"checkpoints_before_kill": float(last + 1), "step_recovered": float(step)}


@conformance_spec()
async def spec_versioned_records(backend: Backend) -> Measurements:
    """Optimistic updates: one winner per version, atomic batches, no lost updates under contention."""
    stores = [backend.open(), backend.open()] if backend.durable else [backend.open()]
    ns, sid = "mem", "versions"
    store = stores[0]
    first = await store.add_record(ns, sid, "a", {"n": 0})
    second = await store.add_record(ns, sid, "b", {"n": 0})
    assert (first.version, second.version) == (1, 1) and first.seq < second.seq
    try:
        await store.add_record(ns, sid, "a", {"n": 99})
    except ConflictError:
        pass
    else:
        raise AssertionError("adding an existing key must raise ConflictError")

    async def attempt(i: int) -> object:
        try:
            return await stores[i % len(stores)].update_record(ns, sid, "a", {"winner": i}, expected_version=1)
        except ConflictError as exc:
            return exc

    results = await asyncio.gather(*(attempt(i) for i in range(8)))
    winners = [r for r in results if not isinstance(r, ConflictError)]
    assert len(winners) == 1, f"{len(winners)} concurrent updates of version 1 succeeded"
    current = await store.get_record(ns, sid, "a")
    assert current is not None and current.version == 2 and current.doc == winners[0].doc  # type: ignore[attr-defined]

    # an all-or-nothing batch: a stale version on "b" leaves "a" untouched too
    try:
        await store.update_records(ns, sid, [("a", {"batch": 1}, 2), ("b", {"batch": 1}, 7)])
    except ConflictError as exc:
        assert exc.key == "b" and exc.expected == 7 and exc.actual == 1
    else:
        raise AssertionError("a stale version inside update_records must raise ConflictError")
    assert (await store.get_record(ns, sid, "a")) == current
    done = await store.update_records(ns, sid, [("b", {"batch": 2}, 1), ("a", {"batch": 2}, None)])
    assert [(r.key, r.version, r.doc) for r in done] == [("b", 2, {"batch": 2}), ("a", 3, {"batch": 2})]
    try:
        await store.update_record(ns, sid, "missing", {"x": 1})
    except RecordNotFoundError:
        pass
    else:
        raise AssertionError("updating a missing key must raise RecordNotFoundError")

    # read-modify-write increments with retry: none may be lost
    await store.add_record(ns, sid, "counter", {"n": 0})
    workers, increments, retries = 8, 10, 0

    async def incrementer(i: int) -> None:
        nonlocal retries
        s = stores[i % len(stores)]
        for _ in range(increments):
            while True:
                rec = await s.get_record(ns, sid, "counter")
                assert rec is not None
                try:
                    await s.update_record(ns, sid, "counter", {"n": rec.doc["n"] + 1}, expected_version=rec.version)
                    break
                except ConflictError:
                    retries += 1

    await asyncio.gather(*(incrementer(i) for i in range(workers)))
    counter = await store.get_record(ns, sid, "counter")
    assert counter is not None and counter.doc == {"n": workers * increments}
    assert counter.version == workers * increments + 1

    listed = await store.list_records(ns, sid)
    assert [r.key for r in listed] == ["a", "b", "counter"]
    assert [r.seq for r in listed] == sorted(r.seq for r in listed) and len({r.seq for r in listed}) == 3
    assert await store.delete_record(ns, sid, "b") is True and await store.delete_record(ns, sid, "b") is False
    later = await store.add_record(ns, sid, "d", {})
    assert later.seq > listed[-1].seq, "seq must keep increasing after a delete"
    assert [r.key for r in await store.list_records(ns, sid)] == ["a", "counter", "d"]
    for s in stores:
        await backend.release(s)
    return {"conflict_retries": float(retries)}


@conformance_spec()
async def spec_rejects_bad_data(backend: Backend) -> None:
    """Non-JSON data is refused with an error naming the key or thread, and nothing is written."""
    store = backend.open()
    for bad in ({"x": float("nan")}, {"x": {1, 2}}, {"x": object()}):
        try:
            await store.add_record("ns", "s", "bad-key", bad)
        except StorageError as exc:
            assert "bad-key" in str(exc)
        else:
            raise AssertionError(f"{bad!r} must be rejected")
    assert await store.list_records("ns", "s") == []
    try:
        await store.put_state("bad-thread", {"when": float("inf")})
    except StorageError as exc:
        assert "bad-thread" in str(exc)
    else:
        raise AssertionError("a non-JSON state must be rejected")
    assert await store.get_state("bad-thread") is None
    raw_bad = Message.text_message("hi", message_id="m-bad", raw={"blob": b"\x00\xff"})
    try:
        await store.append_messages("bad-thread", [_text("ok"), raw_bad])
    except StorageError as exc:
        assert "bad-thread" in str(exc) and "m-bad" in str(exc)
    else:
        raise AssertionError("a message with non-JSON raw data must be rejected")
    assert await store.load_messages("bad-thread") == []

    cp = Checkpointer(store, owns_store=False)
    await cp.aput("typed", AgentState(context=[_text("t1")]))

    class Strict(AgentState):
        required_field: int

    try:
        await cp.aget_state("typed", Strict)
    except StorageError as exc:
        assert "typed" in str(exc) and "Strict" in str(exc)
    else:
        raise AssertionError("a snapshot that does not validate must raise StorageError")
    await backend.release(store)


def _nested(depth: int) -> Any:
    value: Any = "leaf"
    for i in range(depth):
        value = [value] if i % 2 else {"k": value}
    return value


@conformance_spec()
async def spec_codec_limits(backend: Backend) -> None:
    """What a store accepts it reads back: the codec's limits are checked at write time, with one NaN policy.

    Deep tool arguments and output (200+ levels) used to be stored and then made the whole thread unreadable;
    NaN became ``null`` in the checkpointer while records refused it. Now every over-deep or non-finite value is
    a `StorageError` at write time naming the message or key, nothing of the batch is written, and the thread's
    earlier messages stay readable. Lone surrogates arrive already replaced by U+FFFD (`windowkeeper.boundary`).
    """
    from ..boundary import MAX_JSON_DEPTH

    store = backend.open()
    thread = "codec"
    assert await store.append_messages(thread, [_text("before")]) == 1
    deepest_ok = MAX_JSON_DEPTH - 4  # message envelope: object > content list > block object > args object
    fine = Message(
        role="assistant",
        message_id="deep-ok",
        content=[ToolCallBlock(id="c-ok", name="f", args={"a": _nested(deepest_ok - 1)})],
    )
    assert await store.append_messages(thread, [fine]) == 1
    for depth in (MAX_JSON_DEPTH, 200, 260, 600):
        # beyond 240 levels the constructor itself refuses; model_construct stands for a caller's in-place edit
        block = (ToolCallBlock if depth < 240 else ToolCallBlock.model_construct)(
            id=f"c{depth}",
            name="f",
            args={"a": _nested(depth)},
        )
        calls = Message(role="assistant", message_id=f"deep-call-{depth}", content=[block])
        try:
            await store.append_messages(thread, [_text(f"ok-{depth}"), calls])
        except StorageError as exc:
            assert f"deep-call-{depth}" in str(exc) and "levels deep" in str(exc), str(exc)
        else:
            raise AssertionError(f"tool arguments nested {depth} levels must be refused at write time")
    # built without validation, as a caller editing a block's output in place could
    deep_output = Message.tool_message(
        [ToolResultBlock.model_construct(call_id="c-out", output=_nested(200))],
        message_id="deep-out",
    )
    try:
        await store.append_messages(thread, [deep_output])
    except StorageError as exc:
        assert "deep-out" in str(exc)
    else:
        raise AssertionError("tool output nested 200 levels must be refused at write time")
    for bad in (
        Message.text_message("nan", message_id="nan-meta", metadata={"score": float("nan")}),
        Message.tool_message([ToolResultBlock(call_id="c", output={"x": [float("inf")]})], message_id="nan-out"),
        Message.text_message("nan", message_id="nan-time", timestamp=float("nan")),
    ):
        try:
            await store.append_messages(thread, [bad])
        except StorageError as exc:
            assert str(bad.message_id) in str(exc) and "NaN or Infinity" in str(exc), str(exc)
        else:
            raise AssertionError(f"{bad.message_id}: NaN/Infinity must be refused, not stored as null")
    assert [m.message_id for m in await store.load_messages(thread)] == ["before", "deep-ok"]
    restored = (await store.load_messages(thread))[1]
    assert restored.model_dump(mode="json") == fine.model_dump(mode="json")

    for doc in ({"a": _nested(400)}, {"a": _nested(2_000)}):
        try:
            await store.add_record("ns", "codec", "deep", doc)
        except StorageError as exc:
            assert "deep" in str(exc) and "levels deep" in str(exc), str(exc)
        else:
            raise AssertionError("a record nested beyond the limit must be refused at write time")
    assert await store.get_record("ns", "codec", "deep") is None

    class Scored(AgentState):
        score: float = 0.0

    cp = Checkpointer(store, owns_store=False)
    await cp.aput("nan-state", Scored(context=[_text("s1")], score=1.5))
    try:
        await cp.aput("nan-state", Scored(context=[_text("s1")], score=float("nan")))
    except StorageError as exc:
        assert "nan-state" in str(exc) and "NaN or Infinity" in str(exc), str(exc)
    else:
        raise AssertionError("the checkpointer must refuse NaN like the memory does, not store it as null")
    kept = await cp.aget_state("nan-state", Scored)
    assert isinstance(kept, Scored) and kept.score == 1.5

    surrogate = Message.text_message("half \ud83d emoji", message_id="sur")
    await store.append_messages("surrogates", [surrogate])
    assert [m.text() for m in await store.load_messages("surrogates")] == ["half \ufffd emoji"]
    await backend.release(store)


@conformance_spec("multiprocess")
async def spec_fork_safe(backend: Backend) -> None:
    """A store used before ``os.fork()`` works in the child (it reconnects) and in the parent afterwards."""
    if not hasattr(os, "fork"):
        return
    store = backend.open()
    await store.append_messages("fork", [_text("parent-1")])
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - runs in the child, which reports through the pipe
        status = 1
        try:
            os.close(read)
            signal.alarm(20)  # a hang must end the child, not the suite

            async def child() -> str:
                added = await store.append_messages("fork", [_text("child-1")])
                ids = [m.message_id for m in await store.load_messages("fork")]
                return json.dumps({"added": added, "ids": ids})

            os.write(write, asyncio.run(child()).encode())
            status = 0
        finally:
            os._exit(status)
    os.close(write)
    deadline = time.monotonic() + 30
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            break
        if time.monotonic() > deadline:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            raise AssertionError("a store used before fork() hung in the child")
        await asyncio.sleep(0.05)
    with os.fdopen(read, "rb") as pipe:
        report = pipe.read().decode()
    assert os.waitstatus_to_exitcode(status) == 0 and report, f"child failed (status {status}): {report!r}"
    assert json.loads(report) == {"added": 1, "ids": ["parent-1", "child-1"]}
    await store.append_messages("fork", [_text("parent-2")])
    assert [m.message_id for m in await store.load_messages("fork")] == ["parent-1", "child-1", "parent-2"]
    await backend.release(store)


# -- crashes, several processes, the adapters -------------------------------------------------------------------


def crash_doc(step: int, version: int = 1) -> dict[str, Any]:
    """The record the crash writer stores at ``step`` (``version`` 2 is its update one step later): unicode,
    nesting and a body of a few kilobytes, so a torn write could not pass for a whole one."""
    return {
        "step": step,
        "version": version,
        "text": f"récord {step} ✓ " * 200,
        "nested": {"list": [step, {"deep": [version, "ok"]}], "flag": version == 2},
        "end": f"end {step}/{version}",
    }


def crash_message(step: int) -> Message:
    message = all_block_messages(f"k{step}")[step % len(all_block_messages("probe"))]
    return message.model_copy(update={"message_id": f"k{step}", "timestamp": 1_700_000_000.0 + step})


@conformance_spec("crash_safe")
async def spec_crash_mid_write_keeps_every_record(backend: Backend) -> Measurements:
    """SIGKILL a process writing records, versioned updates, messages and states: nothing committed is lost or
    torn, at most the step in flight is partly there, every row reads back byte-identical, and no seq repeats."""
    from ..storage.check import check_store

    assert backend.url is not None
    last = await _kill_writer("crash-records", backend.url, "crashrec", steps=15, pause=0.002)

    store = backend.open()
    assert await check_store(store) == [], "a row written before the kill does not read back"
    records = {r.key: r for r in await store.list_records("mem", "crashrec")}
    seqs = [r.seq for r in records.values()]
    assert len(seqs) == len(set(seqs)), f"a seq was handed out twice: {sorted(seqs)}"
    for step in range(last + 2):
        record = records.get(f"r{step}")
        if record is None:
            assert step == last + 1, f"record r{step} of committed step {step} (last {last}) is lost"
            continue
        updated = step < last or (step == last and record.version == 2)
        want = crash_doc(step, 2 if updated else 1)
        assert record.version == (2 if updated else 1), f"r{step} at version {record.version}"
        assert json.dumps(record.doc, ensure_ascii=False) == json.dumps(want, ensure_ascii=False), f"r{step} torn"
    messages = await store.load_messages("crashrec")
    assert len(messages) in (last + 1, last + 2), f"{len(messages)} messages after {last + 1} committed steps"
    for step, message in enumerate(messages):
        assert message.model_dump_json() == crash_message(step).model_dump_json(), f"message k{step} differs"
    state = await store.get_state("crashrec")
    assert state is not None and state["step"] in (last, last + 1)
    # the store is not wedged: a writer carries on where the killed one stopped
    again = await store.add_record("mem", "crashrec", "after", {"ok": True})
    assert again.seq > max(seqs)
    await backend.release(store)
    return {"steps_before_kill": float(last + 1)}


@conformance_spec("multiprocess")
async def spec_shared_by_processes(backend: Backend) -> Measurements:
    """Three processes at once share one checkpointer thread, one memory session and a `Window` store: every
    message is logged once in order per writer, no memory event is lost or doubled, and each process's window
    thread continues in this process exactly where that process left it."""
    assert backend.url is not None
    workers, turns = 3, 6
    url = backend.url
    outputs = await asyncio.gather(*(_child("share", url, "shared", str(w), str(turns)) for w in range(workers)))
    store = backend.open()
    ids = [m.message_id for m in await store.load_messages("shared")]
    for w in range(workers):
        own = [i for i in ids if isinstance(i, str) and i.startswith(f"p{w}-")]
        assert own == [f"p{w}-{t}" for t in range(turns)], f"worker {w}'s messages: {own}"
    assert len(ids) == len(set(ids)) == workers * turns
    from ..memory import InMemoryMemory

    memory = InMemoryMemory(store=store, enable_context_management=False)
    memory._owns_store = False
    events = await memory.list("shared")
    expected_ids = sorted(f"e{w}-{t}" for w in range(workers) for t in range(turns))
    assert sorted(e["message"]["id"] for e in events) == expected_ids
    seqs = [r.seq for r in await store.list_records("memory", "shared")]
    assert len(seqs) == len(set(seqs))
    from ..integrations.window import Window

    window = Window(budget=_SHARE_BUDGET, store=store)
    for w, out in enumerate(outputs):
        child = json.loads(out)
        fit = await window.afit(_share_history(w, turns), thread_id=f"win-{w}")
        assert fit.messages == child["messages"] and fit.summary == child["summary"], f"window thread win-{w}"
    await backend.release(store)
    return {"processes": float(workers)}


_SHARE_BUDGET = 400


def _share_history(worker: int, turns: int) -> list[dict[str, Any]]:
    history: list[dict[str, Any]] = [{"role": "system", "content": "You are terse."}]
    for t in range(turns):
        history.append({"role": "user", "content": f"worker {worker} question {t}: " + "why? " * 20})
        history.append({"role": "assistant", "content": f"answer {t} " + "because. " * 20})
    return history


@conformance_spec()
async def spec_adapters_on_fake_servers(backend: Backend) -> Measurements:
    """`Window` in the Anthropic and Gemini formats, on this store, driving the official SDKs against the fake
    servers: each request carries exactly what `fit` returned, and a window reopened on the store continues the
    thread with the same view an uninterrupted one sends."""
    import anthropic
    from google import genai
    from google.genai import types as genai_types

    from ..integrations.window import Window
    from .fake_servers import FakeAnthropicServer, FakeGeminiServer

    sent = 0
    for fmt in ("anthropic", "gemini"):
        server = FakeAnthropicServer() if fmt == "anthropic" else FakeGeminiServer()
        with server:
            store = backend.open()
            window = Window(budget=_SHARE_BUDGET, format=fmt, store=store, thread_id=f"sdk-{fmt}")
            history: list[Any] = []
            bodies: list[Any] = []
            for turn in range(6):
                server.reply(f"reply {turn} " + "detail " * 15)
                history.append(
                    {"role": "user", "content": f"question {turn} " + "more " * 15}
                    if fmt == "anthropic"
                    else {"role": "user", "parts": [{"text": f"question {turn} " + "more " * 15}]}
                )
                fit = await window.afit(history, system="Be brief.")
                if fmt == "anthropic":
                    with anthropic.Anthropic(base_url=server.base_url, api_key="test", max_retries=0) as client:
                        reply = client.messages.create(
                            model="claude-haiku-4-5",
                            max_tokens=64,
                            messages=fit.messages,
                            system=fit.system or anthropic.omit,
                        )
                    text = "".join(b.text for b in reply.content if b.type == "text")
                    history.append({"role": "assistant", "content": text})
                    assert server.last_request.json["messages"] == fit.messages
                else:
                    options = genai_types.HttpOptions(base_url=server.base_url)
                    with genai.Client(api_key="test", http_options=options) as g:
                        answer = g.models.generate_content(
                            model="gemini-2.0-flash", contents=fit.messages, config={"system_instruction": fit.system}
                        )
                    history.append({"role": "model", "parts": [{"text": answer.text or ""}]})
                    assert server.last_request.json["contents"] == fit.messages
                bodies.append(fit.messages)
                sent += 1
            await window.aclose()
            await backend.release(store)
            reopened_store = backend.open()
            reopened = Window(budget=_SHARE_BUDGET, format=fmt, store=reopened_store, thread_id=f"sdk-{fmt}")
            history.append(history[-2])  # one more user turn, after the restart
            fresh = Window(budget=_SHARE_BUDGET, format=fmt, thread_id=f"sdk-{fmt}")
            for k in range(1, len(history) + 1, 2):  # an uninterrupted window sees every call
                expected = await fresh.afit(history[:k], system="Be brief.")
            resumed = await reopened.afit(history, system="Be brief.")
            assert (resumed.messages, resumed.system) == (expected.messages, expected.system), fmt
            await reopened.aclose()
            await fresh.aclose()
            await backend.release(reopened_store)
    return {"sdk_calls": float(sent)}


# -- child-process programs -----------------------------------------------------------------------------------


async def _kill_writer(command: str, url: str, thread: str, *, steps: int, pause: float) -> int:
    """Start the child ``command`` (it prints each committed step), SIGKILL it after ``steps`` steps plus
    ``pause`` seconds (somewhere inside the next writes), and return the last step it reported committed."""
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "windowkeeper.testing.conformance",
        command,
        url,
        thread,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    assert proc.stdout is not None and proc.stderr is not None
    last = -1
    killed = False
    try:
        deadline = time.monotonic() + 90
        while last < steps:
            line = await asyncio.wait_for(proc.stdout.readline(), timeout=max(0.1, deadline - time.monotonic()))
            if not line:
                err = (await proc.stderr.read()).decode(errors="replace")
                raise AssertionError(f"{command} exited early (code {await proc.wait()}): {err[-2000:]}")
            last = int(line)
        await asyncio.sleep(pause)
        proc.send_signal(signal.SIGKILL)
        killed = True
        rest = await proc.stdout.read()
    finally:
        # never signal twice: Popen.send_signal polls, which would reap the child before asyncio's watcher does
        if not killed:
            with contextlib.suppress(ProcessLookupError):
                proc.kill()
        await proc.wait()
    for line in rest.splitlines():
        last = max(last, int(line))
    assert proc.returncode == -signal.SIGKILL
    return last


async def _child(*args: str) -> str:
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "windowkeeper.testing.conformance",
        *args,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(proc.communicate(), timeout=120)
    if proc.returncode != 0:
        raise AssertionError(f"child {args[0]!r} failed ({proc.returncode}): {err.decode(errors='replace')[-2000:]}")
    return out.decode()


def _crash_payload(step: int) -> str:
    return f"step {step}: " + "checkpoint payload " * 4000 + f"end {step}"


async def _child_main(argv: Sequence[str]) -> int:
    command, url, thread = argv[0], argv[1], argv[2]
    cp = Checkpointer(open_store(url))
    try:
        if command == "read":
            data = await cp.aload_state(thread)
            messages = await cp.aget_messages(thread)
            print(json.dumps({"state": data, "messages": _dump(messages)}))
        elif command == "write":
            count = int(argv[3])
            state = _CustomState(counter=count, notes=["from child"])
            state.context = [_text(f"w{i}") for i in range(count)]
            await cp.aput(thread, state, state.context)
        elif command == "crash-writer":
            log: list[Message] = []
            step = 0
            while True:
                msg = _text(f"c{step}")
                log.append(msg)
                snapshot = AgentState(context=log[-5:], scratchpad=_crash_payload(step))
                snapshot.execution_meta.step = step
                await cp.aput(thread, snapshot, [msg])
                print(step, flush=True)
                step += 1
        elif command == "crash-records":
            await _crash_records(cp.store, thread)
        elif command == "share":
            print(json.dumps(await _share(cp, thread, int(argv[3]), int(argv[4]))))
        else:
            print(
                f"unknown command {command!r}; use read, write, crash-writer, crash-records or share", file=sys.stderr
            )
            return 2
    finally:
        await cp.aclose()
    return 0


async def _crash_records(store: SessionStore, thread: str) -> None:
    """Steps until killed: add ``r<step>``, update ``r<step-1>`` (version-checked), append, put the state."""
    step = 0
    while True:
        await store.add_record("mem", thread, f"r{step}", crash_doc(step))
        if step:
            await store.update_record("mem", thread, f"r{step - 1}", crash_doc(step - 1, 2), expected_version=1)
        await store.append_messages(thread, [crash_message(step)])
        await store.put_state(thread, {"step": step})
        print(step, flush=True)
        step += 1


async def _share(cp: Checkpointer, thread: str, worker: int, turns: int) -> dict[str, Any]:
    """One of the processes of `spec_shared_by_processes`: checkpoints, memory events and a window thread."""
    from ..integrations.window import Window
    from ..memory import InMemoryMemory

    memory = InMemoryMemory(store=cp.store, enable_context_management=False)
    memory._owns_store = False
    window = Window(budget=_SHARE_BUDGET, store=cp.store, thread_id=f"win-{worker}")
    history = _share_history(worker, turns)
    fit = None
    for t in range(turns):
        message = _text(f"p{worker}-{t}")
        await cp.aput(thread, AgentState(context=[message]), [message])
        await memory.add(
            {"message": {"id": f"e{worker}-{t}", "role": "user", "content": f"event {t}"}}, session_id=thread
        )
        fit = await window.afit(history[: 3 + 2 * t])
    assert fit is not None
    fit = await window.afit(history)
    await window.aclose()
    return {"messages": fit.messages, "summary": fit.summary}


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) < 3:
        print(
            "usage: python -m windowkeeper.testing.conformance read|write|crash-writer URL THREAD [N]", file=sys.stderr
        )
        return 2
    return asyncio.run(_child_main(args))


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    sys.exit(main())


__all__ = [
    "Backend",
    "BackendFactory",
    "BackendInfo",
    "all_block_messages",
    "backends",
    "cases",
    "conformance_spec",
    "full_media_ref",
    "make_backend",
    "register_backend",
    "run_all",
    "run_spec",
    "specs",
]
