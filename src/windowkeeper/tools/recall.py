"""`recall_tool`: the model's own way back to what left its view, by search or by a pointer's id.

A cleared tool result says its output "can be restored"; that is only true for the model if it has a tool to ask
for it. `recall_tool(manager_or_memory)` gives it one, for a context manager with recall on (its recall index and,
for `TokenBudgetContextManager`, the originals of what it cleared or dropped) or a three-tier memory (its stored
history). The same object serves
three ways of calling tools:

* `ToolNode([recall_tool(manager)])`: it is an async callable with a typed signature and a docstring; the
  graph fills its ``state`` parameter, so it searches the thread being run;
* plain function calling: `RecallTool.schema` (``{"name", "description", "parameters"}``, JSON Schema) or
  `RecallTool.openai_schema` to advertise, and `RecallTool.invoke` / `RecallTool.ainvoke` with the arguments
  the model sent (a dict or its JSON string);
* host adapters (LangChain, OpenAI Agents SDK) wrap either of those.

This module deliberately has no ``from __future__ import annotations``: the graph reads the parameter types of
``__call__`` at runtime to build the schema.
"""

import json
import logging
from collections.abc import Mapping
from typing import Any, Protocol, runtime_checkable

from .._bridge import run_sync
from ..context.base import BaseContextManager
from ..context.metrics import DEFAULT_THREAD
from ..context.recall import Recall, message_date, passage_where
from ..context.recall_index import Hit
from ..errors import ConfigurationError
from ..messages import Message
from ..state import AgentState

logger = logging.getLogger(__name__)

TOOL_NAME = "recall"
TOOL_DESCRIPTION = (
    "Look up earlier parts of this conversation that are no longer in your context. Pass `query` (words to "
    "search for, e.g. a name, port, path, error or topic) to get the best matching passages, quoted verbatim "
    "with when they were said; or pass `pointer_id` (the id shown in a '[... cleared from context ...]' note) "
    "to get that cleared tool output or reply back in full, byte for byte."
)
DEFAULT_RESULTS = 5
MAX_RESULTS = 20
PARAMETERS: dict[str, Any] = {
    "type": "object",
    "properties": {
        "query": {"type": "string", "description": "Words to search the earlier conversation for."},
        "pointer_id": {
            "type": "string",
            "description": "Id from a cleared-content note, to restore that content in full.",
        },
        "max_results": {
            "type": "integer",
            "minimum": 1,
            "maximum": MAX_RESULTS,
            "description": "How many passages to return for a query.",
        },
    },
    "additionalProperties": False,
}
"""The tool's arguments as JSON Schema (every host's tool shape declares these)."""


@runtime_checkable
class _MemoryLike(Protocol):
    async def messages(self, session_id: str = ...) -> list[Message]: ...

    async def history_messages(self, session_id: str = ...) -> list[Message]: ...


def _full_text(message: Message) -> str:
    """What the model would read of ``message``: tool outputs and text, exactly as stored."""
    return message.text() or message.reasoning_text()


def _hit_text(hit: Hit) -> str:
    p = hit.passage
    return f"--- {passage_where(p)} (id {p.message_id}) ---\n{p.text}"


