"""windowkeeper for the OpenAI Agents SDK (extra ``openai-agents``): a model-input filter and a session.

    from windowkeeper.integrations.openai_agents import input_filter
    result = await Runner.run(agent, "hi", run_config=RunConfig(call_model_input_filter=input_filter(128_000)))

`input_filter` manages the Responses input of every model call: the items are trimmed to the budget, old tool
outputs become restorable pointers and the running summary is merged into ``instructions``. It is an ordinary
synchronous callable (the SDK accepts sync or async filters), and it works with the offline summarizer.

`WindowkeeperSession` implements the SDK's ``Session`` protocol on a windowkeeper store: ``add_items`` keeps every
item (the full history, byte for byte), ``get_items`` returns the managed view, opened by the running summary as
a system message. Use the session to carry a long conversation across runs, the filter to manage the calls inside
one run, or both.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Sequence
from typing import Any

from ..context import BaseContextManager
from ..errors import ConfigurationError
from ..llm.formats._common import plain
from ..storage import SessionStore, open_store
from ._lc import require
from .window import FitResult, Window, as_window

logger = logging.getLogger(__name__)

ITEMS_NAMESPACE = "windowkeeper.agents.items"
DEFAULT_SESSION_BUDGET = 128_000
ThreadIdOf = str | Callable[[Any], str]


def agent_tool_schemas(agent: Any) -> list[dict[str, Any]] | None:
    """The function tools of an SDK ``Agent`` as the Responses schemas sent with a call (for counting)."""
    out: list[dict[str, Any]] = []
    for tool in getattr(agent, "tools", None) or ():
        schema = getattr(tool, "params_json_schema", None)
        name = getattr(tool, "name", None)
        if isinstance(schema, dict) and isinstance(name, str):
            out.append(
                {
                    "type": "function",
                    "name": name,
                    "description": getattr(tool, "description", "") or "",
                    "parameters": schema,
                }
            )
    return out or None


class WindowkeeperInputFilter:
    """``RunConfig(call_model_input_filter=...)``: the managed input of each model call (see the module docstring).

    ``thread_id`` names the conversation: a string, or a function of the SDK's ``CallModelData`` (e.g. reading an
    id from your run context) for one filter serving several conversations.
    """

    def __init__(self, window: Window, thread_id: ThreadIdOf = "default") -> None:
        if not (isinstance(thread_id, str) and thread_id) and not callable(thread_id):
            raise ConfigurationError(f"thread_id must be a non-empty string or a function, got {thread_id!r}")
        self.window = window
        self.thread_id = thread_id
        self.last_result: FitResult | None = None

    def _thread(self, data: Any) -> str:
        return self.thread_id if isinstance(self.thread_id, str) else str(self.thread_id(data))

    def _model_input(self, result: FitResult) -> Any:
        from agents.run_config import ModelInputData

        self.last_result = result
        return ModelInputData(input=result.messages, instructions=result.system)

    def __call__(self, data: Any) -> Any:
        """Sync filter: the SDK calls it inside its event loop; the work runs on a worker thread meanwhile."""
        model_data = data.model_data
        result = self.window.fit(
            model_data.input,
            system=model_data.instructions,
            tools=agent_tool_schemas(data.agent),
            thread_id=self._thread(data),
        )
        return self._model_input(result)

    async def acall(self, data: Any) -> Any:
        """Async form, for ``RunConfig(call_model_input_filter=my_filter.acall)``."""
        model_data = data.model_data
        result = await self.window.afit(
            model_data.input,
            system=model_data.instructions,
            tools=agent_tool_schemas(data.agent),
            thread_id=self._thread(data),
        )
        return self._model_input(result)


def input_filter(
    manager_or_budget: Window | BaseContextManager[Any] | int,
    *,
    store: str | os.PathLike[str] | SessionStore | None = None,
    thread_id: ThreadIdOf = "default",
) -> WindowkeeperInputFilter:
    """A ``call_model_input_filter``; ``manager_or_budget`` is a manager, a budget in tokens or a Responses Window."""
    require("agents", "openai-agents")
    window = as_window(manager_or_budget, format="openai_responses", store=store, owner="input_filter")
    return WindowkeeperInputFilter(window, thread_id)


class WindowkeeperSession:
    """The SDK's ``Session`` protocol on a windowkeeper store (see the module docstring).

    ``store`` is a SQLite path, a ``sqlite:///``, ``postgresql://`` or ``redis://`` URL, or a `SessionStore`
    (default: an in-memory store). ``manager_or_budget`` manages the view `get_items` returns.
    """

    session_settings: Any = None

    def __init__(
        self,
        session_id: str,
        store: str | os.PathLike[str] | SessionStore | None = None,
        *,
        manager_or_budget: BaseContextManager[Any] | int = DEFAULT_SESSION_BUDGET,
    ) -> None:
        if not isinstance(session_id, str) or not session_id:
            raise ConfigurationError(f"session_id must be a non-empty string, got {session_id!r}")
        self.session_id = session_id
        self._owns_store = not isinstance(store, SessionStore)
        self.store: SessionStore = store if isinstance(store, SessionStore) else open_store(store or "memory://")
        self.window = as_window(
            manager_or_budget, format="openai_responses", store=self.store, owner="WindowkeeperSession"
        )
        self.window.thread_id = session_id
        self._next: int | None = None
        self.last_result: FitResult | None = None

    async def _items(self) -> list[tuple[str, dict[str, Any]]]:
        records = await self.store.list_records(ITEMS_NAMESPACE, self.session_id)
        return [(r.key, r.doc["item"]) for r in records]

    async def all_items(self) -> list[dict[str, Any]]:
        """Every item ever added (the full history), as stored."""
        return [item for _, item in await self._items()]

    async def get_items(self, limit: int | None = None) -> list[Any]:
        """The managed view of the history (the latest ``limit`` items of it when given)."""
        items = await self.all_items()
        if not items:
            return []
        result = await self.window.afit(items, thread_id=self.session_id)
        self.last_result = result
        view: list[Any] = list(result.messages)
        if result.system:
            view.insert(0, {"role": "system", "content": result.system})
        if limit is not None:
            view = view[-limit:] if limit > 0 else []
        return view

    async def add_items(self, items: Sequence[Any]) -> None:
        if not items:
            return
        if self._next is None:
            existing = await self._items()
            self._next = int(existing[-1][0]) + 1 if existing else 0
        for item in items:
            doc = plain(item)
            if not isinstance(doc, dict):
                raise ConfigurationError(
                    f"session items must be Responses input items (dicts), got {type(item).__name__}"
                )
            await self.store.add_record(ITEMS_NAMESPACE, self.session_id, f"{self._next:012d}", {"item": doc})
            self._next += 1

    async def pop_item(self) -> Any:
        existing = await self._items()
        if not existing:
            return None
        key, item = existing[-1]
        await self.store.delete_record(ITEMS_NAMESPACE, self.session_id, key)
        self._next = int(key)
        return item

    async def clear_session(self) -> None:
        await self.store.delete_session(ITEMS_NAMESPACE, self.session_id)
        await self.window.adelete_thread(self.session_id)
        self._next = 0

    async def aclose(self) -> None:
        if self._owns_store:
            await self.store.close()


__all__ = ["ITEMS_NAMESPACE", "WindowkeeperInputFilter", "WindowkeeperSession", "agent_tool_schemas", "input_filter"]
