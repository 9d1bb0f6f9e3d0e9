"""What the LangChain middleware and the LangGraph hook share: the thread id of the running graph, tool schemas for
counting, and turning a `FitResult` back into LangChain messages that reuse the caller's own objects.

Unchanged messages are handed back as the very objects the host holds (found by their LangChain ``id``), or, for
a message without an id (a custom graph whose ``messages`` channel is a plain list), as an equal copy of the one it
was read from, so provider-specific fields windowkeeper does not model (``additional_kwargs``,
``response_metadata``, ``artifact``, an image's ``detail``) still reach the chat model; only messages the manager
changed (pointers) are written anew. The host's own system messages go out as they came too (see `managed`).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping, Sequence
from operator import attrgetter, is_, itemgetter
from typing import Any

from .._cache import LRUCache, shared_prefix
from ..context.pointers import offloaded
from ..errors import MissingDependencyError
from ..llm.formats import to_langchain
from ..messages import Message
from ..prompt.sections import SECTION_SEPARATOR, join_sections, scratchpad_section, summary_section
from ._formats import system_text
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


_SCHEMAS: LRUCache[tuple[int, bool], tuple[Any, dict[str, Any]]] = LRUCache(256)
"""Schemas of the tool objects seen last, by identity (the tool held, so its id stays its own): a ``create_agent``
loop hands the same tools to every model call, and LangChain builds a schema from the tool's pydantic model each
time it is asked."""


def tool_schemas(tools: Sequence[Any] | None, *, strict: bool = False) -> list[dict[str, Any]] | None:
    """LangChain tools (BaseTool objects or dicts) as the OpenAI function schemas a chat model sends, for counting;
    ``strict`` as a model bound with ``strict=True`` sends them (every property required, no other allowed)."""
    if not tools:
        return None
    from langchain_core.utils.function_calling import convert_to_openai_tool

    out: list[dict[str, Any]] = []
    for tool in tools:
        cacheable = not isinstance(tool, Mapping)  # a dict may be edited between calls; a tool object is not
        known = _SCHEMAS.get((id(tool), strict)) if cacheable else None
        if known is not None and known[0] is tool:
            out.append(known[1])
            continue
        try:
            schema = convert_to_openai_tool(tool, strict=True) if strict else convert_to_openai_tool(tool)
        except (TypeError, ValueError) as exc:
            logger.debug("tool %r has no OpenAI schema (%s); counting its repr", tool, exc)
            schema = {"tool": repr(tool)}
        if cacheable:
            _SCHEMAS.put((id(tool), strict), (tool, schema))
        out.append(schema)
    return out


def request_schemas(response_format: Any, model: Any, tools: Sequence[Any] | None) -> list[dict[str, Any]] | None:
    """Every schema a ``create_agent`` model call sends besides its messages: the request's tools and the
    structured-output schemas the host adds after the middleware ran (`output_schemas`), in the shape the host
    binds them (strict tools beside a native response format on an OpenAI-compatible Chat Completions model)."""
    native = _sent_natively(response_format, model, tools)
    strict = native and _openai_chat_completions(model)
    schemas = output_schemas(response_format, model, tools, native=native)
    return [*(tool_schemas(tools, strict=strict) or ()), *schemas] or None


_OUTPUT: LRUCache[tuple[int, bool, int], tuple[Any, Any, list[dict[str, Any]]]] = LRUCache(64)
"""The schemas of the response formats seen last, by identity, by how the schema is sent and by the model that
sends it: ``create_agent`` hands the same strategy object and model to every model call, and a schema's JSON is
rebuilt from its pydantic model (and reshaped by the model) each time it is asked for."""


def output_schemas(
    response_format: Any, model: Any, tools: Sequence[Any] | None, *, native: bool | None = None
) -> list[dict[str, Any]]:
    """The structured-output schemas ``create_agent`` adds to a request after every ``wrap_model_call`` has run,
    so a middleware never finds them in ``request.tools`` and would plan the request without their tokens: a
    `ToolStrategy`'s output tools (as the OpenAI function schemas a chat model sends), or a `ProviderStrategy`'s
    ``response_format``. A bare schema or an `AutoStrategy` is sent whichever way LangChain picks for ``model``
    (``native``: `_sent_natively`'s answer, when the caller already asked it)."""
    if response_format is None:
        return []
    from langchain.agents.structured_output import AutoStrategy, OutputToolBinding, ProviderStrategy, ToolStrategy

    if native is None:
        native = _sent_natively(response_format, model, tools)
    key = (id(response_format), native, id(model))
    known = _OUTPUT.get(key)
    if known is not None and known[0] is response_format and known[1] is model:
        return known[2]
    schema = response_format.schema if isinstance(response_format, AutoStrategy) else response_format
    if isinstance(response_format, ToolStrategy):
        strategy: ToolStrategy[Any] | ProviderStrategy[Any] = response_format
    elif isinstance(response_format, ProviderStrategy) or native:
        strategy = response_format if isinstance(response_format, ProviderStrategy) else ProviderStrategy(schema)
    else:
        strategy = ToolStrategy(schema)
    if isinstance(strategy, ProviderStrategy):
        out = [_response_format_as_sent(strategy.to_model_kwargs(), model, strict=_openai_chat_completions(model))]
    else:
        out = tool_schemas([OutputToolBinding.from_schema_spec(spec).tool for spec in strategy.schema_specs]) or []
    _OUTPUT.put(key, (response_format, model, out))
    return out


def _sent_natively(response_format: Any, model: Any, tools: Sequence[Any] | None) -> bool:
    """Whether ``create_agent`` sends ``response_format`` as the model's native structured output (a
    `ProviderStrategy`, or a bare schema the model answers natively) rather than as an output tool. Beside a native
    format on an OpenAI-compatible Chat Completions model it binds the request's tools with ``strict=True``, and a
    strict tool schema is longer (every property required, ``additionalProperties``)."""
    if response_format is None:
        return False
    from langchain.agents.structured_output import ProviderStrategy, ToolStrategy

    if isinstance(response_format, (ToolStrategy, ProviderStrategy)):
        return isinstance(response_format, ProviderStrategy)
    return _native_structured_output(model, tools)


def _openai_chat_completions(model: Any) -> bool:
    """Whether ``create_agent`` takes ``model`` for an OpenAI-compatible Chat Completions model (its own private
    test; another LangChain without it is taken to bind as for any other model)."""
    try:
        from langchain.agents.factory import _is_openai_compatible_model
    except ImportError:  # pragma: no cover - another LangChain
        return False
    return bool(_is_openai_compatible_model(model)) and not getattr(model, "use_responses_api", False)


def _response_format_as_sent(kwargs: Mapping[str, Any], model: Any, *, strict: bool) -> dict[str, Any]:
    """A `ProviderStrategy`'s ``response_format`` in the shape ``model`` sends it. ``create_agent`` binds it with
    the model's own ``bind_tools`` (``strict`` for an OpenAI-compatible Chat Completions model), and a chat model
    may reshape it there: ``ChatOpenAI`` moves the description beside the name, drops the title and adds the
    strict flag. The same binding, done once per strategy and model (no request is made), gives what is sent; a
    model that cannot bind is counted by the strategy's dict."""
    plain = dict(kwargs["response_format"])
    bind = getattr(model, "bind_tools", None)
    if not callable(bind):
        return plain
    try:
        bound = bind([], **kwargs, **({"strict": True} if strict else {}))
    except Exception as exc:  # any model's binding: NotImplementedError, a validation error...
        logger.debug("model %r did not bind the response format (%s); counting it as the strategy wrote it", model, exc)
        return plain
    shaped = getattr(bound, "kwargs", {}).get("response_format")
    return dict(shaped) if isinstance(shaped, Mapping) else plain


def _native_structured_output(model: Any, tools: Sequence[Any] | None) -> bool:
    """Whether ``create_agent`` sends a bare schema as the model's native structured output (else as a tool). Its
    own test is private: a LangChain without it is taken to send a tool, the two costing about the same."""
    try:
        from langchain.agents.factory import _supports_provider_strategy
    except ImportError:  # pragma: no cover - another LangChain
        return False
    try:
        return bool(_supports_provider_strategy(model, tools=list(tools or ())))
    except (AttributeError, TypeError, ValueError):  # pragma: no cover - a signature of another LangChain
        return False


_WRITTEN: LRUCache[int, tuple[Any, str, list[Any]]] = LRUCache(4096)
"""LangChain messages written for the messages windowkeeper made (pointers, by identity, with the fingerprint they
were written at): a pointer stays in the view for many calls and is the same message object on each."""


class _Carried:
    """What `view_messages` answered on a thread's last call, kept so the next call patches it for what changed.

    No original is held (a LangGraph checkpoint is read back as new objects at each turn, and holding the last
    turn's would leave their freeing to this hook): the answer is a plan over two sources, the originals at
    ``found`` (by index in the caller's list) and the messages written here (``written``), so each call picks
    its own objects in C. ``plan[k]`` says where item ``k`` of the answer comes from: ``j >= 0`` the ``j``-th
    found original, ``-(j + 1)`` the ``j``-th written item.

    The originals were read from the end, as far back as every message asked for (the window ``lo:seen``, its
    LangChain ids in ``ids``, each id's last index in ``last``), so a message is answered with the last original
    of its id; ``wanted`` holds every id a message asked for (found or not: when one was not, the window is the
    whole list). ``types`` are the found originals' classes and ``systems`` the answer's system messages (what
    `managed` moves)."""

    __slots__ = (
        "found",
        "ids",
        "last",
        "lo",
        "messages",
        "plan",
        "seen",
        "systems",
        "types",
        "wanted",
        "written",
    )

    def __init__(self, messages: Sequence[Message], originals: Sequence[Any]) -> None:
        # the pointers found in C (`offloaded`): a Python test per message, twice, was most of this pass
        pointers = {id(x) for x in offloaded(messages)}
        wanted = {m.message_id for m in messages if id(m) not in pointers}
        seen = lo = len(originals)
        reversed_ids: list[Any] = []
        if wanted:
            # from the end, only until every id the view needs is found: the view is mostly the history's tail
            found: set[Any] = set()
            for k in range(seen - 1, -1, -1):
                lc_id = getattr(originals[k], "id", None)
                reversed_ids.append(lc_id)
                lo = k
                if lc_id and lc_id in wanted and lc_id not in found:
                    found.add(lc_id)
                    if len(found) == len(wanted):
                        break
        self.messages: list[Message] = []
        self.lo, self.seen = lo, seen
        self.ids: list[Any] = reversed_ids[::-1]
        self.last: dict[Any, int] = dict(zip(self.ids, range(lo, seen), strict=True))
        self.wanted: set[Any] = set()
        self.found: list[int] = []
        self.types: list[type] = []
        self.written: list[Any] = []
        self.plan: list[int] = []
        self.systems: list[int] = []
        self._add(messages, originals, pointers)

    def extend(self, messages: Sequence[Message], originals: Sequence[Any]) -> bool:
        """Patch this answer for ``messages`` and ``originals`` when they continue its own: the same messages
        then new ones, originals of the same ids in the window then new ones (none of an id a message asked
        for), each new message's id in the window or among the new originals, or in none when the window is the
        whole list; False, and nothing changed, otherwise. The cost is the new messages', the new originals' and
        a read of the window's ids in C."""
        n, seen, lo = len(self.messages), self.seen, self.lo
        if len(messages) < n or len(originals) < seen or shared_prefix(self.messages, messages) != n:
            return False
        if _ids(originals[lo:seen]) != self.ids:
            return False
        new_ids = _ids(originals[seen:])
        wanted, last = self.wanted, self.last
        if any(i and i in wanted for i in new_ids):
            return False  # a new original an earlier message would now be answered with (ids repeat in a plain list)
        tail = messages[n:]
        pointers = {id(x) for x in offloaded(tail)} if tail else set()
        if lo:
            arrived = set(new_ids)
            for message in tail:
                mid = message.message_id
                if id(message) not in pointers and mid and mid not in last and mid not in arrived:
                    return False  # its original may be before the window (or nowhere): read further back
        last.update(zip(new_ids, range(seen, seen + len(new_ids)), strict=True))
        self.ids.extend(new_ids)
        self.seen = len(originals)
        self._add(tail, originals, pointers)
        return True

    def _add(self, messages: Sequence[Message], originals: Sequence[Any], pointers: set[int]) -> None:
        """Answer ``messages`` (the view's new ones) after the rest, from ``originals`` (this call's)."""
        if not messages:
            return
        last, wanted, found, written, plan, systems = (
            self.last,
            self.wanted,
            self.found,
            self.written,
            self.plan,
            self.systems,
        )
        for message in messages:
            if id(message) not in pointers:
                mid = message.message_id
                wanted.add(mid)
                hit = last.get(mid) if mid else None  # an original without an id answers nothing
                if hit is not None:
                    original = originals[hit]
                    if _is_system(original):
                        systems.append(len(plan))
                    plan.append(len(found))
                    found.append(hit)
                    self.types.append(type(original))
                    continue
            for item in written_alone(message):
                if _is_system(item):
                    systems.append(len(plan))
                plan.append(-len(written) - 1)
                written.append(item)
        self.messages.extend(messages)

    def answer(self, originals: Sequence[Any]) -> tuple[list[Any], list[int]]:
        """``(items, systems)``: the answer with ``originals``' own objects (this call's), and the indices of its
        system messages."""
        picked = _pick(originals, self.found)
        out = _pick([*picked, *reversed(self.written)], self.plan)
        if not all(map(is_, map(type, picked), self.types)):
            # a found original of another class than when it was found (a host's list edited in place): its
            # system messages are read again
            return out, [k for k, item in enumerate(out) if _is_system(item)]
        return out, self.systems


def _pick(items: Sequence[Any], indices: Sequence[int]) -> list[Any]:
    """``[items[i] for i in indices]``, in C."""
    if len(indices) > 1:
        return list(itemgetter(*indices)(items))
    return [items[i] for i in indices]


def _ids(originals: Sequence[Any]) -> list[Any]:
    """The LangChain ``id`` of each of ``originals`` (None where there is none), read in C when every one has the
    attribute."""
    try:
        return list(map(_ID, originals))
    except AttributeError:
        return [getattr(o, "id", None) for o in originals]


_ID = attrgetter("id")

_CARRIED: LRUCache[str, _Carried] = LRUCache(256)
"""`view_messages`'s last answer per thread id (checked by identity and ids before it is used, so a thread id
shared by two windows or hosts costs a full answer, never a wrong one)."""


def view_messages(result: FitResult, originals: Sequence[Any]) -> list[Any]:
    """The managed conversation (without the system zone) as LangChain messages, reusing ``originals`` for every
    message left unchanged: the object itself when found by its LangChain ``id``, else the equal copy the format
    writes for a message unchanged since it was read (its source kept), so an id-less message is not rebuilt
    from windowkeeper's model of it (which has no ``artifact``, no ``additional_kwargs``).

    A message is answered with the last original of its id. When the view and the originals only grew at the end
    since the thread's last call (the common case: a new user turn, a tool result), the last answer is carried
    and only the new messages are looked up (`_Carried`): a call costs what is new, not what its view spans."""
    return _answer(result, originals)[0]


_CARRIED_LOCK = threading.Lock()
"""`_Carried.extend` patches an answer in place: two threads calling for one thread id at once take turns."""


def _answer(result: FitResult, originals: Sequence[Any]) -> tuple[list[Any], list[int]]:
    messages = result.prompt.messages
    with _CARRIED_LOCK:
        carried = _CARRIED.get(result.thread_id)
        if carried is None or not carried.extend(messages, originals):
            carried = _Carried(messages, originals)
            _CARRIED.put(result.thread_id, carried)
        return carried.answer(originals)


def written_alone(message: Message) -> list[Any]:
    """``to_langchain([message])``, written once per message object and fingerprint (`_WRITTEN`): the pointers and
    the host's own system messages stay in the view, the same objects, for many calls."""
    fingerprint = message.fingerprint()
    known = _WRITTEN.get(id(message))
    if known is None or known[0] is not message or known[1] != fingerprint:
        known = (message, fingerprint, to_langchain([message], passthrough=True))
        _WRITTEN.put(id(message), known)
    return known[2]


def accepts_mid_system(model: Any) -> bool:
    """Whether ``model`` (a chat model, or a binding of one) takes a system message after the conversation began.

    OpenAI's chat models do (``langchain_openai``); ChatAnthropic raises on system messages that are not
    consecutive at the front, and other providers are not known to accept them, so for every other model (and
    for None) the host's system messages are sent leading."""
    seen = 0
    while model is not None and "bound" in getattr(model, "__dict__", {}) and seen < 8:  # RunnableBinding
        model, seen = model.__dict__["bound"], seen + 1
    return type(model).__module__.split(".", 1)[0] == "langchain_openai"


def _is_system(message: Any) -> bool:
    return getattr(message, "type", None) == "system"


_ZONES: LRUCache[str, tuple[list[Message], list[Any], list[int]]] = LRUCache(256)
"""Per thread id, the laid-out messages of the last call with a system zone, their written items and the indices
of those that are system messages: the next call's list is mostly the same messages then a few new ones."""


def _zone_written(thread_id: str, laid: list[Message]) -> tuple[list[Any], list[int]]:
    """``(written, systems)``: each of ``laid`` written alone (`written_alone`), and the indices of the system
    messages among them; the last call's items reused when ``laid`` starts with the same message objects."""
    known = _ZONES.get(thread_id)
    if known is not None and len(laid) >= len(known[0]) and shared_prefix(known[0], laid) == len(known[0]):
        written = list(known[1])
        start = len(written)
        written.extend(item for m in laid[len(known[0]) :] for item in written_alone(m))
        systems = [*known[2], *(k for k in range(start, len(written)) if _is_system(written[k]))]
    else:
        written = [item for m in laid for item in written_alone(m)]
        systems = [k for k, item in enumerate(written) if _is_system(item)]
    _ZONES.put(thread_id, (list(laid), written, systems))
    return written, systems


def managed(
    result: FitResult, originals: Sequence[Any], own: Any = None, *, in_place: bool = False
) -> tuple[Any, list[Any]]:
    """``(system, messages)`` to send for ``result``: ``[system, *messages]`` (``system`` left out when None) is
    what the model gets, each system message once.

    ``own`` is the host's system prompt: ``create_agent``'s ``request.system_message`` (kept apart from
    ``originals``, passed to the fit as ``system=``), or the hook's state's one system message when it leads and
    the system text opens with it alone; it comes back as ``system``, as it is or with the summary after its
    content (see `system_message`). System messages of ``originals`` (a ``SystemMessage``
    in the agent's state) go out as they came, not joined into one new text: as `Window.fit` writes them, with
    the summary a system message of windowkeeper's after the leading ones. One said mid-conversation stays where
    it was with ``in_place`` (a model that accepts it, see `accepts_mid_system`); without it every system message
    leads, consecutive, the summary after them (ChatAnthropic raises on any other order).

    Only when the view holds system messages of the host's is the result written (`FitResult.messages`): the
    common case (a system prompt, the state without system messages) costs what `view_messages` costs."""
    prompt = result.prompt
    own_text = bool(own is not None and system_text("langchain", own))
    if len(prompt.system_parts) <= int(own_text):
        return system_message(result, own), view_messages(result, originals)
    # what `FitResult.messages` holds, written message by message: the host's system messages from the memo, the
    # rest of the view's only to count them, as `view_messages` gives them (a full write of the view, on every
    # call, was O(view): 70 ms a call at a 100k-token budget)
    laid = result._laid_out() if result._laid_out is not None else None
    if laid is None:
        written = list(result.messages)
        systems = [k for k, item in enumerate(written) if _is_system(item)]
    else:
        written, systems = _zone_written(result.thread_id, laid)
    # the written conversation as `view_messages` gives it (the host's own objects where it has ids): one item per
    # item, both written per message by the same converter
    plain, plain_systems = _answer(result, originals)
    if len(plain) == len(written) - len(systems):
        # ``written`` with its other items replaced, in order, by ``plain``'s (its system items where they were)
        if systems == list(range(len(systems))):
            written = [*written[: len(systems)], *plain]
        else:
            rest = iter(plain)
            system_at = set(systems)
            written = [item if k in system_at else next(rest) for k, item in enumerate(written)]
        if plain_systems:  # a host's system message answered for a message of the view (seldom): found anew
            systems = [k for k, item in enumerate(written) if _is_system(item)]
    else:
        written = list(written)
    if own_text and written and _is_system(written[0]) and written[0].content == prompt.system_parts[0]:
        written[0] = own  # the head the window wrote from ``own``'s text: the host's message itself
        if not _is_system(own):
            systems = systems[1:]
    if not in_place:
        tail = join_sections([summary_section(prompt.summary), scratchpad_section(prompt.scratchpad)])
        system_items = [written[k] for k in systems]
        mine = [m for m in system_items if tail and m is not own and m.content == tail]
        hosts = [m for m in system_items if not any(m is x for x in mine)]
        if systems == list(range(len(systems))):
            rest_items = written[len(systems) :]
        else:
            system_at = set(systems)
            rest_items = [item for k, item in enumerate(written) if k not in system_at]
        written = [*hosts, *mine, *rest_items]
    if own_text and written and _is_system(written[0]):
        return written[0], written[1:]
    return None, written


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


_SYSTEM_MESSAGES: LRUCache[str, Any] = LRUCache(256)
"""``SystemMessage`` by text: the system text is the same for many calls of a thread (until the summary moves)."""


def system_message(result: FitResult, own: Any = None) -> Any:
    """The system text (prompt, summary, scratchpad) as one ``SystemMessage``, or None.

    ``own`` is the caller's system message when the system text starts with it alone (the middleware's
    ``request.system_message``, the hook's one system message of the state): it is handed back as it is when
    windowkeeper adds nothing, and otherwise as a copy with the summary and scratchpad sections after its content
    (a text block after its blocks), so its id, ``additional_kwargs`` and content blocks (an Anthropic
    ``cache_control`` on the system prompt) reach the model. A new message of the whole text was sent before."""
    prompt = result.prompt
    text = prompt.system
    if own is not None and len(prompt.system_parts) == 1:
        tail = join_sections([summary_section(prompt.summary), scratchpad_section(prompt.scratchpad)])
        if text == join_sections([prompt.system_parts[0], tail]):
            content = own.content
            if not tail:
                return own
            if isinstance(content, str):
                return own.model_copy(update={"content": f"{content}{SECTION_SEPARATOR}{tail}"})
            if isinstance(content, list):
                return own.model_copy(update={"content": [*content, {"type": "text", "text": tail}]})
    if not text:
        return None
    known = _SYSTEM_MESSAGES.get(text)
    if known is not None and known.content == text:
        return known
    from langchain_core.messages import SystemMessage

    made = SystemMessage(content=text)
    _SYSTEM_MESSAGES.put(text, made)
    return made


__all__ = [
    "DEFAULT_THREAD",
    "accepts_mid_system",
    "current_thread_id",
    "managed",
    "reported_input_tokens",
    "require",
    "system_message",
    "thread_id_from_config",
    "tool_schemas",
    "view_messages",
]
