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
from collections.abc import Mapping, Sequence
from typing import Any

from .._cache import LRUCache
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


def view_messages(result: FitResult, originals: Sequence[Any]) -> list[Any]:
    """The managed conversation (without the system zone) as LangChain messages, reusing ``originals`` for every
    message left unchanged: the object itself when found by its LangChain ``id``, else the equal copy the format
    writes for a message unchanged since it was read (its source kept), so an id-less message is not rebuilt
    from windowkeeper's model of it (which has no ``artifact``, no ``additional_kwargs``).

    The view is mostly the tail of the history, so ``originals`` are searched from the end, only until every id
    the view needs is found: a call costs what its view spans, not the whole history."""
    messages = result.prompt.messages
    # the pointers found in C (`offloaded`): a Python test per message, twice, was most of this pass
    pointers = {id(m) for m in offloaded(messages)}
    wanted = {m.message_id for m in messages if id(m) not in pointers}
    by_id: dict[Any, Any] = {}
    if wanted:
        for original in reversed(originals):
            lc_id = getattr(original, "id", None)
            if lc_id and lc_id in wanted and lc_id not in by_id:
                by_id[lc_id] = original
                if len(by_id) == len(wanted):
                    break
    out: list[Any] = []
    for message in messages:
        original = by_id.get(message.message_id) if id(message) not in pointers else None
        if original is not None:
            out.append(original)
            continue
        out.extend(written_alone(message))
    return out


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
    written = list(result.messages) if laid is None else [item for m in laid for item in written_alone(m)]
    # the written conversation as `view_messages` gives it (the host's own objects where it has ids): one item per
    # item, both written per message by the same converter
    plain = view_messages(result, originals)
    if len(plain) == sum(1 for m in written if not _is_system(m)):
        rest = iter(plain)
        written = [m if _is_system(m) else next(rest) for m in written]
    if own_text and written and _is_system(written[0]) and written[0].content == prompt.system_parts[0]:
        written[0] = own  # the head the window wrote from ``own``'s text: the host's message itself
    if not in_place:
        tail = join_sections([summary_section(prompt.summary), scratchpad_section(prompt.scratchpad)])
        systems = [m for m in written if _is_system(m)]
        mine = [m for m in systems if tail and m is not own and m.content == tail]
        hosts = [m for m in systems if not any(m is x for x in mine)]
        written = [*hosts, *mine, *(m for m in written if not _is_system(m))]
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
