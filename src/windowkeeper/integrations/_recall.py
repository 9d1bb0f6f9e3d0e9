"""The recall tool a pointer names, for a `Window` thread, in each host's own tool shape; and pointers that name no
tool the model was not given.

A cleared tool result says ``restore it with recall(pointer_id="...")``. That is true for the model only when the
request carries a tool of that name. `WindowRecallTool` is that tool for a window: ``pointer_id`` is answered from
the window's own originals (its store after a restart), ``query`` from the manager's recall index when it has one.
It is handed out as a provider tool definition (`definition`, in the window's format), as a LangChain tool
(`as_langchain_tool`) and as an OpenAI Agents SDK ``FunctionTool`` (`as_agents_tool`).

When a request's tools hold no ``recall``, `pointer_for_request` rewrites a pointer so that it says how the
application restores it instead (``window.restore(id)``) and asks the model to re-run the call or ask the user;
the rewrite is shorter than the text it replaces, so the request stays under the budget the manager planned.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

from ..blocks import TextBlock, ToolResultBlock, tool_output_text
from ..context.pointers import RESTORE_TOOL, is_offloaded
from ..errors import ConfigurationError
from ..messages import Message
from ..tools.recall import DEFAULT_RESULTS, PARAMETERS, TOOL_DESCRIPTION, TOOL_NAME, RecallTool, model_arguments

logger = logging.getLogger(__name__)

_TOOL_CLAUSE = re.compile(
    r"restore it with " + re.escape(RESTORE_TOOL) + r"\(pointer_id=(\"[^\"]*\")\) or re-run the call\."
)
_REPLY_CLAUSE = re.compile(r"restorable with " + re.escape(RESTORE_TOOL) + r"\(pointer_id=(\"[^\"]*\")\)")


def tool_names(tools: Sequence[Any] | None) -> set[str]:
    """The function names declared by ``tools`` in any provider's shape (Chat, Responses, Anthropic, Gemini)."""
    names: set[str] = set()
    for tool in tools or ():
        if not isinstance(tool, Mapping):
            name = getattr(tool, "name", None)
            if isinstance(name, str):
                names.add(name)
            continue
        function = tool.get("function")
        if isinstance(function, Mapping) and isinstance(function.get("name"), str):
            names.add(function["name"])
        elif isinstance(tool.get("name"), str):
            names.add(tool["name"])
        for key in ("function_declarations", "functionDeclarations"):
            for declaration in tool.get(key) or ():
                if isinstance(declaration, Mapping) and isinstance(declaration.get("name"), str):
                    names.add(declaration["name"])
    return names


def restore_tool_declared(tools: Sequence[Any] | None) -> bool:
    """Whether ``tools`` give the model the recall tool a pointer names: a tool called ``recall`` that takes a
    ``pointer_id``. A tool of that name whose declared parameters lack it is the application's own (a gateway
    client's, say), and a pointer naming it would send the model to a tool that cannot restore anything; one
    whose parameters cannot be read (a host's tool object) is taken at its name."""
    for tool in tools or ():
        if RESTORE_TOOL not in tool_names([tool]):
            continue
        properties = _parameter_names(tool)
        if properties is None or "pointer_id" in properties:
            return True
    return False


def _parameter_names(tool: Any) -> set[str] | None:
    """The parameter names a tool definition declares, in any provider's shape (None when it declares none that
    can be read)."""
    data = tool if isinstance(tool, Mapping) else None
    if data is None:
        schema = getattr(tool, "params_json_schema", None) or getattr(tool, "args", None)
        if isinstance(schema, Mapping):
            props = schema.get("properties", schema)
            return set(props) if isinstance(props, Mapping) else None
        return None
    function = data.get("function")
    if isinstance(function, Mapping):
        data = function
    declarations = data.get("function_declarations") or data.get("functionDeclarations")
    if isinstance(declarations, list):
        data = next((d for d in declarations if isinstance(d, Mapping) and d.get("name") == RESTORE_TOOL), {})
    for key in ("parameters", "input_schema", "parametersJsonSchema", "parameters_json_schema"):
        schema = data.get(key)
        if isinstance(schema, Mapping):
            props = schema.get("properties")
            return set(props) if isinstance(props, Mapping) else None
    return None


def pointer_for_request(message: Message) -> Message:
    """``message`` (a pointer) saying how the application restores it, for a request without the recall tool."""
    blocks: list[Any] = []
    changed = False
    for block in message.content:
        if isinstance(block, ToolResultBlock) and isinstance(block.output, str):
            text = _TOOL_CLAUSE.sub(r"re-run the call or ask the user to restore id \1.", block.output)
            if text != block.output:
                block = block.model_copy(update={"output": text})
                changed = True
        elif isinstance(block, TextBlock):
            text = _REPLY_CLAUSE.sub(r"restorable by the user (id \1)", block.text)
            if text != block.text:
                block = block.model_copy(update={"text": text})
                changed = True
        blocks.append(block)
    return message.with_content(blocks) if changed else message


