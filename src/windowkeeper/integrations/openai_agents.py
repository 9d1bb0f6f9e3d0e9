"""windowkeeper for the OpenAI Agents SDK (extra ``openai-agents``): a model-input filter and a session.

    from windowkeeper.integrations.openai_agents import input_filter
    result = await Runner.run(agent, "hi", run_config=RunConfig(call_model_input_filter=input_filter(128_000)))

`input_filter` manages the Responses input of every model call: the items are trimmed to the budget, old tool
outputs become restorable pointers and the running summary is merged into ``instructions``. It is an ordinary
synchronous callable (the SDK accepts sync or async filters), and it works with the offline summarizer.

`WindowkeeperSession` implements the SDK's ``Session`` protocol on a windowkeeper store: ``add_items`` keeps every
item (the full history, byte for byte), ``get_items`` returns the managed view, opened by the running summary as
a system message. Use the session to carry a long conversation across runs, the filter to manage the calls inside
one run, or both through ``RunConfig(call_model_input_filter=session.input_filter)``: that filter shares the
session's window and thread, so one manager and one summary serve the conversation. The ``recall`` tool the
pointers name is ``.recall_tool`` of either (an SDK ``FunctionTool`` to put among the agent's tools).
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import threading
import uuid
from collections.abc import Callable, Mapping, Sequence
from contextvars import ContextVar
from typing import Any

from .._cache import LRUCache
from ..context import BaseContextManager
from ..errors import ConfigurationError
from ..llm.formats._common import plain
from ..prompt.sections import SUMMARY_HEADER
from ..storage import ConflictError, SessionStore, open_store
from ..storage.base import RecordNotFoundError
from ._formats import same_prefix
from ._lc import require
from ._recall import WindowRecallTool
from .window import FitResult, Window, as_window

logger = logging.getLogger(__name__)

ITEMS_NAMESPACE = "windowkeeper.agents.items"
DEFAULT_SESSION_BUDGET = 128_000
ThreadIdOf = str | Callable[[Any], str]


def agent_tool_schemas(agent: Any) -> list[dict[str, Any]] | None:
    """What an SDK ``Agent`` sends with a call beside its input, as schemas (for counting): its function tools,
    the ``transfer_to_*`` tools of its handoffs and the JSON schema of its ``output_type``. Remembered per agent
    while its tools, handoffs and output type are the same objects (the filter asks on every model call)."""
    tools = tuple(getattr(agent, "tools", None) or ())
    handoffs = tuple(getattr(agent, "handoffs", None) or ())
    output_type = getattr(agent, "output_type", None)
    key = (tuple(map(id, tools)), tuple(map(id, handoffs)), id(output_type))
    known = _AGENT_SCHEMAS.get(id(agent))
    if known is not None and known[0] is agent and known[1] == key:
        return known[2]
    out = [*_function_schemas(tools), *_handoff_schemas(handoffs), *_output_schema(output_type)]
    schemas = out or None
    if len(_AGENT_SCHEMAS) >= _MAX_AGENTS:
        _AGENT_SCHEMAS.clear()
    _AGENT_SCHEMAS[id(agent)] = (agent, key, schemas, (tools, handoffs, output_type))
    return schemas


_MAX_AGENTS = 256
_AGENT_SCHEMAS: dict[int, tuple[Any, Any, list[dict[str, Any]] | None, Any]] = {}
"""`agent_tool_schemas` by ``id()`` of the agent (the agent and the objects keyed on are kept, so ids are not
reused while an entry stands); the same list is returned, so `Window` counts it once."""


def _function_schemas(tools: Sequence[Any]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for tool in tools:
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
    return out


def _handoff_schemas(handoffs: Sequence[Any]) -> list[dict[str, Any]]:
    """The tools the SDK declares for ``handoffs`` (an ``Agent`` becomes a ``transfer_to_<name>`` tool)."""
    if not handoffs:
        return []
    from agents.handoffs import Handoff, handoff

    out: list[dict[str, Any]] = []
    for item in handoffs:
        made = item if isinstance(item, Handoff) else handoff(item)
        out.append(
            {
                "type": "function",
                "name": made.tool_name,
                "description": made.tool_description,
                "parameters": made.input_json_schema,
            }
        )
    return out


def _output_schema(output_type: Any) -> list[dict[str, Any]]:
    """The ``output_type``'s JSON schema, which the request carries as its response format."""
    if output_type is None or output_type is str:
        return []
    from agents.agent_output import AgentOutputSchema, AgentOutputSchemaBase

    schema = output_type if isinstance(output_type, AgentOutputSchemaBase) else AgentOutputSchema(output_type)
    if schema.is_plain_text():
        return []
    return [{"type": "json_schema", "name": "final_output", "schema": schema.json_schema()}]


