"""An offline `LLMClient` that answers from a script, for tests, demos and benchmarks.

It records every request so a test can assert exactly what a summarizer or agent sent, and it reports token
usage measured with the library's exact offline counter, so budget and calibration code sees realistic numbers
without any network.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Awaitable, Callable, Iterable
from typing import TYPE_CHECKING

from ..blocks import ContentBlock, TextBlock
from ..errors import ConfigurationError, ProviderError
from ..messages import Message, TokenUsages
from .client import LLMRequest, LLMResponse, assistant_message

if TYPE_CHECKING:
    from ..tokens import TokenCounter

logger = logging.getLogger(__name__)

ReplyValue = Message | str
ScriptedReply = Message | str | Callable[[LLMRequest], ReplyValue] | Callable[[LLMRequest], Awaitable[ReplyValue]]


class ScriptedClient:
    """Answers requests with ``replies`` in order, then with ``default`` (or raises `ProviderError` if none).

    A reply is a `Message`, a string (one text block), or a sync/async callable ``(request) -> Message | str``
    that can look at the request (e.g. echo the transcript). A scripted `Message` keeps its ``message_id`` so
    tests can assert exact ids; replies produced by ``default`` always get a fresh id, since a repeated id would
    be deduplicated away by `add_messages`. An exception raised by a callable is wrapped in
    `ProviderError`, like a failing provider call.
    """

    provider = "scripted"

    def __init__(
        self,
        replies: Iterable[ScriptedReply] = (),
        *,
        default: ScriptedReply | None = None,
        model: str = "scripted",
        counter: TokenCounter | None = None,
    ) -> None:
        self._replies: list[ScriptedReply] = list(replies)
        for i, reply in enumerate([*self._replies, *([default] if default is not None else [])]):
            if not isinstance(reply, Message | str) and not callable(reply):
                raise ConfigurationError(
                    f"replies[{i}] must be a Message, a str or a callable(request), got {type(reply).__name__}",
                )
        self.default = default
        self.model = model
        self.requests: list[LLMRequest] = []
        self._counter = counter
        self._position = 0

    @property
    def remaining(self) -> int:
        """Scripted replies not used yet (``default`` not included)."""
        return len(self._replies) - self._position

    def _next(self) -> ScriptedReply:
        if self._position < len(self._replies):
            reply = self._replies[self._position]
            self._position += 1
            return reply
        if self.default is not None:
            return self.default
        raise ProviderError(
            f"ScriptedClient has no reply left after {len(self._replies)} scripted replies; "
            "add more replies or pass default=...",
            provider=self.provider,
        )

    def _get_counter(self) -> TokenCounter:
        if self._counter is None:
            from ..tokens import default_counter

            self._counter = default_counter()
        return self._counter

    async def acomplete(self, request: LLMRequest) -> LLMResponse:
        self.requests.append(request.model_copy(deep=True))
        from_default = self._position >= len(self._replies)
        reply = self._next()
        if callable(reply) and not isinstance(reply, Message | str):
            try:
                produced = reply(request)
                value = await produced if inspect.isawaitable(produced) else produced
            except ProviderError:
                raise
            except Exception as exc:
                raise ProviderError(f"scripted reply callable failed: {exc!r}", provider=self.provider) from exc
        else:
            value = reply
        if not isinstance(value, Message | str):
            raise ProviderError(
                f"scripted reply callable returned {type(value).__name__}; it must return a Message or a str",
                provider=self.provider,
            )
        content: list[ContentBlock] = [TextBlock(text=value)] if isinstance(value, str) else list(value.content)
        draft = assistant_message(content)
        counter = self._get_counter()
        prompt = counter.count_messages(request.messages)
        if request.system:
            prompt += counter.count_text(request.system)
        if request.tools:
            prompt += sum(counter.count_text(str(spec)) for spec in request.tools)
        completion = counter.count_message(draft)
        usages = TokenUsages(prompt_tokens=prompt, completion_tokens=completion, total_tokens=prompt + completion)
        metadata = {"provider": self.provider, "model": self.model}
        if isinstance(value, Message):
            metadata = {**value.metadata, **metadata}
        message = assistant_message(content, usages=usages, metadata=metadata)
        if isinstance(value, Message) and not from_default:
            message = message.model_copy(update={"message_id": value.message_id})
        return LLMResponse(message=message, raw=None)