class RecallTool:
    """The recall tool bound to a manager with recall or a three-tier memory (see the module docstring).

    ``thread_id`` is the thread (or memory session) searched when the call carries no state: plain
    function-calling hosts pass it here; inside a graph the running thread is used.
    """

    __name__ = TOOL_NAME

    def __init__(self, source: Any, *, thread_id: str | None = None) -> None:
        recall = source.recall if isinstance(source, BaseContextManager) else None
        if recall is not None:
            self._recall: Recall | None = recall
            self._memory: _MemoryLike | None = None
        elif isinstance(source, _MemoryLike):
            self._recall = None
            self._memory = source
            self._memory_recall = Recall()
        else:
            raise ConfigurationError(
                f"recall_tool needs a context manager with recall on or a three-tier memory, got "
                f"{type(source).__name__} without a recall index; build TokenBudgetContextManager without "
                f"recall=False (on by default), or pass recall=True to MessageContextManager, "
                f"SummaryContextManager or MemoryContextManager",
            )
        self.source = source
        self.thread_id = thread_id
        self.__doc__ = (
            f"{TOOL_DESCRIPTION}\n\nArgs:\n    query: Words to search the earlier conversation for.\n"
            "    pointer_id: Id from a cleared-content note, to restore that content in full.\n"
            f"    max_results: How many passages to return for a query (1-{MAX_RESULTS})."
        )

    def __repr__(self) -> str:
        return f"RecallTool(source={type(self.source).__name__}, thread_id={self.thread_id!r})"

    # -- plain function calling ------------------------------------------------------------------------------

    @property
    def schema(self) -> dict[str, Any]:
        """``{"name", "description", "parameters"}`` with a JSON Schema, for any function-calling API."""
        return {
            "name": TOOL_NAME,
            "description": TOOL_DESCRIPTION,
            "parameters": PARAMETERS,
        }

    @property
    def openai_schema(self) -> dict[str, Any]:
        """The schema in OpenAI chat-completions form (``{"type": "function", "function": ...}``)."""
        return {"type": "function", "function": self.schema}

    async def ainvoke(self, arguments: Mapping[str, Any] | str | None = None, *, thread_id: str | None = None) -> str:
        """Run the tool with the arguments a model sent (a dict or a JSON object string); arguments it cannot read are
        answered with text saying so (`model_arguments`)."""
        args = model_arguments(arguments)
        if isinstance(args, str):
            return args
        return await self._run(
            args.get("query"), args.get("pointer_id"), args.get("max_results", DEFAULT_RESULTS), thread_id
        )

    def invoke(self, arguments: Mapping[str, Any] | str | None = None, *, thread_id: str | None = None) -> str:
        """Sync form of `ainvoke` (refused inside a running event loop: await `ainvoke` there)."""
        return run_sync(
            lambda: self.ainvoke(arguments, thread_id=thread_id),
            caller="RecallTool.invoke()",
            instead="await tool.ainvoke(...)",
        )

    # -- ToolNode ---------------------------------------------------------------------------------------------

    async def __call__(
        self,
        query: str | None = None,
        pointer_id: str | None = None,
        max_results: int = DEFAULT_RESULTS,
        state: AgentState | None = None,
    ) -> str:
        thread = None
        if state is not None:
            thread = state.execution_meta.thread_id
        return await self._run(query, pointer_id, max_results, thread)

    # -- the work ---------------------------------------------------------------------------------------------

    def _thread(self, given: str | None) -> str:
        return given or self.thread_id or DEFAULT_THREAD

    async def _run(self, query: Any, pointer_id: Any, max_results: Any, thread_id: str | None) -> str:
        thread = self._thread(thread_id)
        if pointer_id not in (None, ""):
            return await self._restore(thread, str(pointer_id))
        if not isinstance(query, str) or not query.strip():
            return "recall needs a `query` (words to search for) or a `pointer_id` (from a cleared-content note)."
        if isinstance(max_results, bool) or not isinstance(max_results, int):
            max_results = DEFAULT_RESULTS
        limit = max(1, min(max_results, MAX_RESULTS))
        recall = await self._searchable(thread)
        hits = recall.search(thread, query, limit=limit)
        if not hits:
            return f"No earlier passage outside your context matches {query!r}."
        ordered = sorted(hits, key=lambda h: (h.passage.position, h.passage.part))
        return "\n\n".join(_hit_text(h) for h in ordered)

    async def _searchable(self, thread: str) -> Recall:
        if self._recall is not None:
            return self._recall
        assert self._memory is not None
        view = await self._memory.messages(thread)
        shown = {(str(m.message_id), m.fingerprint()) for m in view}
        history = await self._memory.history_messages(thread)
        recall = self._memory_recall
        recall.observe(thread, history)
        recall.left(thread, [m for m in history if (str(m.message_id), m.fingerprint()) not in shown])
        return recall

    async def _restore(self, thread: str, ref: str) -> str:
        text: str | None = None
        if self._recall is not None:
            # the original while this process holds it, else rebuilt from a file-backed index after a restart
            text = self._recall.original_text(thread, ref)
        else:
            assert self._memory is not None
            for msg in await self._memory.history_messages(thread):
                if str(msg.message_id) == ref or ref in msg.tool_call_ids() or ref in _result_ids(msg):
                    logger.debug("recall tool restored message %r (%s)", ref, message_date(msg))
                    text = _full_text(msg)
                    break
        if text is None:
            return (
                f"No cleared content with id {ref!r} in this conversation; use the id shown in the "
                "'[... cleared from context ...]' note, or search with `query`."
            )
        return text


def _result_ids(message: Message) -> list[str]:
    return [b.call_id for b in message.tool_result_blocks()]


def parse_arguments(arguments: Mapping[str, Any] | str | None) -> dict[str, Any]:
    """The arguments a model sent a tool (a dict, or its JSON object string) as a dict."""
    if arguments is None:
        return {}
    if isinstance(arguments, str):
        try:
            parsed = json.loads(arguments) if arguments.strip() else {}
        except json.JSONDecodeError as exc:
            raise ConfigurationError(f"recall tool arguments are not valid JSON ({exc}): {arguments[:200]!r}") from exc
        if not isinstance(parsed, dict):
            raise ConfigurationError(f"recall tool arguments must be a JSON object, got {arguments[:200]!r}")
        return parsed
    return dict(arguments)


def model_arguments(arguments: Mapping[str, Any] | str | None) -> dict[str, Any] | str:
    """`parse_arguments` for a call a model made: arguments that are not a JSON object come back as the text the
    tool answers with (what was wrong and the call to make instead), as for any other bad input from the model, so a
    truncated or malformed call lets the model try again instead of ending the host's run with an exception."""
    try:
        return parse_arguments(arguments)
    except ConfigurationError as exc:
        return (
            f"The recall tool could not read its arguments: {exc}. Call it again with a JSON object, "
            '{"pointer_id": "<the id in a cleared-content note>"} or {"query": "<words to search for>"}.'
        )


def recall_tool(manager_or_memory: Any, *, thread_id: str | None = None) -> RecallTool:
    """The recall tool for ``manager_or_memory`` (a context manager with recall on, or a three-tier memory)."""
    return RecallTool(manager_or_memory, thread_id=thread_id)
