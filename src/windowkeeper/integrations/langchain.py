"""`WindowkeeperMiddleware`: windowkeeper as a LangChain v1 agent middleware (extra ``langchain``).

    from windowkeeper.integrations.langchain import WindowkeeperMiddleware
    agent = create_agent(model, tools, middleware=[WindowkeeperMiddleware(128_000)])

It wraps every model call (``wrap_model_call`` / ``awrap_model_call``): the agent's state keeps the full history,
and only the request is managed: trimmed to the budget, old tool results turned into restorable pointers, the
running summary placed after the system prompt in the request's system message. What the manager keeps between
calls (summary, offloaded originals) is kept per LangGraph ``thread_id``, and in ``store=`` when given. The prompt
size the provider reports for each reply calibrates an estimated counter (Anthropic, Gemini models).

The middleware registers the ``recall`` tool its pointers name (``create_agent`` adds a middleware's ``tools`` to
the agent's), so a model that asks for a cleared output by its id gets it back; pass ``recall_tool=False`` to
leave it out, and the pointers then tell the model to ask the user instead.

A structured response (``response_format=``) costs its schema in every request, which ``create_agent`` adds only
after every middleware ran (an output tool, or the model's ``response_format``): it is counted with the request's
tools, or the request would exceed the budget by the schema's size.

The host's messages go out as they came: ``request.system_message`` (its content blocks, a ``cache_control``;
the summary after its content once there is one) and the state's messages, its system messages included, which
are never joined into another (the summary then follows the leading ones as a system message of its own). A
system message said mid-conversation stays where it was for OpenAI's chat models and leads, with the others,
for every other model (ChatAnthropic raises on system messages that are not consecutive at the front).

List it last among the middleware that edit the model request: ``create_agent`` nests ``wrap_model_call``
middleware with the first listed outermost, so one listed after it edits the request windowkeeper already
planned, unseen (a ``@dynamic_prompt`` drops the summary with the system message it replaces, a tool filter can
drop the ``recall`` tool a pointer names, ``TodoListMiddleware``'s instructions exceed the budget counted).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Awaitable, Callable
from typing import Any

from ..context import BaseContextManager
from ..errors import MissingDependencyError
from ..storage import SessionStore
from ._lc import (
    accepts_mid_system,
    current_thread_id,
    managed,
    reported_input_tokens,
    request_schemas,
)
from .window import FitResult, Window, as_window

try:
    from langchain.agents.middleware import AgentMiddleware, ModelRequest, ModelResponse
except ImportError:  # pragma: no cover - exercised only without the extra
    raise MissingDependencyError("langchain", "langchain") from None

logger = logging.getLogger(__name__)


class WindowkeeperMiddleware(AgentMiddleware):  # type: ignore[type-arg]
    """Manage the messages of every model call of a ``create_agent`` agent (see the module docstring).

    Put it last in ``middleware=[...]`` among those that edit the request (the system message, the tools, the
    messages): what a middleware listed after it changes is sent unmanaged and uncounted.

    ``manager_or_budget`` is a context manager, a budget in tokens (the model's context window; a
    `TokenBudgetContextManager` with the offline summarizer is built), or a `Window` with ``format="langchain"``.
    """

    def __init__(
        self,
        manager_or_budget: Window | BaseContextManager[Any] | int,
        *,
        store: str | os.PathLike[str] | SessionStore | None = None,
        recall_tool: bool = True,
    ) -> None:
        super().__init__()
        self.window = as_window(manager_or_budget, format="langchain", store=store, owner="WindowkeeperMiddleware")
        self.last_result: FitResult | None = None
        self.recall = self.window.recall_tool()
        self.recall.thread_of = current_thread_id
        self.tools = [self.recall.as_langchain_tool()] if recall_tool else []
        self._shadow_warned = not recall_tool

    @property
    def name(self) -> str:
        return "WindowkeeperMiddleware"

    def _warn_if_shadowed(self, tools: Any) -> None:
        """Say once that a tool of the caller's named ``recall`` took the place of this middleware's:
        ``create_agent`` keeps one tool per name, so the model never gets the one the pointers were to name, and
        the pointers tell it to ask the user instead (correct, but nothing said why)."""
        if self._shadow_warned:
            return
        own = self.tools[0]
        for tool in tools or ():
            name = (tool.get("name") or tool.get("function", {}).get("name")) if isinstance(tool, dict) else None
            if tool is not own and getattr(tool, "name", name) == own.name:
                self._shadow_warned = True
                logger.warning(
                    "WindowkeeperMiddleware: the agent has a tool of its own named %r, which takes the place "
                    "of the middleware's recall tool, so cleared tool results tell the model to ask the user to "
                    "restore them; rename your tool (e.g. 'recall_preference') to let the model restore them "
                    "itself, or pass WindowkeeperMiddleware(..., recall_tool=False) to keep yours without this "
                    "warning",
                    own.name,
                )
                return

    def _fit_args(self, request: ModelRequest[Any]) -> dict[str, Any]:
        self._warn_if_shadowed(request.tools)
        return {
            "system": request.system_message,
            # the structured-output schema goes out with the request too, added by the host after this middleware
            "tools": request_schemas(request.response_format, request.model, request.tools),
            "thread_id": current_thread_id(),
        }

    def _managed(self, request: ModelRequest[Any], result: FitResult) -> ModelRequest[Any]:
        self.last_result = result
        system, messages = managed(
            result, request.messages, request.system_message, in_place=accepts_mid_system(request.model)
        )
        # ``create_agent`` sends ``[request.system_message, *request.messages]``: the host's prompt stays in its slot
        return request.override(messages=messages, system_message=system)

    def wrap_model_call(
        self,
        request: ModelRequest[Any],
        handler: Callable[[ModelRequest[Any]], ModelResponse[Any]],
    ) -> Any:
        result = self.window._fit_unwritten(request.messages, **self._fit_args(request))
        response = handler(self._managed(request, result))
        self.window.observe_usage(reported_input_tokens(response), thread_id=result.thread_id)
        return response

    async def awrap_model_call(
        self,
        request: ModelRequest[Any],
        handler: Callable[[ModelRequest[Any]], Awaitable[ModelResponse[Any]]],
    ) -> Any:
        result = await self.window._afit_unwritten(request.messages, **self._fit_args(request))
        response = await handler(self._managed(request, result))
        self.window.observe_usage(reported_input_tokens(response), thread_id=result.thread_id)
        return response


__all__ = ["WindowkeeperMiddleware"]
