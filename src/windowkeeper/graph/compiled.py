"""`CompiledGraph`: runs a checked graph on one thread of conversation.

A run loads the thread's stored state (so a new process continues where the last one stopped), appends the input,
walks the nodes, and at its end (or on an error, a stop or an interrupt) runs the context manager once more and
persists the trimmed state together with the messages this run added, each exactly once and in order.

Everything is implemented once, as an async generator of events; `ainvoke` drains it, `invoke`/`stream` drive it
on a fresh event loop per call, and refuse to run inside a running loop (that would block it). Synchronous node
functions and routing conditions run in a worker thread (with the caller's context variables), so a slow one never
stalls the loop: concurrent runs on other threads of conversation keep going while it works.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import uuid
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Hashable, Iterator, Mapping
from typing import Any, Literal, TypeVar, cast

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from .._bridge import refuse_in_loop, run_checked, run_in_worker, run_sync
from .._validate import check_positive_int
from ..constants import END
from ..errors import ConfigurationError, GraphError, RecursionLimitError
from ..messages import Message, TokenUsages
from ..prompt.recall import is_recall
from ..state import AgentState, ExecutionStatus, add_messages
from .checkpointer import BaseCheckpointer
from .injection import ParamPlan, Resolver, build_arguments
from .runtime import CompiledNode, ConditionalEdge, ContextManagerLike, RunContext
from .updates import adopt_state, apply_update, output_to_update

logger = logging.getLogger(__name__)

T = TypeVar("T")

DEFAULT_RECURSION_LIMIT = 25
_RESUME_KEY = "resume_node"
StreamMode = Literal["events", "messages"]


class GraphEvent(BaseModel):
    """One step of a streamed run.

    ``node``: a node finished (``messages`` are the ones it added). ``interrupt``: the run paused before/after
    ``node``. ``end``: the run is over; ``result`` is what `ainvoke` returns.
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    event: Literal["node", "interrupt", "end"]
    node: str | None = None
    step: int = 0
    messages: list[Message] = Field(default_factory=list)
    state: AgentState | None = None
    result: dict[str, Any] | None = None


def _total_usage(messages: list[Message]) -> TokenUsages:
    total = TokenUsages()
    for message in messages:
        if message.usages is not None:
            total = total + message.usages
    return total


class _RunConfig:
    def __init__(self, config: Mapping[str, Any] | None) -> None:
        if config is not None and not isinstance(config, Mapping):
            raise ConfigurationError(f"config must be a dict like {{'thread_id': 'abc'}}, got {type(config).__name__}")
        raw = dict(config or {})
        configurable = raw.get("configurable")
        thread_id = raw.get("thread_id")
        if thread_id is None and isinstance(configurable, Mapping):
            thread_id = configurable.get("thread_id")
        if thread_id is None:
            thread_id = uuid.uuid4().hex
        if not isinstance(thread_id, (str, int)) or str(thread_id) == "":
            raise ConfigurationError(f"config['thread_id'] must be a non-empty string, got {thread_id!r}")
        limit = raw.get("recursion_limit", DEFAULT_RECURSION_LIMIT)
        check_positive_int("config['recursion_limit']", limit)
        raw["thread_id"] = str(thread_id)
        raw["recursion_limit"] = limit
        self.thread_id = str(thread_id)
        self.recursion_limit = limit
        self.data = raw


