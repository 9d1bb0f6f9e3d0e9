"""`pre_model_hook`: windowkeeper for LangGraph's prebuilt ReAct agent and custom graphs (extra ``langgraph``).

    from windowkeeper.integrations.langgraph import pre_model_hook
    hook = pre_model_hook(128_000, tools=tools)
    agent = create_react_agent(model, [*tools, *hook.tools], pre_model_hook=hook, checkpointer=...)

``create_react_agent`` is deprecated in LangGraph 1.x; its successor, LangChain's ``create_agent``, takes
`windowkeeper.integrations.langchain.WindowkeeperMiddleware`. In a custom ``StateGraph``, call the hook from
the node that calls the model: ``hook(state, config)["llm_input_messages"]`` is what to send.

The hook runs before every model call and returns ``llm_input_messages``: the managed view of the state's
messages, the state's own system messages as they are (ids, content blocks) and the running summary after them:
in the state's one leading system message, as a copy with the summary after its content, or, with several, as a
system message of its own after the leading ones. The state's ``messages`` are left untouched, so the checkpointer
keeps the full history. What the manager keeps between calls is kept per ``thread_id`` of the run's config (and in
``store=`` when given). With ``create_react_agent(prompt=...)`` the prompt comes first and the hook's messages
follow it; put the system prompt in the state instead to get a single one.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping, Sequence
from typing import Any

from .._cache import LRUCache
from ..context import BaseContextManager
from ..errors import ConfigurationError
from ..storage import SessionStore
from ._lc import (
    accepts_mid_system,
    current_thread_id,
    managed,
    reported_input_tokens,
    require,
    thread_id_from_config,
    tool_schemas,
)
from .window import MAX_WINDOW_THREADS, FitResult, Window, as_window

logger = logging.getLogger(__name__)


def _messages(state: Any) -> list[Any]:
    messages = state.get("messages") if isinstance(state, Mapping) else getattr(state, "messages", None)
    if messages is None:
        if isinstance(state, Sequence) and not isinstance(state, str):
            raise ConfigurationError(
                f"pre_model_hook takes the graph state, not its list of messages (got a {type(state).__name__} of "
                f"{len(state)}): call hook(state, config), or hook({{'messages': messages}}, config)"
            )
        keys = sorted(map(str, state)) if isinstance(state, Mapping) else None
        raise ConfigurationError(
            f"pre_model_hook expects the agent state to hold 'messages'; got {type(state).__name__} without them"
            + (f" (its keys: {keys})" if keys is not None else "")
            + ": pass a state with the conversation under 'messages' (MessagesState)"
        )
    return list(messages)


def _update(result: FitResult, messages: list[Any], in_place: bool) -> dict[str, Any]:
    # the state's system prompt (its one system message, leading) takes the summary after its content, as the
    # middleware's system prompt does: one system message holding both, its id and blocks kept
    lone = messages[0] if messages and len(result.prompt.system_parts) == 1 else None
    own = lone if getattr(lone, "type", None) == "system" else None
    head, view = managed(result, messages, own, in_place=in_place)
    return {"llm_input_messages": [head, *view] if head is not None else view}


def agent_tools(tools: Any) -> list[Any]:
    """The agent's tools as ``create_react_agent`` takes them (a list of tools, functions and tool dicts, or a
    ``ToolNode``), to count; anything else raises naming it, since a tool left uncounted makes every request
    larger than the budget planned."""
    if tools is None:
        return []
    by_name = getattr(tools, "tools_by_name", None)
    if isinstance(by_name, Mapping):  # a ToolNode
        return list(by_name.values())
    if isinstance(tools, Mapping) or not isinstance(tools, Sequence) or isinstance(tools, str):
        raise ConfigurationError(
            f"pre_model_hook(tools=...) takes the agent's tools as a list (or its ToolNode), as create_react_agent "
            f"does; got {type(tools).__name__} {_name(tools)!r}: pass tools=[...]"
        )
    for index, tool in enumerate(tools):
        if not (isinstance(tool, Mapping) or callable(tool) or hasattr(tool, "args_schema")):
            raise ConfigurationError(
                f"pre_model_hook(tools=...): item {index} is {type(tool).__name__} {tool!r}, not a tool; pass "
                "LangChain tools, functions or tool dicts (the agent's own tools, counted in every request)"
            )
    return list(tools)


def _name(tool: Any) -> str:
    name = getattr(tool, "name", None)
    return name if isinstance(name, str) else repr(tool)[:80]


class WindowkeeperHook:
    """The hook object (sync ``__call__`` and async ``acall``); `pre_model_hook` wraps it as a LangGraph node.

    In a custom ``StateGraph`` call it from a node of your own: ``hook(state, config)`` (or ``await
    hook.acall(state, config)``) with the node's ``config`` returns ``{"llm_input_messages": [...]}``, the
    managed messages to send the model; the thread is ``config["configurable"]["thread_id"]``. ``recall_tool`` is
    the LangChain tool the pointers name: add it to the tools the model is bound to and the tool node runs.

    The state's own system messages reach the model as they are (ids, content blocks, a ``cache_control``), the
    summary after the content of the state's one leading system message, or with several a system message of
    windowkeeper's after the leading ones. They lead, consecutive, unless ``model``
    (the chat model the messages go to) is known to accept a system message mid-conversation (OpenAI's): then
    one said mid-conversation stays where it was. ChatAnthropic raises on any other order.
    """

    def __init__(self, window: Window, *, tools: Any = None, recall_tool: bool = True, model: Any = None) -> None:
        self.window = window
        self.in_place = accepts_mid_system(model)
        """Whether a system message of the state said mid-conversation stays where it was (``model`` takes it)."""
        self.last_result: FitResult | None = None
        self._usage_seen: LRUCache[str, object] = LRUCache(MAX_WINDOW_THREADS)
        """The reply whose usage each thread last fed the counter, for the threads the window keeps in memory."""
        recall = window.recall_tool()
        recall.thread_of = current_thread_id
        self.recall_tool = recall.as_langchain_tool()
        self.tools: list[Any] = [self.recall_tool] if recall_tool else []
        """What to add to the agent's tools (the recall tool, unless ``recall_tool=False``)."""
        self._schemas = tool_schemas([*agent_tools(tools), *self.tools])

    def _observe(self, messages: list[Any], thread_id: str) -> None:
        """The newest AI message answers the previous request of this thread: its reported prompt size calibrates
        an estimated counter (once per reply)."""
        reply = next((m for m in reversed(messages) if type(m).__name__ in ("AIMessage", "AIMessageChunk")), None)
        key = getattr(reply, "id", None) or id(reply)
        if reply is None or self._usage_seen.get(thread_id) == key:
            return
        self._usage_seen.put(thread_id, key)
        self.window.observe_usage(reported_input_tokens(reply), thread_id=thread_id)

    def __call__(self, state: Any, config: Mapping[str, Any] | None = None) -> dict[str, Any]:
        messages = _messages(state)
        tid = thread_id_from_config(config)
        self._observe(messages, tid)
        self.last_result = self.window._fit_unwritten(messages, tools=self._schemas, thread_id=tid)
        return _update(self.last_result, messages, self.in_place)

    async def acall(self, state: Any, config: Mapping[str, Any] | None = None) -> dict[str, Any]:
        messages = _messages(state)
        tid = thread_id_from_config(config)
        self._observe(messages, tid)
        self.last_result = await self.window._afit_unwritten(messages, tools=self._schemas, thread_id=tid)
        return _update(self.last_result, messages, self.in_place)


def pre_model_hook(
    manager_or_budget: Window | BaseContextManager[Any] | int,
    *,
    store: str | os.PathLike[str] | SessionStore | None = None,
    tools: Any = None,
    recall_tool: bool = True,
    model: Any = None,
) -> Any:
    """A LangGraph node for ``create_react_agent(pre_model_hook=...)`` (sync and async graphs).

    ``manager_or_budget`` is a context manager, a budget in tokens, or a `Window` with ``format="langchain"``.
    ``tools`` are the agent's own tools (counted in every request): a list, or the ``ToolNode`` given to
    ``create_react_agent``. The returned runnable has the hook object
    as ``.hook`` (its ``window`` and ``last_result``) and ``.tools``: the recall tool the pointers name, to add to
    the agent's tools (``create_react_agent(model, [*tools, *hook.tools], pre_model_hook=hook)``); with
    ``recall_tool=False`` it is empty and the pointers tell the model to ask the user instead. ``model`` is the
    chat model the messages go to: with one known to accept a system message mid-conversation (OpenAI's), such a
    message of the state stays where it was said; otherwise the state's system messages are sent leading.
    """
    require("langgraph", "langgraph")
    from langchain_core.runnables import RunnableConfig, RunnableLambda

    window = as_window(manager_or_budget, format="langchain", store=store, owner="pre_model_hook")
    hook = WindowkeeperHook(window, tools=tools, recall_tool=recall_tool, model=model)

    def run(state: Any, config: RunnableConfig) -> dict[str, Any]:
        return hook(state, config)

    async def arun(state: Any, config: RunnableConfig) -> dict[str, Any]:
        return await hook.acall(state, config)

    class HookNode(RunnableLambda):  # type: ignore[type-arg,misc]
        """The hook as a LangGraph node that is also callable as ``node(state, config)`` from a node of your own
        (a custom ``StateGraph``); ``await node.acall(state, config)`` is the async form."""

        def __call__(self, state: Any, config: Mapping[str, Any] | None = None) -> dict[str, Any]:
            return hook(state, config)

        async def acall(self, state: Any, config: Mapping[str, Any] | None = None) -> dict[str, Any]:
            return await hook.acall(state, config)

    node: Any = HookNode(run, afunc=arun, name="windowkeeper_pre_model_hook")
    node.hook = hook
    node.tools = hook.tools
    return node


__all__ = ["WindowkeeperHook", "pre_model_hook"]