_RUN: ContextVar[tuple[WindowkeeperInputFilter, str] | None] = ContextVar("windowkeeper_agents_run", default=None)
"""The filter (so its window) and thread of this run's latest model call, or of the session whose items the run
read: set in the run's task, so a recall tool, which the SDK calls from that task (or a task it starts), restores
from the conversation of its own run, whichever filter or session the tool was taken from."""


class _RunRecall(WindowRecallTool):
    """The Agents SDK ``recall`` tool: it restores on the window and thread of the run it is called in (`_RUN`),
    and on its own filter's latest thread outside a run of a windowkeeper filter or session.

    An agent is often built once, with the recall tool of the first session or filter at hand, and run on many
    sessions: bound to that one window, the tool looked for another session's pointer among its own thread's and
    answered that there was no such content."""

    def __init__(self, owner: WindowkeeperInputFilter) -> None:
        own = owner.window_recall()
        super().__init__(own._restore, own._search, own._key, lambda: owner._last_thread)
        self._owner = owner

    async def ainvoke(self, arguments: Mapping[str, Any] | str | None = None, *, thread_id: str | None = None) -> str:
        run = _RUN.get()
        owner, thread = run if run is not None else (self._owner, self._owner._last_thread)
        return await owner.window_recall().ainvoke(arguments, thread_id=thread_id or thread)


