"""What the LangChain middleware and the LangGraph hook share: the thread id of the running graph, tool schemas for
counting, and turning a `FitResult` back into LangChain messages that reuse the caller's own objects.

Unchanged messages are handed back as the very objects the host holds (found by their LangChain ``id``), so
provider-specific fields windowkeeper does not model (``additional_kwargs``, ``response_metadata``) still reach
the chat model; only messages the manager changed (pointers, cut bodies) are rebuilt.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any

from .._cache import LRUCache
from ..context.pointers import is_offloaded
from ..errors import MissingDependencyError
from ..llm.formats import to_langchain
from .window import FitResult

logger = logging.getLogger(__name__)

DEFAULT_THREAD = "default"


def require(module: str, extra: str) -> None:
    """Import ``module`` or raise `MissingDependencyError` with the pip command for ``extra``."""
    import importlib

    try:
        importlib.import_module(module)
    except ImportError:
        raise MissingDependencyError(module, extra) from None


def thread_id_from_config(config: Mapping[str, Any] | None) -> str:
    """``configurable.thread_id`` of a RunnableConfig (the LangGraph checkpointer's key), else ``"default"``."""
    if not config:
        return DEFAULT_THREAD
    configurable = config.get("configurable") or {}
    tid = configurable.get("thread_id") if isinstance(configurable, Mapping) else None
    return str(tid) if tid not in (None, "") else DEFAULT_THREAD


def current_thread_id() -> str:
    """The thread id of the LangGraph run this code executes in (``"default"`` outside of one)."""
    try:
        from langgraph.config import get_config

        return thread_id_from_config(get_config())
    except (ImportError, RuntimeError):
        return DEFAULT_THREAD


_SCHEMAS: LRUCache[int, tuple[Any, dict[str, Any]]] = LRUCache(256)
"""Schemas of the tool objects seen last, by identity (the tool held, so its id stays its own): a ``create_agent``
loop hands the same tools to every model call, and LangChain builds a schema from the tool's pydantic model each
time it is asked."""


def tool_schemas(tools: Sequence[Any] | None) -> list[dict[str, Any]] | None:
    """LangChain tools (BaseTool objects or dicts) as the OpenAI function schemas a chat model sends, for counting."""
    if not tools:
        return None
    from langchain_core.utils.function_calling import convert_to_openai_tool

    out: list[dict[str, Any]] = []
    for tool in tools:
        cacheable = not isinstance(tool, Mapping)  # a dict may be edited between calls; a tool object is not
        known = _SCHEMAS.get(id(tool)) if cacheable else None
        if known is not None and known[0] is tool:
            out.append(known[1])
            continue
        try:
            schema = convert_to_openai_tool(tool)
        except (TypeError, ValueError) as exc:
            logger.debug("tool %r has no OpenAI schema (%s); counting its repr", tool, exc)
            schema = {"tool": repr(tool)}
        if cacheable:
            _SCHEMAS.put(id(tool), (tool, schema))
        out.append(schema)
    return out


def view_messages(result: FitResult, originals: Sequence[Any]) -> list[Any]:
    """The managed conversation as LangChain messages, reusing ``originals`` for every message left unchanged."""
    by_id = {getattr(m, "id", None): m for m in originals if getattr(m, "id", None)}
    out: list[Any] = []
    for message in result.prompt.messages:
        original = by_id.get(message.message_id) if not is_offloaded(message) else None
        if original is not None:
            out.append(original)
        else:
            out.extend(to_langchain([message]))
    return out


def reported_input_tokens(response: Any) -> int | None:
    """``usage_metadata["input_tokens"]`` of a model reply (an AIMessage, or a ModelResponse holding one)."""
    messages = getattr(response, "result", None)
    candidates = list(messages) if isinstance(messages, list) else [response]
    for message in reversed(candidates):
        usage = getattr(message, "usage_metadata", None)
        if isinstance(usage, Mapping):
            value = usage.get("input_tokens")
            if isinstance(value, int) and value > 0:
                return value
    return None


def system_message(result: FitResult) -> Any:
    """The system text (prompt, summary, scratchpad) as one ``SystemMessage``, or None."""
    if not result.prompt.system:
        return None
    from langchain_core.messages import SystemMessage

    return SystemMessage(content=result.prompt.system)


__all__ = [
    "DEFAULT_THREAD",
    "current_thread_id",
    "reported_input_tokens",
    "require",
    "system_message",
    "thread_id_from_config",
    "tool_schemas",
    "view_messages",
]
