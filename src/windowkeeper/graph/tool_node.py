"""`ToolNode`: executes the tool calls of the latest assistant message and answers each one.

Every call gets exactly one `ToolResultBlock` (in its own ``tool`` message, in call order), whatever happens: an
unknown tool, arguments that do not validate, or a tool that raises all become ``status="error"`` results carrying
the error text. A provider therefore never sees an unanswered call, and the model can read the error and retry.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ValidationError

from .._bridge import is_async_callable, run_in_worker
from ..blocks import ToolCallBlock, ToolResultBlock
from ..errors import ConfigurationError
from ..messages import Message
from ..state import AgentState, ToolResult
from .injection import ParamPlan, Resolver, build_arguments, check_injectable, plan_call
from .runtime import RunContext
from .tool_schema import ToolSignature, tool_signature

logger = logging.getLogger(__name__)

_RUNTIME_PARAMS = frozenset({"state", "config", "tool_call_id"})


@dataclass(frozen=True)
class _Tool:
    fn: Callable[..., Any]
    signature: ToolSignature
    plans: tuple[ParamPlan, ...]
    is_async: bool


def _jsonable(value: Any) -> Any:
    """Tool output as JSON-compatible data; anything else is sent as its string form."""
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json")
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    try:
        return json.loads(json.dumps(value, ensure_ascii=False))
    except (TypeError, ValueError):
        return str(value)


def _validation_text(exc: ValidationError) -> str:
    parts = []
    for err in exc.errors(include_url=False):
        where = ".".join(str(p) for p in err.get("loc", ())) or "arguments"
        parts.append(f"{where}: {err.get('msg', 'invalid')}")
    return "; ".join(parts)


class ToolNode:
    """A graph node that runs the model's tool calls; its `tool_specs` are what an `Agent` advertises.

    Parallel calls run concurrently (``asyncio.gather``); sync tools run in a worker thread (with the caller's
    context variables) so a slow tool does not stall the event loop. A tool may take ``state``, ``config`` and
    ``tool_call_id`` parameters (filled by the runtime, hidden from the model) and ``Inject[...]`` defaults
    resolved against the graph it runs in.
    """

    def __init__(self, tools: Sequence[Callable[..., Any]]) -> None:
        if isinstance(tools, (str, bytes)) or not isinstance(tools, Sequence):
            raise ConfigurationError(f"ToolNode expects a list of callables, got {type(tools).__name__}")
        self._tools: dict[str, _Tool] = {}
        for fn in tools:
            if not callable(fn):
                raise ConfigurationError(f"ToolNode: {fn!r} is not callable; pass functions or callable objects")
            skip = set(_RUNTIME_PARAMS)
            plans = plan_call(fn, owner=f"tool {getattr(fn, '__name__', fn)!r}", state_param=False, tool_params=True)
            skip.update(p.name for p in plans if p.kind == "inject")
            sig = tool_signature(fn, skip=skip)
            if sig.name in self._tools:
                raise ConfigurationError(f"ToolNode: two tools are named {sig.name!r}; tool names must be unique")
            self._tools[sig.name] = _Tool(fn=fn, signature=sig, plans=tuple(plans), is_async=is_async_callable(fn))

    @property
    def tool_names(self) -> list[str]:
        return list(self._tools)

    def tool_specs(self) -> list[dict[str, Any]]:
        """``{"name", "description", "parameters"}`` for every tool, in registration order."""
        return [tool.signature.spec() for tool in self._tools.values()]

    def check_graph(self, resolver: Resolver, *, owner: str, state_cls: type[AgentState]) -> None:
        for name, tool in self._tools.items():
            check_injectable(tool.plans, resolver, owner=f"{owner}, tool {name!r}")

    async def arun_node(self, state: AgentState, run: RunContext) -> object:
        calls, pending_ids = self._pending_calls(state)
        if not calls:
            logger.debug("node %r: the last assistant message has no unanswered tool calls", run.node)
            return None
        outcomes = await asyncio.gather(*(self._run_call(call, state, run) for call in calls))
        messages: list[Message] = []
        updates: dict[str, Any] = {}
        fields = run.state_cls.model_fields
        for call, (block, update) in zip(calls, outcomes, strict=True):
            unknown = [key for key in update if key not in fields]
            if unknown:
                block = ToolResultBlock(
                    call_id=call.id,
                    name=call.name,
                    status="error",
                    output=(
                        f"tool {call.name!r} returned ToolResult.state with unknown field(s) {unknown}; "
                        f"{run.state_cls.__name__} has: {', '.join(sorted(fields))}"
                    ),
                )
                update = {}
            messages.append(Message.tool_message([block], metadata={"tool_name": call.name}))
            updates.update(update)
        logger.debug("node %r answered %d tool call(s): %s", run.node, len(calls), pending_ids)
        return {**updates, "context": messages}

    def _pending_calls(self, state: AgentState) -> tuple[list[ToolCallBlock], list[str]]:
        """The calls of the newest assistant message that have no result yet."""
        context = state.context
        for index in range(len(context) - 1, -1, -1):
            message = context[index]
            if message.role != "assistant":
                continue
            answered = {block.call_id for later in context[index + 1 :] for block in later.tool_result_blocks()}
            calls = [c for c in message.tool_call_blocks() if c.id not in answered]
            return calls, [c.id for c in calls]
        return [], []

    async def _run_call(
        self,
        call: ToolCallBlock,
        state: AgentState,
        run: RunContext,
    ) -> tuple[ToolResultBlock, dict[str, Any]]:
        tool = self._tools.get(call.name)
        if tool is None:
            available = ", ".join(self._tools) or "(none)"
            return self._error(call, f"unknown tool {call.name!r}; available tools: {available}"), {}
        try:
            arguments = tool.signature.validate(dict(call.args))
        except ValidationError as exc:
            return self._error(call, f"invalid arguments for tool {call.name!r}: {_validation_text(exc)}"), {}
        args, kwargs = build_arguments(
            tool.plans,
            state=state,
            config=run.config,
            resolver=run.resolver,
            tool_call_id=call.id,
        )
        kwargs.update(arguments)
        try:
            if tool.is_async:
                result = await tool.fn(*args, **kwargs)
            else:
                result = await run_in_worker(tool.fn, *args, **kwargs)
        except Exception as exc:  # a tool failure is an answer for the model, not a crash of the graph
            logger.warning("tool %r (call %s) raised %s: %s", call.name, call.id, type(exc).__name__, exc)
            return self._error(call, f"{type(exc).__name__}: {exc}"), {}
        update: dict[str, Any] = {}
        if isinstance(result, ToolResult):
            update = dict(result.state)
            result = result.message
        if isinstance(result, Message):
            result = result.text()
        return ToolResultBlock(call_id=call.id, name=call.name, output=_jsonable(result), status="completed"), update

    @staticmethod
    def _error(call: ToolCallBlock, text: str) -> ToolResultBlock:
        return ToolResultBlock(call_id=call.id, name=call.name, output=text, status="error")
