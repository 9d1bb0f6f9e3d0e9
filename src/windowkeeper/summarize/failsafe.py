"""The one fail-safe way every layer calls a summarizer.

A summarizer is somebody else's code, often a network call: it can raise, hang, or answer with nothing. Whatever
it does, the caller (`SummaryContextManager`, `TokenBudgetContextManager`, the three-tier memory) must be able to
leave its context exactly as it was and carry on, so this module guarantees three things:

- **It never raises** (cancellation of the caller excepted). A failure is logged with the reference's wording,
  ``"Summarisation LLM call failed"``, plus the exception, and reported to the caller as the absence of a value.
- **The timeout is real**, for async and sync summarizers alike. An async one is cancelled at the deadline; a
  synchronous one (a plain function, an object with a sync ``summarize``) runs in a daemon worker thread, so the
  event loop stays free, the deadline is kept even if the function never returns, and the abandoned thread holds
  up neither the loop's shutdown nor the interpreter's exit.
- **Timeouts are finite and positive.** ``nan`` used to slip through a ``> 0`` check and silently disable every
  summary; `check_timeout` rejects it (and ``inf``, zero, negatives) with `ConfigurationError`, and managers call
  it at construction so a bad value fails there, not at the first summary.

`guarded_call` is the general form (any callable, any result: the memory's structured summarizer uses it);
`call_summarizer` is the text form context managers use: a `Summarizer`-like object in, stripped text or ``None``.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from .._bridge import is_async_callable, run_in_daemon
from .._validate import check_timeout
from ..messages import Message
from .base import as_summarizer

logger = logging.getLogger(__name__)

T = TypeVar("T")

FAILURE_LOG = "Summarisation LLM call failed"
"""The reference's wording for a failed summary; users grep their logs for it."""


@dataclass(frozen=True)
class Attempt(Generic[T]):
    """The outcome of a guarded call: ``value`` on success, else ``error`` (``"TypeName: message"``)."""

    value: T | None = None
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.error is None


class SummarizerTimeoutError(TimeoutError):
    """A summarizer gave no answer within its timeout (logged as the cause of `FAILURE_LOG`, never raised)."""


async def guarded_call(
    fn: Callable[..., Any],
    /,
    *args: Any,
    timeout: float,
    log: logging.Logger | None = None,
    **kwargs: Any,
) -> Attempt[Any]:
    """Call ``fn(*args, **kwargs)`` with a real ``timeout`` (seconds) and never raise.

    An async ``fn`` is awaited on the loop and cancelled at the deadline. A sync ``fn`` runs in a daemon worker
    thread (the caller's context variables included); if it returns an awaitable, that is awaited too, within the
    same deadline. Exceptions and timeouts are logged as `FAILURE_LOG` (on ``log``, the caller's logger, so a
    user filtering by layer sees them there; with the exception attached) and returned as ``Attempt(error=...)``.
    ``timeout`` must be finite and > 0 (`ConfigurationError` otherwise: that is the caller's bug, not a failure of
    the summarizer).
    """
    log = log or logger
    deadline = check_timeout("timeout", timeout)

    async def attempt() -> Any:
        out = fn(*args, **kwargs) if is_async_callable(fn) else await run_in_daemon(fn, *args, **kwargs)
        if inspect.isawaitable(out):
            out = await out
        return out

    try:
        value = await asyncio.wait_for(attempt(), deadline)
    except TimeoutError:
        timed_out = SummarizerTimeoutError(f"no answer within {deadline:g} s; the call was abandoned")
        log.error(FAILURE_LOG, exc_info=timed_out)
        return Attempt(error=f"{type(timed_out).__name__}: {timed_out}")
    except Exception as exc:
        log.error(FAILURE_LOG, exc_info=exc)
        return Attempt(error=f"{type(exc).__name__}: {exc}")
    return Attempt(value=value)


CONDENSE_DOCUMENT_ID = "windowkeeper:summary-to-condense"


def condense_input(summarizer: Any, summary: str) -> tuple[list[Message], str | None]:
    """The (messages, previous_summary) that ask ``summarizer`` to condense ``summary``.

    A summarizer that takes ``previous_summary`` gets it there with no messages; a plain ``fn(messages)`` never
    sees ``previous_summary``, so it is handed the summary as the one document to condense instead.
    """
    if getattr(summarizer, "takes_previous_summary", True):
        return [], summary
    return [Message.text_message(summary, role="user", message_id=CONDENSE_DOCUMENT_ID, timestamp=None)], None


async def call_summarizer(
    summarizer: Any,
    messages: Sequence[Message],
    *,
    timeout: float,
    previous_summary: str | None = None,
    max_tokens: int = 600,
    instructions: str | None = None,
    log: logging.Logger | None = None,
) -> str | None:
    """The summary text ``summarizer`` makes of ``messages``, stripped; ``None`` when there is none to use.

    ``summarizer`` is anything `as_summarizer` accepts (an object with a sync or async ``summarize``, or a
    function). ``None`` is returned, and logged, when it raises, times out, returns something that is not a
    string, or returns only whitespace; callers then leave their context unchanged. ``log`` is the logger the
    outcome is reported on (the caller's, by default this module's).
    """
    check_timeout("timeout", timeout)
    log = log or logger
    try:
        adapted = as_summarizer(summarizer)
    except Exception as exc:
        log.error(FAILURE_LOG, exc_info=exc)
        return None
    attempt = await guarded_call(
        adapted.summarize,
        list(messages),
        previous_summary=previous_summary,
        max_tokens=max_tokens,
        instructions=instructions,
        timeout=timeout,
        log=log,
    )
    if not attempt.ok:
        return None
    text = attempt.value
    if not isinstance(text, str):
        log.error(FAILURE_LOG, exc_info=TypeError(f"the summarizer returned {type(text).__name__}, not a str"))
        return None
    if not text.strip():
        log.warning("summarizer returned no text; context left unchanged")
        return None
    return text.strip()


__all__ = [
    "CONDENSE_DOCUMENT_ID",
    "FAILURE_LOG",
    "Attempt",
    "SummarizerTimeoutError",
    "call_summarizer",
    "check_timeout",
    "condense_input",
    "guarded_call",
]