def without_restore_tool(
    messages: Sequence[Message], cache: dict[tuple[str, str], Message], pointers: Sequence[Message] | None = None
) -> list[Message]:
    """``messages`` with every pointer rewritten by `pointer_for_request` (each rewrite made once, from
    ``cache``, so the same pointer is the same bytes on every call and the prefix stays stable). ``pointers``,
    when the caller found them already, are the pointers of ``messages`` (the others are not looked at)."""
    if pointers is not None:
        swap: dict[int, Message] = {}
        for message in pointers:
            key = (str(message.message_id), message.fingerprint())
            rewritten = cache.get(key)
            if rewritten is None:
                rewritten = cache[key] = pointer_for_request(message)
            if rewritten is not message:
                swap[id(message)] = rewritten
        return [swap.get(id(m), m) for m in messages] if swap else list(messages)
    out: list[Message] = []
    for message in messages:
        if not is_offloaded(message):
            out.append(message)
            continue
        key = (str(message.message_id), message.fingerprint())
        rewritten = cache.get(key)
        if rewritten is None:
            rewritten = cache[key] = pointer_for_request(message)
        out.append(rewritten)
    return out


def original_text(original: Message, ref: str) -> str:
    """What the model reads of a restored original: the output of the call ``ref`` when it answers one, else the
    whole message's text."""
    for block in original.tool_result_blocks():
        if block.call_id == ref:
            return tool_output_text(block.output)
    return original.text() or original.reasoning_text()


class WindowRecallTool:
    """The ``recall`` tool of a `Window` thread (see the module docstring).

    ``restore(thread_id, pointer_id)`` returns the original's text or None; ``thread_of()`` names the thread a
    call without one is for (the host's running thread, e.g. LangGraph's ``thread_id``).
    """

    name = TOOL_NAME
    description = TOOL_DESCRIPTION

    def __init__(
        self,
        restore: Callable[[str, str], Awaitable[str | None]],
        search: Callable[[], RecallTool | None],
        key: Callable[[str], str],
        thread_of: Callable[[], str],
    ) -> None:
        self._restore, self._search, self._key = restore, search, key
        self.thread_of = thread_of
        """Names the thread a call without ``thread_id`` is for; an adapter sets it to its host's running thread."""

    def __repr__(self) -> str:
        return f"WindowRecallTool(name={self.name!r})"

    @property
    def schema(self) -> dict[str, Any]:
        """``{"name", "description", "parameters"}`` (JSON Schema)."""
        return {"name": self.name, "description": self.description, "parameters": PARAMETERS}

    def definition(self, fmt: str) -> dict[str, Any]:
        """The tool as ``fmt``'s request declares it (``tools=[...]`` of that SDK)."""
        if fmt in ("openai_chat", "langchain"):
            return {"type": "function", "function": self.schema}
        if fmt == "openai_responses":
            return {"type": "function", **self.schema}
        if fmt == "anthropic":
            return {"name": self.name, "description": self.description, "input_schema": PARAMETERS}
        if fmt == "gemini":
            return {"function_declarations": [self.schema]}
        raise ConfigurationError(f"no tool definition for format {fmt!r}")

    async def ainvoke(self, arguments: Mapping[str, Any] | str | None = None, *, thread_id: str | None = None) -> str:
        """Run the tool with the arguments a model sent (a dict or its JSON string); arguments it cannot read are
        answered with text saying so (`model_arguments`)."""
        args = model_arguments(arguments)
        if isinstance(args, str):
            return args
        thread = thread_id or self.thread_of()
        pointer = args.get("pointer_id")
        if pointer not in (None, ""):
            text = await self._restore(thread, str(pointer))
            if text is not None:
                return text
            search = self._search()
            if search is not None:  # a message that left the view whole (summarized): recall's index has it
                return await search.ainvoke({"pointer_id": str(pointer)}, thread_id=self._key(thread))
            return (
                f"No cleared content with id {str(pointer)!r} in this conversation; use the id shown in the "
                "'[... cleared from context ...]' note, or search with `query`."
            )
        search = self._search()
        if search is None:
            return "This conversation keeps no search index; pass `pointer_id` from a cleared-content note."
        max_results = args.get("max_results", DEFAULT_RESULTS)
        return await search.ainvoke(
            {"query": args.get("query"), "max_results": max_results}, thread_id=self._key(thread)
        )

    def invoke(self, arguments: Mapping[str, Any] | str | None = None, *, thread_id: str | None = None) -> str:
        """`ainvoke` for synchronous code (a raw SDK loop with the sync client); it also works when called from
        inside a running event loop (a notebook, a sync callback of an async host), where ``asyncio.run`` raises."""
        from .._bridge import run_sync_anywhere

        return run_sync_anywhere(lambda: self.ainvoke(arguments, thread_id=thread_id))

    def as_langchain_tool(self) -> Any:
        """A LangChain ``StructuredTool`` named ``recall`` (the running LangGraph thread is the one searched)."""
        from langchain_core.tools import StructuredTool

        async def recall(
            query: str | None = None, pointer_id: str | None = None, max_results: int = DEFAULT_RESULTS
        ) -> str:
            return await self.ainvoke({"query": query, "pointer_id": pointer_id, "max_results": max_results})

        def recall_sync(
            query: str | None = None, pointer_id: str | None = None, max_results: int = DEFAULT_RESULTS
        ) -> str:
            return self.invoke({"query": query, "pointer_id": pointer_id, "max_results": max_results})

        return StructuredTool.from_function(
            func=recall_sync, coroutine=recall, name=self.name, description=self.description
        )

    def as_agents_tool(self) -> Any:
        """An OpenAI Agents SDK ``FunctionTool`` named ``recall``."""
        from agents import FunctionTool

        async def on_invoke(_context: Any, arguments: str) -> str:
            return await self.ainvoke(arguments)

        return FunctionTool(
            name=self.name,
            description=self.description,
            params_json_schema=PARAMETERS,
            on_invoke_tool=on_invoke,
            strict_json_schema=False,
        )


__all__ = ["WindowRecallTool", "original_text", "pointer_for_request", "tool_names", "without_restore_tool"]
