"""The `Summarizer` protocol, and `as_summarizer` to accept whatever a user hands a context manager.

Context managers only ever ``await summarizer.summarize(...)``. Users may bring an object with a ``summarize``
method (sync or async) or a plain function: ``fn(messages)`` or ``fn(messages, previous_summary)``, sync or
async, optionally also taking ``max_tokens`` / ``instructions`` by keyword. The adapter inspects the signature
once, at construction, so a bad argument fails when the manager is built rather than at the first trim.

Synchronous user code runs in a daemon worker thread (`run_in_daemon`), never on the event loop: a slow one does
not stall other work, and a hung one can be abandoned by the caller's timeout (see `windowkeeper.summarize.failsafe`).
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Callable, Sequence
from typing import Any, Protocol, runtime_checkable

from .._bridge import is_async_callable, run_in_daemon
from ..errors import ConfigurationError
from ..messages import Message

logger = logging.getLogger(__name__)


@runtime_checkable
class Summarizer(Protocol):
    """Turns old messages (plus the summary made so far) into a text summary of at most ``max_tokens``."""

    async def summarize(
        self,
        messages: Sequence[Message],
        *,
        previous_summary: str | None = None,
        max_tokens: int = 600,
        instructions: str | None = None,
    ) -> str: ...


async def _result_text(value: Any, source: str) -> str:
    """What a user's summarizer produced, awaited when it was async; ``None`` means nothing to add."""
    if inspect.isawaitable(value):
        value = await value
    if value is None:
        return ""
    if not isinstance(value, str):
        raise TypeError(f"summarizer {source} returned {type(value).__name__}; it must return a str")
    return value


class CallableSummarizer:
    """Adapts a plain function (sync or async) to the `Summarizer` protocol."""

    def __init__(self, fn: Callable[..., Any]) -> None:
        self.fn = fn
        self.name = getattr(fn, "__qualname__", None) or type(fn).__name__
        self._pass_previous, self._keywords = self._inspect(fn)
        self._is_async = is_async_callable(fn)

    def __repr__(self) -> str:
        return f"CallableSummarizer({self.name})"

    @property
    def takes_previous_summary(self) -> bool:
        """Whether the wrapped callable accepts the earlier summary (``fn(messages, previous_summary)``)."""
        return self._pass_previous

    @staticmethod
    def _inspect(fn: Callable[..., Any]) -> tuple[bool, frozenset[str]]:
        try:
            signature = inspect.signature(fn)
        except (TypeError, ValueError):
            return True, frozenset()
        params = list(signature.parameters.values())
        positional = [
            p for p in params if p.kind in (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
        ]
        var_positional = any(p.kind is inspect.Parameter.VAR_POSITIONAL for p in params)
        var_keyword = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params)
        if not positional and not var_positional:
            raise ConfigurationError(
                f"summarizer callable {fn!r} takes no positional argument; it must accept fn(messages) "
                "or fn(messages, previous_summary)",
            )
        required = [p for p in positional if p.default is inspect.Parameter.empty]
        if len(required) > 2:
            raise ConfigurationError(
                f"summarizer callable {fn!r} requires {len(required)} positional arguments; it must accept "
                "fn(messages) or fn(messages, previous_summary)",
            )
        pass_previous = len(positional) >= 2 or var_positional
        names = {p.name for p in params if p.kind is not inspect.Parameter.POSITIONAL_ONLY}
        keywords = {"max_tokens", "instructions"} if var_keyword else {"max_tokens", "instructions"} & names
        return pass_previous, frozenset(keywords)

    async def summarize(
        self,
        messages: Sequence[Message],
        *,
        previous_summary: str | None = None,
        max_tokens: int = 600,
        instructions: str | None = None,
    ) -> str:
        args: list[Any] = [list(messages)]
        if self._pass_previous:
            args.append(previous_summary)
        kwargs: dict[str, Any] = {}
        if "max_tokens" in self._keywords:
            kwargs["max_tokens"] = max_tokens
        if "instructions" in self._keywords:
            kwargs["instructions"] = instructions
        value = self.fn(*args, **kwargs) if self._is_async else await run_in_daemon(self.fn, *args, **kwargs)
        return await _result_text(value, self.name)


class MethodSummarizer:
    """Adapts an object whose ``summarize`` method is synchronous; the method runs in a worker thread."""

    def __init__(self, obj: Any) -> None:
        self.obj = obj

    def __repr__(self) -> str:
        return f"MethodSummarizer({self.obj!r})"

    async def summarize(
        self,
        messages: Sequence[Message],
        *,
        previous_summary: str | None = None,
        max_tokens: int = 600,
        instructions: str | None = None,
    ) -> str:
        value = await run_in_daemon(
            self.obj.summarize,
            messages,
            previous_summary=previous_summary,
            max_tokens=max_tokens,
            instructions=instructions,
        )
        return await _result_text(value, f"{type(self.obj).__name__}.summarize")


def as_summarizer(obj: Any) -> Summarizer:
    """Return ``obj`` as a `Summarizer`; raise `ConfigurationError` when it cannot be one."""
    method = getattr(obj, "summarize", None)
    if method is not None and callable(method) and not inspect.isclass(obj):
        if inspect.iscoroutinefunction(method):
            return obj  # type: ignore[no-any-return]
        return MethodSummarizer(obj)
    if callable(obj) and not inspect.isclass(obj):
        return CallableSummarizer(obj)
    raise ConfigurationError(
        f"summarizer must be an object with a summarize(...) method or a callable fn(messages, previous_summary), "
        f"got {type(obj).__name__}: {obj!r}",
    )