class WindowkeeperInputFilter:
    """``RunConfig(call_model_input_filter=...)``: the managed input of each model call (see the module docstring).

    ``thread_id`` names the conversation: a string, or a function of the SDK's ``CallModelData`` (e.g. reading an
    id from your run context) for one filter serving several conversations.
    """

    def __init__(
        self, window: Window, thread_id: ThreadIdOf = "default", *, session: WindowkeeperSession | None = None
    ) -> None:
        if not (isinstance(thread_id, str) and thread_id) and not callable(thread_id):
            raise ConfigurationError(f"thread_id must be a non-empty string or a function, got {thread_id!r}")
        self.window = window
        self.thread_id = thread_id
        self.session = session
        self.last_result: FitResult | None = None
        self._last_thread = thread_id if isinstance(thread_id, str) else "default"
        self._recall_tool: Any = None
        self._window_recall: WindowRecallTool | None = None
        self._agents: LRUCache[str, str] = LRUCache(_AGENTS_KEPT)
        """The agent whose call each thread last served (see `_own_thread`), for the threads used last."""

    @property
    def recall_tool(self) -> Any:
        """The ``recall`` ``FunctionTool`` the pointers name: ``Agent(tools=[..., my_filter.recall_tool])``.

        Without it among the agent's tools the pointers tell the model to ask the user instead (the SDK ends a
        run whose model calls a tool the agent lacks). It restores on the thread of the filter's latest call.
        """
        if self._recall_tool is None:
            self._recall_tool = _RunRecall(self).as_agents_tool()
        return self._recall_tool

    def window_recall(self) -> WindowRecallTool:
        """The window's own recall tool (`Window.recall_tool`), which `recall_tool` calls for a run of this filter."""
        if self._window_recall is None:
            self._window_recall = self.window.recall_tool()
        return self._window_recall

    def _switched(self, thread: str, agent: Any) -> bool:
        """Whether ``agent`` is not the one whose call ``thread`` last served (only then is it asked whether the
        list goes on: a handoff, or a sub-agent's run of its own)."""
        name = getattr(agent, "name", None)
        last = self._agents.get(thread)
        if last is None or not isinstance(name, str):
            if isinstance(name, str):
                self._agents.put(thread, name)
            return False
        return name != last

    def _thread(self, data: Any) -> str:
        return self.thread_id if isinstance(self.thread_id, str) else str(self.thread_id(data))

    def _source(self, data: Any) -> tuple[Any, str, str | None]:
        """What to fit, on which thread, and the running summary a thread that starts from it starts with: with a
        session, the history behind its view (the session's thread)."""
        items = data.model_data.input
        if self.session is None:
            # a WindowkeeperSession's view opens with its summary item: that summary becomes the thread's own
            # (one summary per request, in ``instructions``) rather than staying in the input beside it
            kept, summary = split_summary_item(items)
            return (items if summary is None else kept), self._thread(data), summary
        source = self.session.source_of(items)
        if source is not None:
            return source, self.session.session_id, None
        thread = f"{self.session.session_id}:run"
        logger.info(
            "session %r: the run's input does not start with the view get_items served (a session_input_callback "
            "or limit changed it); managing it on its own thread %r",
            self.session.session_id,
            thread,
        )
        # the session's summary, served as a system item, goes to that thread as its summary (one summary per
        # request, which that thread's cuts then extend) instead of staying in its input beside that thread's own
        items, summary = self.session.without_summary(items)
        return items, thread, summary

    def _model_input(self, result: FitResult) -> Any:
        from agents.run_config import ModelInputData

        self.last_result = result
        return ModelInputData(input=result.messages, instructions=result.system)

    def _own_thread(self, thread: str, agent: Any, goes_on: bool) -> str:
        """``thread``, or a thread of ``agent``'s own when another agent's call does not go on from it: the SDK
        runs an ``agent.as_tool()`` sub-agent with the parent's run config, so its calls, a conversation of their
        own, reach this filter too; on the parent's thread each would start it over (its summary dropped). A
        handoff's agent continues the conversation, and stays on it."""
        name = getattr(agent, "name", None)
        if not isinstance(name, str) or goes_on:
            if isinstance(name, str):
                self._agents.put(thread, name)
            return thread
        own = f"{thread}:{name}"
        self._agents.put(own, name)
        return own

    def __call__(self, data: Any) -> Any:
        """Sync filter: the SDK calls it inside its event loop; the work runs on a worker thread meanwhile."""
        items, thread, summary = self._source(data)
        if self._switched(thread, data.agent):
            thread = self._own_thread(thread, data.agent, self.window.continues(items, thread_id=thread))
        self._last_thread = thread
        _RUN.set((self, thread))
        result = self.window.fit(
            items,
            system=data.model_data.instructions,
            tools=agent_tool_schemas(data.agent),
            thread_id=thread,
            summary=summary,
        )
        return self._model_input(result)

    async def acall(self, data: Any) -> Any:
        """Async form, for ``RunConfig(call_model_input_filter=my_filter.acall)``."""
        items, thread, summary = self._source(data)
        if self._switched(thread, data.agent):
            goes_on = await self.window.acontinues(items, thread_id=thread)
            thread = self._own_thread(thread, data.agent, goes_on)
        self._last_thread = thread
        _RUN.set((self, thread))
        result = await self.window.afit(
            items,
            system=data.model_data.instructions,
            tools=agent_tool_schemas(data.agent),
            thread_id=thread,
            summary=summary,
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


SUMMARY_SCAN = 8
"""How many leading items are looked at for a session's summary item (it is served first; a
``session_input_callback`` may put a few items before it), so the look costs the same on any history."""


_SERVED_SUMMARIES: LRUCache[bytes, str] = LRUCache(1024)
"""Digest of the content of each summary item a `WindowkeeperSession` of this process served -> its summary: what
tells a session's summary item from a caller's own system item whose text opens the same way (`summary_of_item`).
The filter that meets it runs in the process whose session served it (the SDK reads the session in the run)."""
_SERVED_LOCK = threading.Lock()


def _content_key(content: str) -> bytes:
    return hashlib.blake2b(content.encode("utf-8", "surrogatepass"), digest_size=16).digest()


def _served_summary(head: dict[str, Any], summary: str) -> None:
    """Record ``head`` as a summary item a session served, holding ``summary``."""
    with _SERVED_LOCK:
        _SERVED_SUMMARIES.put(_content_key(head["content"]), summary)


def summary_of_item(item: Any) -> str | None:
    """The running summary a `WindowkeeperSession` view's opening system item holds, or None for any other item
    (a system item whose text merely opens like one is the caller's own: only an item a session of this process
    served, or an equal copy, is a summary item)."""
    if not isinstance(item, dict) or item.get("role") != "system":
        return None
    content = item.get("content")
    if not isinstance(content, str) or not content.startswith(SUMMARY_HEADER + "\n"):
        return None
    with _SERVED_LOCK:
        return _SERVED_SUMMARIES.get(_content_key(content))


def split_summary_item(items: Sequence[Any]) -> tuple[list[Any], str | None]:
    """``items`` without a session's summary item among the first `SUMMARY_SCAN`, and its summary (``items`` as
    they are, and None, when there is none)."""
    for index in range(min(len(items), SUMMARY_SCAN)):
        summary = summary_of_item(items[index])
        if summary is not None:
            return [*items[:index], *items[index + 1 :]], summary
    return list(items), None


POPS_NAMESPACE = "windowkeeper.agents.pops"
"""One record per session whose token changes on every `pop_item` and `clear_session`: a session object that has
read the items before sees the change with one small read and reads the items again."""
POPS_KEY = "token"
OUTPUT_KINDS = frozenset(
    {
        "function_call_output",
        "computer_call_output",
        "local_shell_call_output",
        "custom_tool_call_output",
        "shell_call_output",
        "apply_patch_call_output",
    }
)


def latest_items(items: Sequence[Any], limit: int) -> list[Any]:
    """The latest ``limit`` items, without a tool output whose call fell outside them, nor the rest of a model
    response whose reasoning item fell outside them (the Responses API rejects a call sent without the reasoning
    that preceded it, and an output without its call)."""
    if limit <= 0:
        return []
    start = max(len(items) - limit, 0)
    before = start
    while before > 0 and _model_side(items[before - 1]):
        before -= 1
        if items[before].get("type") == "reasoning":
            while start < len(items) and _model_side(items[start]):
                start += 1
            break
    out = list(items[start:])
    calls = _call_keys(out)
    return [
        i
        for i in out
        if not (
            isinstance(i, dict) and i.get("type") in OUTPUT_KINDS and (i.get("call_id") or i.get("id")) not in calls
        )
    ]


BY_VALUE_KINDS = frozenset({"function_call", "custom_tool_call"})
"""Calls a model response holds that the Responses API also takes by value (without the response's item id)."""


def newest_items(view: Sequence[Any], limit: int) -> list[Any]:
    """The newest ``limit`` items of ``view`` (none for ``limit <= 0``), as the SDK's sessions serve a limit, with
    the calls and assistant messages that open them sent by value (their ``id`` taken off) when the cut parted them
    from the reasoning item that opened their response.

    The Responses API refuses an item of a model response sent with its id but without that response's reasoning
    ("provided without its required 'reasoning' item"); by value it is the caller's own item, which it accepts. The
    count stays ``limit`` (the SDK compares the tails it reads by length), unlike `latest_items`, which drops them.
    """
    if limit <= 0:
        return []
    start = max(len(view) - limit, 0)
    out = list(view[start:])
    parted = False
    before = start
    while before > 0 and _model_side(view[before - 1]):
        before -= 1
        if view[before].get("type") == "reasoning":
            parted = True
            break
    if not parted:
        return out
    for index, item in enumerate(out):
        if not _model_side(item) or item.get("type") == "reasoning":
            break  # the parted response ends at its first output or input; a reasoning item opens the next one
        assistant = item.get("type") == "message" and item.get("role") == "assistant"
        if "id" in item and (item.get("type") in BY_VALUE_KINDS or assistant):
            out[index] = {k: v for k, v in item.items() if k != "id"}
    return out


def _model_side(item: Any) -> bool:
    """Whether ``item`` is part of a model's response (a reasoning item, a call, an assistant message), not an
    input of the user's or a tool's output."""
    return (
        isinstance(item, dict)
        and item.get("type") not in OUTPUT_KINDS
        and item.get("role") not in ("user", "system", "developer")
    )


_AGENTS_KEPT = 4096
"""Threads whose last agent a filter remembers (the rest are asked again when their agent changes)."""
_SERVED_KEPT = 4
"""Views a session remembers having served (see `WindowkeeperSession._served`)."""


class _Joined(Sequence[Any]):
    """``base[:count]`` followed by ``extra[skip:]``, without copying either (a run's input seen as the history)."""

    def __init__(self, base: list[Any], count: int, extra: Sequence[Any], skip: int) -> None:
        self._base, self._count, self._extra, self._skip = base, count, extra, skip

    def __len__(self) -> int:
        return self._count + len(self._extra) - self._skip

    def __getitem__(self, index: Any) -> Any:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        if index < 0:
            index += len(self)
        if not 0 <= index < len(self):
            raise IndexError(index)
        return self._base[index] if index < self._count else self._extra[index - self._count + self._skip]


class WindowkeeperSession:
    """The SDK's ``Session`` protocol on a windowkeeper store (see the module docstring).

    ``store`` is a SQLite path, a ``sqlite:///``, ``postgresql://`` or ``redis://`` URL, or a `SessionStore`
    (default: an in-memory store). ``manager_or_budget`` (a manager, a budget in tokens, or a Responses `Window`,
    whose own store then keeps the items too) manages the view `get_items` returns; `input_filter`
    is the filter that shares it, for runs whose tool calls grow the input past the budget within one run.

    Each `add_items` call is one record (its items stay together and in order); the store orders records, so
    several threads, tasks and processes may add to one session id at once. A session object reads each record
    once: `get_items` reads only what was added since its last read (by anyone), converts only that, and hands
    the window the same item objects as before, so a call costs what is new.
    """

    session_settings: Any = None
    _ignore_ids_for_matching = True
    """Read by the SDK: it compares the tails it reads back (a resumed write, a rewind) by content, not response
    ids, since an item at the edge of a limit may be served without its id (`newest_items`) in one read and with
    it in a longer one."""

    def __init__(
        self,
        session_id: str,
        store: str | os.PathLike[str] | SessionStore | None = None,
        *,
        manager_or_budget: Window | BaseContextManager[Any] | int = DEFAULT_SESSION_BUDGET,
        session_settings: Any = None,
    ) -> None:
        if not isinstance(session_id, str) or not session_id:
            raise ConfigurationError(f"session_id must be a non-empty string, got {session_id!r}")
        self.session_id = session_id
        self.session_settings = session_settings
        given = manager_or_budget if isinstance(manager_or_budget, Window) else None
        if given is not None:
            # a Window of the caller's keeps its thread state in its own store; the items go there too, unless
            # the window keeps none (then into ``store``)
            as_window(given, format="openai_responses", owner="WindowkeeperSession")
            if given.store is not None and store is not None and store is not given.store:
                raise ConfigurationError(
                    f"WindowkeeperSession was given store={store!r} and a Window that keeps its own store "
                    f"({type(given.store).__name__}); pass the store once: to the Window (the session then keeps "
                    "its items there too) or to the session with a Window(..., store=None)"
                )
            if store is None and given.store is not None:
                store = given.store
        self._owns_store = not isinstance(store, SessionStore)
        self.store: SessionStore = store if isinstance(store, SessionStore) else open_store(store or "memory://")
        self.window = given or as_window(
            manager_or_budget, format="openai_responses", store=self.store, owner="WindowkeeperSession"
        )
        self.window.thread_id = session_id
        self.last_result: FitResult | None = None
        self._lock = threading.Lock()
        self._items: list[dict[str, Any]] = []
        self._last_seq = -1
        self._pops: str | None = None
        self._loaded = False
        self._served: list[tuple[list[Any], int]] = []
        """The views `get_items` served last (newest first) with the item count behind each: a run's input starts
        with one of them. Several, because the SDK also reads a few latest items in the middle of a streamed run
        (to check its own write), and a ``limit`` serves only the end of a view."""
        self._summary: tuple[dict[str, Any], str] | None = None
        """The summary item the latest `get_items` served first, and the summary it holds."""
        self._filter: WindowkeeperInputFilter | None = None
        self._tools: list[dict[str, Any]] | None = None
        """What `get_items` tells the window the agent declares: the recall tool once `recall_tool` was handed
        out (for the agent's tools), so the view's pointers name it; before, they say to ask the user."""

    # -- reading ------------------------------------------------------------------------------------------------

    async def _pops_token(self) -> str | None:
        record = await self.store.get_record(POPS_NAMESPACE, self.session_id, POPS_KEY)
        return str(record.doc.get("token")) if record is not None else None

    async def _refresh(self) -> list[dict[str, Any]]:
        """The session's items, reading only the records added since the last read (all of them after a pop or
        clear by anyone, which the pops token shows)."""
        token = await self._pops_token()
        with self._lock:
            reload = not self._loaded or token != self._pops
            since = 0 if reload else self._last_seq + 1
        records = await self.store.list_records_since(ITEMS_NAMESPACE, self.session_id, since)
        with self._lock:
            if reload:
                self._items, self._last_seq = [], -1
            for record in records:
                if record.seq <= self._last_seq:
                    continue  # another task of this object merged it meanwhile
                self._items.extend(_record_items(record.doc))
                self._last_seq = record.seq
            self._loaded, self._pops = True, token
            return self._items

    async def all_items(self) -> list[dict[str, Any]]:
        """Every item ever added (the full history), as stored."""
        return list(await self._refresh())

    async def get_items(self, limit: int | None = None) -> list[Any]:
        """The managed view of the history, opened by the running summary as a system message.

        ``limit`` (else ``session_settings.limit``) keeps the newest ``limit`` items of that view and no more, as
        the SDK's own sessions do: its tail checks (the rewind of a retried turn reads ``get_items(limit=1)[0]``
        as the latest item, a resumed write compares the newest items with what it wrote) count on it. The
        summary item is among them only when the whole view fits. A tool output whose call falls before the
        cut is kept, as ``SQLiteSession`` keeps it: the SDK drops such an output before a model call (and so
        does this session's `input_filter`); dropping it here would shorten the tail the SDK compares. A cut that
        parts a model response's calls from the reasoning item that opened it serves those calls by value, without
        their response ids (`newest_items`): the Responses API refuses a call sent with its id but without its
        reasoning, and the SDK takes only the leading assistant messages' ids off.
        """
        if limit is None:
            limit = _settings_limit(self.session_settings)
        # the run reading this session is this session's conversation: its recall tool restores from it, whichever
        # session or filter the agent's tool was taken from; the thread this session's own filter chose for the
        # run's latest call (a reshaped input's, a sub-agent's) stands, since the SDK reads the session again in
        # the middle of a streamed run
        current = _RUN.get()
        if current is None or current[0].session is not self:
            _RUN.set((self.input_filter, self.session_id))
        items = await self._refresh()
        if not items:
            self._serve([], 0)  # a run's input is then all new: the filter starts the session's thread
            return []
        count = len(items)
        result = await self.window.afit(items, tools=self._tools, thread_id=self.session_id)
        self.last_result = result
        view: list[Any] = list(result.messages)
        if result.system:
            head = {"role": "system", "content": result.system}
            view.insert(0, head)
            self._summary = (head, result.summary) if result.summary else None
            if result.summary:
                _served_summary(head, result.summary)
        else:
            self._summary = None
        if limit is not None:
            view = newest_items(view, limit)
        self._serve(view, count)
        return view

    def without_summary(self, items: Sequence[Any]) -> tuple[list[Any], str | None]:
        """``items`` without the summary item `get_items` served last (equal copies count: the SDK may copy what
        a ``session_input_callback`` returns), and that summary when they held it."""
        served = self._summary
        if served is not None:
            head, summary = served
            kept = [item for item in items if item is not head and item != head]
            if len(kept) < len(items):
                return kept, summary
        # another session object's view (one per request on the same store and id): its summary item is known
        # by its header
        return split_summary_item(items)

    def _serve(self, view: list[Any], count: int) -> None:
        # an empty view starts every list: once the session has served items it would claim any run's input as
        # all new (and a reshaped one, summary item included, as the session's history), so it is kept only
        # while it is the newest
        kept = [served for served in self._served if served[0]] if view else self._served
        self._served = [(view, count), *kept[: _SERVED_KEPT - 1]]

    def source_of(self, model_input: Sequence[Any]) -> Sequence[Any] | None:
        """The full history behind a run's model input that starts with a view `get_items` served: the stored
        items behind that view followed by what the run added (None when the input starts with none of them).

        A view cut by a ``limit`` is the end of the managed view, so what the run added still follows the items
        behind it, and the thread goes on where the full view left it (one summary, not a second thread's)."""
        for view, count in self._served:
            # under a limit the SDK drops the tool outputs the cut parted from their calls (wherever they are: the
            # first of two parallel calls may be cut off, leaving its output after the second call), and takes the
            # ids off the assistant messages that open what is left: the input then starts with the view so changed
            pruned = _without_orphan_outputs(view)
            for rest in (view,) if pruned is view else (view, pruned):
                n = len(rest)
                if len(model_input) < n:
                    continue
                if same_prefix(model_input, rest, n) or same_prefix(model_input, _without_boundary_ids(rest), n):
                    return _Joined(self._items, count, model_input, n)
        return None

    @property
    def recall_tool(self) -> Any:
        """The ``recall`` ``FunctionTool`` for this session's thread (the same as ``input_filter.recall_tool``), to
        put among the agent's tools: ``Agent(tools=[..., session.recall_tool])``.

        From then on the pointers of the view `get_items` serves name it (a session without the filter never
        sees the agent, so it takes handing the tool out as declaring it); the session's filter, which sees the
        agent, still names it only to an agent that has it."""
        tool = self.input_filter.recall_tool
        if self._tools is None:
            self._tools = [self.window.recall_tool().definition("openai_responses")]
        return tool

    @property
    def input_filter(self) -> WindowkeeperInputFilter:
        """The ``call_model_input_filter`` that shares this session's window and thread (one manager, one summary).

        Within a run the SDK sends the session's view plus the run's new items; the filter hands the window the
        full history behind it instead, so the thread continues where `get_items` left it and the summary goes
        to ``instructions`` once.
        """
        if self._filter is None:
            self._filter = WindowkeeperInputFilter(self.window, self.session_id, session=self)
        return self._filter

    # -- writing ------------------------------------------------------------------------------------------------

    async def add_items(self, items: Sequence[Any]) -> None:
        """Store ``items`` as one record (a unique key; the store orders records, so concurrent writers never
        collide)."""
        if not items:
            return
        docs = []
        for item in items:
            doc = plain(item)
            if not isinstance(doc, dict):
                raise ConfigurationError(
                    f"session items must be Responses input items (dicts), got {type(item).__name__}"
                )
            docs.append(doc)
        await self.store.add_record(ITEMS_NAMESPACE, self.session_id, uuid.uuid4().hex, {"items": docs})

    async def pop_item(self) -> Any:
        while True:
            records = await self.store.list_records(ITEMS_NAMESPACE, self.session_id)
            if not records:
                return None
            last = records[-1]
            items = _record_items(last.doc)
            try:
                if len(items) <= 1:
                    if not await self.store.delete_record(ITEMS_NAMESPACE, self.session_id, last.key):
                        continue  # another writer removed it first
                else:
                    await self.store.update_record(
                        ITEMS_NAMESPACE,
                        self.session_id,
                        last.key,
                        {"items": items[:-1]},
                        expected_version=last.version,
                    )
            except ConflictError:
                continue
            await self._new_pops_token()
            return items[-1] if items else None

    async def _new_pops_token(self) -> None:
        doc = {"token": uuid.uuid4().hex}
        try:
            await self.store.update_record(POPS_NAMESPACE, self.session_id, POPS_KEY, doc)
        except RecordNotFoundError:
            with contextlib.suppress(ConflictError):
                await self.store.add_record(POPS_NAMESPACE, self.session_id, POPS_KEY, doc)
                return
            await self.store.update_record(POPS_NAMESPACE, self.session_id, POPS_KEY, doc)

    async def clear_session(self) -> None:
        await self.store.delete_session(ITEMS_NAMESPACE, self.session_id)
        await self._new_pops_token()
        # the threads the session's filter ran on too: ``<id>:run`` (a reshaped input) and ``<id>:<agent>``,
        # ``<id>:run:<agent>`` (a sub-agent's calls); their summaries and originals are this conversation's
        threads = {self.session_id, f"{self.session_id}:run"}
        if self._filter is not None:
            threads.update(t for t in self._filter._agents if t.startswith(f"{self.session_id}:"))
        for thread in sorted(threads):
            await self.window.adelete_thread(thread)
        self._served, self._summary = [], None

    async def aclose(self) -> None:
        if self._owns_store:
            await self.store.close()


def _settings_limit(settings: Any) -> int | None:
    """The ``limit`` of a ``SessionSettings`` or of the dict the SDK also accepts in its place."""
    limit = settings.get("limit") if isinstance(settings, dict) else getattr(settings, "limit", None)
    if limit is not None and not isinstance(limit, int):
        raise ConfigurationError(f"session_settings.limit must be an int or None, got {limit!r}")
    return limit


def _call_keys(items: Sequence[Any]) -> set[Any]:
    """The ids an output may answer among ``items``: each non-output item's ``call_id`` and ``id``."""
    return {
        key
        for i in items
        if isinstance(i, dict) and i.get("type") not in OUTPUT_KINDS
        for key in (i.get("call_id"), i.get("id"))
        if key is not None
    }


def _without_orphan_outputs(view: list[Any]) -> list[Any]:
    """``view`` without the tool outputs whose call is not in it (``view`` itself when there are none)."""
    calls = _call_keys(view)

    def orphan(item: Any) -> bool:
        return isinstance(item, dict) and item.get("type") in OUTPUT_KINDS and _answers(item) not in calls

    kept = [i for i in view if not orphan(i)]
    return kept if len(kept) < len(view) else view


def _answers(output: dict[str, Any]) -> Any:
    """The call id a tool output answers (``call_id``; a local shell output names its call by ``id``)."""
    return output.get("call_id") or output.get("id")


def _without_boundary_ids(view: list[Any]) -> list[Any]:
    """``view`` as the SDK sends a history a limit cut: the assistant messages before the first reasoning item
    or input of the user's lose their ``msg_`` id (their reasoning may be cut off)."""
    out = list(view)
    for index, item in enumerate(out):
        if not isinstance(item, dict) or item.get("type") == "reasoning":
            break
        if item.get("role") in ("user", "developer", "system"):
            break
        message = item.get("type") == "message" and item.get("role") == "assistant"
        if message and str(item.get("id", "")).startswith("msg_"):
            out[index] = {k: v for k, v in item.items() if k != "id"}
    return out


def _record_items(doc: dict[str, Any]) -> list[dict[str, Any]]:
    """The items of one stored record (a batch; records written before batches hold one ``item``)."""
    items = doc.get("items")
    if isinstance(items, list):
        return items
    return [doc["item"]]


__all__ = [
    "ITEMS_NAMESPACE",
    "POPS_NAMESPACE",
    "latest_items",
    "WindowkeeperInputFilter",
    "WindowkeeperSession",
    "agent_tool_schemas",
    "input_filter",
]