class CompiledGraph:
    """A runnable graph. Create it with `StateGraph.compile`."""

    def __init__(
        self,
        *,
        state_cls: type[AgentState],
        state_template: AgentState | None,
        context_manager: ContextManagerLike | None,
        nodes: dict[str, CompiledNode],
        edges: dict[str, str],
        conditions: dict[str, tuple[ConditionalEdge, tuple[ParamPlan, ...], bool]],
        entry_point: str,
        checkpointer: Any,
        interrupt_before: frozenset[str],
        interrupt_after: frozenset[str],
        resolver: Resolver,
    ) -> None:
        self.state_cls = state_cls
        self.state_template = state_template
        self.context_manager = context_manager
        self.checkpointer = checkpointer
        self.nodes = nodes
        self.edges = edges
        self.conditions = conditions
        self.entry_point = entry_point
        self.interrupt_before = interrupt_before
        self.interrupt_after = interrupt_after
        self.resolver = resolver
        resolver.register(self)
        self._locks: dict[str, tuple[asyncio.AbstractEventLoop, asyncio.Lock]] = {}
        self._active: dict[str, AgentState] = {}

    # -- public API ---------------------------------------------------------------------------------------

    async def ainvoke(self, input: Mapping[str, Any] | None, config: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """Run to the end (or an interrupt) and return ``{"messages", "state", "usage", "thread_id", ...}``."""
        result: dict[str, Any] | None = None
        async for event in self._run(input, config):
            if event.result is not None:
                result = event.result
        assert result is not None
        return result

    def invoke(self, input: Mapping[str, Any] | None, config: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """Synchronous `ainvoke`; raises RuntimeError inside a running event loop."""
        return run_sync(
            lambda: self._on_private_loop(self.ainvoke(input, config)),
            caller="CompiledGraph.invoke()",
            instead="await graph.ainvoke(...)",
        )

    async def astream(
        self,
        input: Mapping[str, Any] | None,
        config: Mapping[str, Any] | None = None,
        stream_mode: StreamMode = "events",
    ) -> AsyncIterator[Any]:
        """Yield a `GraphEvent` per node (``"events"``), or each new message as it is produced (``"messages"``)."""
        if stream_mode not in ("events", "messages"):
            raise ConfigurationError(f"stream_mode must be 'events' or 'messages', got {stream_mode!r}")
        async for event in self._run(input, config):
            if stream_mode == "events":
                yield event
            elif event.event == "node":
                for message in event.messages:
                    yield message

    def stream(
        self,
        input: Mapping[str, Any] | None,
        config: Mapping[str, Any] | None = None,
        stream_mode: StreamMode = "events",
    ) -> Iterator[Any]:
        """Synchronous `astream`; raises RuntimeError inside a running event loop."""
        refuse_in_loop("CompiledGraph.stream()", "async for event in graph.astream(...)")
        agen = cast(AsyncGenerator[Any, None], self.astream(input, config, stream_mode))

        async def _next() -> Any:
            return await agen.__anext__()

        # one loop for the whole stream (the generator lives on it), closed with the stream
        with asyncio.Runner() as runner:
            try:
                while True:
                    try:
                        item = runner.run(_next())
                    except StopAsyncIteration:
                        return
                    yield item
            finally:
                runner.run(agen.aclose())
                runner.run(self._release_loop_resources())

    async def aget_state(self, config: Mapping[str, Any]) -> AgentState | None:
        """The stored state of ``config['thread_id']`` (None for a thread that has never run)."""
        cfg = _RunConfig(config)
        state: AgentState | None = await self.checkpointer.aget_state(cfg.thread_id, self.state_cls)
        return state

    def get_state(self, config: Mapping[str, Any]) -> AgentState | None:
        # reads the checkpointer only: no node ran, so no node's client needs closing
        refuse_in_loop("CompiledGraph.get_state()", "await graph.aget_state(...)")
        checkpointer = self.checkpointer
        direct = isinstance(checkpointer, BaseCheckpointer) and checkpointer.steps_directly
        return run_checked(self.aget_state(config), direct=direct, loopless=direct and checkpointer.steps_without_loop)

    def stop(self, config: Mapping[str, Any]) -> bool:
        """Ask the run on ``config['thread_id']`` to stop after its current node; False when none is running."""
        state = self._active.get(_RunConfig(config).thread_id)
        if state is None:
            return False
        state.request_stop()
        return True

    async def astop(self, config: Mapping[str, Any]) -> bool:
        return self.stop(config)

    # -- internals ----------------------------------------------------------------------------------------

    async def _on_private_loop(self, work: Awaitable[T]) -> T:
        try:
            return await work
        finally:
            await self._release_loop_resources()

    async def _release_loop_resources(self) -> None:
        """Close the nodes' SDK clients bound to the loop a sync run used.

        Provider clients keep one connection pool per event loop. The sync API's loop (one per thread, see
        `windowkeeper._bridge`) is closed without awaiting anything when its thread ends, so a pool left open there
        would leak its sockets. Async callers own their loop, so this runs only for `invoke`/`stream`.
        """
        for node in self.nodes.values():
            release = getattr(node.component, "aclose", None)
            if release is None:
                continue
            try:
                await release()
            except Exception:
                logger.warning("node %r: closing its client failed", node.name, exc_info=True)

    def _lock(self, thread_id: str) -> asyncio.Lock:
        loop = asyncio.get_running_loop()
        entry = self._locks.get(thread_id)
        if entry is None or entry[0] is not loop:
            entry = (loop, asyncio.Lock())
            self._locks[thread_id] = entry
        return entry[1]

    async def _load(self, thread_id: str) -> AgentState:
        stored = await self.checkpointer.aget_state(thread_id, self.state_cls)
        if stored is not None:
            if not isinstance(stored, self.state_cls):
                stored = self.state_cls.model_validate(stored.model_dump())
            return stored
        template = self.state_template
        if template is not None:
            return template.model_copy(deep=True)
        return self.state_cls()

    def _merge_input(self, state: AgentState, input: Mapping[str, Any] | None) -> list[Message]:
        if input is None:
            return []
        if not isinstance(input, Mapping):
            raise ConfigurationError(
                f"input must be a dict like {{'messages': [Message, ...]}}, got {type(input).__name__}",
            )
        raw = input.get("messages", [])
        items = [raw] if isinstance(raw, (Message, Mapping)) else list(raw or [])
        messages: list[Message] = []
        for index, item in enumerate(items):
            if isinstance(item, Message):
                messages.append(item)
                continue
            try:
                messages.append(Message.model_validate(item))
            except ValidationError as exc:
                raise ConfigurationError(
                    f"input['messages'][{index}] is not a valid Message{_message_hint(item)}: {exc}"
                ) from exc
        before = {m.message_id for m in state.context}
        fields = {k: v for k, v in input.items() if k != "messages"}
        if fields:
            try:
                apply_update(state, fields, node="input")
            except GraphError as exc:
                raise ConfigurationError(str(exc).replace("node 'input'", "input")) from exc
        state.context = add_messages(state.context, messages)
        return [m for m in state.context if m.message_id not in before]

    async def _call(
        self,
        fn: Any,
        plans: tuple[ParamPlan, ...],
        state: AgentState,
        cfg: _RunConfig,
        *,
        is_async: bool,
    ) -> Any:
        """Call a node function or condition: awaited when async, in a worker thread when sync."""
        args, kwargs = build_arguments(plans, state=state, config=cfg.data, resolver=self.resolver)
        out = fn(*args, **kwargs) if is_async else await run_in_worker(fn, *args, **kwargs)
        if inspect.isawaitable(out):
            out = await out
        return out

    async def _run_node(self, name: str, state: AgentState, cfg: _RunConfig) -> AgentState:
        node = self.nodes[name]
        if node.component is not None:
            run = RunContext(
                node=name,
                config=cfg.data,
                resolver=self.resolver,
                context_manager=self.context_manager,
                state_cls=self.state_cls,
            )
            output = await node.component.arun_node(state, run)
        else:
            output = await self._call(node.action, node.plans, state, cfg, is_async=node.is_async)
        update = output_to_update(output, node=name)
        if isinstance(update, AgentState):
            return adopt_state(state, update, node=name)
        if update:
            apply_update(state, update, node=name)
        return state

    async def _route(self, name: str, state: AgentState, cfg: _RunConfig) -> str:
        condition = self.conditions.get(name)
        if condition is None:
            return self.edges.get(name, END)
        edge, plans, is_async = condition
        value = await self._call(edge.condition, plans, state, cfg, is_async=is_async)
        path_map: dict[Hashable, str] | None = edge.path_map
        if path_map is not None:
            try:
                if value in path_map:
                    return path_map[value]
            except TypeError:
                pass
            if value == END:
                return END
            raise GraphError(
                f"condition of node {name!r} returned {value!r}, which is not in its path map "
                f"{sorted(map(str, path_map))}",
            )
        if value == END or (isinstance(value, str) and value in self.nodes):
            return str(value)
        raise GraphError(
            f"condition of node {name!r} returned {value!r}; return a node name ({sorted(self.nodes)}) or END, "
            "or pass a path_map",
        )

    async def _persist(self, thread_id: str, state: AgentState, new_messages: list[Message]) -> AgentState:
        """Trim with the manager, then store state + new messages; returns the (trimmed) state.

        Why trim again: the snapshot is what the next run starts from (the "persisted state" decision of the
        design notes), and after the last model call it holds that call's reply and tool results, so trimming
        here stores the managed view (the manager finds its own view plus those messages: a cheap call) while the
        log keeps every message.

        Why a manager that fails here does not fail the run: nothing is sent to a model at this point, and the run's
        messages (model calls already made, tools already run) would otherwise not be stored. So the state is
        stored untrimmed and the failure is logged at ERROR, with the manager's exception, or its wrong return
        type; the next call trims again, and there a failure does stop the run (an untrimmed prompt could
        overflow the model's window). A run that failed before persisting still stores its state with the error.
        """
        manager = self.context_manager
        if manager is not None:
            try:
                trimmed = await manager.atrim_context(state)
            except Exception:
                logger.exception(
                    "thread %s: %s.atrim_context raised while the run was being persisted; the state is stored "
                    "untrimmed so the run's messages are kept, and the next call trims it",
                    thread_id,
                    type(manager).__name__,
                )
            else:
                if isinstance(trimmed, AgentState):
                    state = trimmed
                else:
                    logger.error(
                        "thread %s: %s.atrim_context returned %s while the run was being persisted, not the state; "
                        "the state is stored untrimmed (a context manager must return the state it was given)",
                        thread_id,
                        type(manager).__name__,
                        type(trimmed).__name__,
                    )
        state.execution_meta.thread_id = thread_id
        await self.checkpointer.aput(thread_id, state, list(new_messages))
        return state

    def _result(
        self,
        cfg: _RunConfig,
        state: AgentState,
        messages: list[Message],
        *,
        interrupted: str | None = None,
        stopped: bool = False,
    ) -> dict[str, Any]:
        return {
            "messages": list(messages),
            "state": state,
            "usage": _total_usage(messages),
            "thread_id": cfg.thread_id,
            "status": state.execution_meta.status.value,
            "interrupted": interrupted,
            "stopped": stopped,
        }

    async def _run(
        self,
        input: Mapping[str, Any] | None,
        config: Mapping[str, Any] | None,
    ) -> AsyncIterator[GraphEvent]:
        cfg = _RunConfig(config)
        thread_id = cfg.thread_id
        async with self._lock(thread_id):
            state = await self._load(thread_id)
            run_messages: list[Message] = []
            persisted = False
            self._active[thread_id] = state
            try:
                run_messages.extend(self._merge_input(state, input))
                meta = state.execution_meta
                skip_before: str | None = None
                if state.is_interrupted():
                    node = str(meta.internal_data.pop(_RESUME_KEY, self.entry_point))
                    if meta.status == ExecutionStatus.INTERRUPTED_BEFORE:
                        skip_before = node
                    state.clear_interrupt()
                else:
                    node = self.entry_point
                    meta.step = 0
                    meta.internal_data.pop(_RESUME_KEY, None)
                meta.stop_requested = False
                meta.thread_id = thread_id
                state.start()
                path: list[str] = []
                while node != END:
                    if state.is_stopped_requested():
                        meta.stop_requested = False
                        meta.status = ExecutionStatus.IDLE
                        state = await self._persist(thread_id, state, run_messages)
                        persisted = True
                        logger.info("thread %s: stopped before node %r", thread_id, node)
                        result = self._result(cfg, state, run_messages, stopped=True)
                        yield GraphEvent(event="end", node=node, step=meta.step, state=state, result=result)
                        return
                    if node in self.interrupt_before and node != skip_before:
                        state.set_interrupt(node, "interrupt_before", before=True)
                        state.execution_meta.internal_data[_RESUME_KEY] = node
                        state = await self._persist(thread_id, state, run_messages)
                        persisted = True
                        result = self._result(cfg, state, run_messages, interrupted=node)
                        yield GraphEvent(event="interrupt", node=node, step=meta.step, state=state, result=result)
                        return
                    skip_before = None
                    if len(path) >= cfg.recursion_limit:
                        raise RecursionLimitError(cfg.recursion_limit, [*path, node])
                    path.append(node)
                    state.set_current_node(node)
                    state.advance_step()
                    before = {m.message_id for m in state.context}
                    state = await self._run_node(node, state, cfg)
                    self._active[thread_id] = state
                    meta = state.execution_meta
                    logged = {m.message_id for m in run_messages}
                    # recall messages are the manager's view of old history, not new turns: never logged
                    produced = [
                        m
                        for m in state.context
                        if m.message_id not in before and m.message_id not in logged and not is_recall(m)
                    ]
                    run_messages.extend(produced)
                    logger.debug("thread %s: node %r added %d message(s)", thread_id, node, len(produced))
                    yield GraphEvent(event="node", node=node, step=meta.step, messages=produced, state=state)
                    following = await self._route(node, state, cfg)
                    if node in self.interrupt_after:
                        state.set_interrupt(node, "interrupt_after", before=False)
                        meta.internal_data[_RESUME_KEY] = following
                        state = await self._persist(thread_id, state, run_messages)
                        persisted = True
                        result = self._result(cfg, state, run_messages, interrupted=node)
                        yield GraphEvent(event="interrupt", node=node, step=meta.step, state=state, result=result)
                        return
                    node = following
                state.complete()
                state = await self._persist(thread_id, state, run_messages)
                persisted = True
                result = self._result(cfg, state, run_messages)
                yield GraphEvent(event="end", step=state.execution_meta.step, state=state, result=result)
            except BaseException as exc:
                if not persisted:
                    if isinstance(exc, GeneratorExit):
                        state.execution_meta.status = ExecutionStatus.IDLE
                    else:
                        state.error(f"{type(exc).__name__}: {exc}")
                    try:
                        await self._persist(thread_id, state, run_messages)
                    except Exception:
                        logger.exception("thread %s: could not persist the state after %r", thread_id, exc)
                raise
            finally:
                self._active.pop(thread_id, None)


def _message_hint(item: Any) -> str:
    """What to pass instead of ``item`` when it is a string or a provider's message dict (the usual first try)."""
    if isinstance(item, str):
        return f" (a string; pass Message.text_message({item[:40]!r}), role 'user' by default)"
    if isinstance(item, Mapping) and isinstance(item.get("content"), str) and "role" in item:
        return (
            f" (a provider's message dict; pass Message.text_message(text, role={item.get('role')!r}), or convert "
            "a provider's list with windowkeeper.from_openai_chat(...) (from_anthropic, from_gemini, ...))"
        )
    return ""
