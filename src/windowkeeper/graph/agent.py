"""`Agent`: the graph node that calls a model, with the graph's context manager applied first.

With ``trim_context=True`` the agent hands the state to the graph's manager before every model call and keeps the
trimmed state (so a summary is made once, not again on every call). The request itself comes from
`windowkeeper.prompt.assemble`, the same assembly the managers count: the system text holds the agent's system
prompt, the state's system messages, the running summary and the scratchpad (each labelled), never a user or
assistant turn.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any

from .._request_contract import RequestCounting
from ..errors import ConfigurationError, GraphError
from ..llm.client import LLMClient, LLMRequest, check_api_style
from ..prompt import SUMMARY_HEADER, AssembledPrompt, assemble, count_request
from ..state import AgentState, add_messages
from ..tokenizing.calibration import feed_calibration
from ..tokens import TokenCounter
from .injection import Resolver
from .runtime import RunContext
from .tool_node import ToolNode

logger = logging.getLogger(__name__)

NO_MANAGER_WARNING = "trim_context is enabled but no context manager is available"
SUMMARY_HEADING = SUMMARY_HEADER
"""The summary header (an alias of `windowkeeper.prompt.SUMMARY_HEADER`, where the text is defined)."""


def manager_counter(manager: object) -> object:
    """The counter a manager prices with, by the contract (None for a manager that only trims)."""
    return manager.counter if isinstance(manager, RequestCounting) else None


def _prompt_text(system_prompt: str | Sequence[Mapping[str, Any]] | None) -> str | None:
    """One system text from a string or a list of ``{"role": "system", "content": ...}`` dicts."""
    if system_prompt is None:
        return None
    if isinstance(system_prompt, str):
        return system_prompt or None
    parts: list[str] = []
    for index, item in enumerate(system_prompt):
        if not isinstance(item, Mapping):
            raise ConfigurationError(
                f"system_prompt[{index}] is {type(item).__name__}; use a string or dicts like "
                "{'role': 'system', 'content': '...'}",
            )
        content = item.get("content", item.get("text"))
        if isinstance(content, str):
            parts.append(content)
        elif isinstance(content, list):
            parts.extend(str(piece.get("text", "")) if isinstance(piece, Mapping) else str(piece) for piece in content)
        else:
            raise ConfigurationError(f"system_prompt[{index}] has no text 'content'")
    text = "\n\n".join(p for p in parts if p)
    return text or None


class Agent:
    """A model-calling node on the `windowkeeper.llm` layer.

    ``client`` (any `LLMClient`, e.g. a `ScriptedClient` offline) wins over ``model``/``provider``; otherwise a
    client is created on first use, so building a graph needs no API key. ``counter`` prices the zones that
    `assemble` reports (the exact shared counter by default); it never changes what is sent.
    """

    def __init__(
        self,
        model: str | None = None,
        provider: str | None = None,
        system_prompt: str | Sequence[Mapping[str, Any]] | None = None,
        tool_node: ToolNode | None = None,
        trim_context: bool = False,
        client: LLMClient | None = None,
        api_style: str = "responses",
        base_url: str | None = None,
        api_key: str | None = None,
        max_output_tokens: int | None = None,
        temperature: float | None = None,
        counter: TokenCounter | None = None,
    ) -> None:
        if client is None and not model:
            raise ConfigurationError("Agent needs model='...' (e.g. 'gpt-4o-mini') or client=<LLMClient>")
        if tool_node is not None and not isinstance(tool_node, ToolNode):
            raise ConfigurationError(f"tool_node must be a ToolNode, got {type(tool_node).__name__}")
        if max_output_tokens is not None and max_output_tokens <= 0:
            raise ConfigurationError(f"max_output_tokens must be positive or None, got {max_output_tokens}")
        self.model = model
        self.provider = provider
        self.system_prompt = _prompt_text(system_prompt)
        self.tool_node = tool_node
        self.trim_context = trim_context
        self.api_style = check_api_style(api_style)
        self.base_url = base_url
        self.api_key = api_key
        self.max_output_tokens = max_output_tokens
        self.temperature = temperature
        self.counter = counter
        self._client = client
        self._checked_managers: set[int] = set()

    @property
    def client(self) -> LLMClient:
        if self._client is None:
            from ..llm import create_client  # the provider SDKs load only when a real model is used

            assert self.model is not None
            self._client = create_client(
                self.model,
                self.provider,
                api_style=self.api_style,
                base_url=self.base_url,
                api_key=self.api_key,
            )
        return self._client

    async def aclose(self) -> None:
        """Release the client's connections for the running event loop (a no-op for clients without any)."""
        if self._client is None:
            return
        close = getattr(self._client, "aclose", None)
        if close is not None:
            await close()

    def check_graph(self, resolver: Resolver, *, owner: str, state_cls: type[AgentState]) -> None:
        if self.tool_node is not None:
            self.tool_node.check_graph(resolver, owner=owner, state_cls=state_cls)

    def assemble(self, state: AgentState) -> AssembledPrompt:
        """The prompt of one call from an (already trimmed) state, with the tokens of each zone (``counter``)."""
        return assemble(
            state,
            system_prompt=self.system_prompt,
            tools=self.tool_node.tool_specs() if self.tool_node is not None else None,
            counter=self.counter,
        )

    def build_request(self, state: AgentState) -> LLMRequest:
        """The request for one call from an (already trimmed) state: exactly what `assemble` counts."""
        return self.assemble(state).to_request(self.max_output_tokens, self.temperature)

    def _check_manager_counts(self, manager: object) -> None:
        """Warn once per manager when a budget manager is not told the system prompt and tools this agent sends.

        `TokenBudgetContextManager` counts ``system_prompt`` and ``tools`` only when it is given them; otherwise
        the request is larger than its budget by their size.
        """
        if id(manager) in self._checked_managers:
            return
        self._checked_managers.add(id(manager))
        counted = manager.counted_request() if isinstance(manager, RequestCounting) else None
        if counted is None:
            return
        counted_prompt, counted_tools = counted
        sent_tools = self.tool_node.tool_specs() if self.tool_node is not None else []
        if counted_prompt != self.system_prompt or counted_tools != sent_tools:
            logger.warning(
                "%s counts system_prompt=%s and %d tool schema(s) but the agent sends system_prompt=%s and %d; "
                "pass the agent's system prompt and tool_node.tool_specs() as the manager's system_prompt= and "
                "tools= so its budget counts what is sent",
                type(manager).__name__,
                "set" if counted_prompt else "None",
                len(counted_tools),
                "set" if self.system_prompt else "None",
                len(sent_tools),
            )

    async def arun_node(self, state: AgentState, run: RunContext) -> object:
        if self.trim_context:
            manager = run.context_manager
            if manager is None:
                logger.warning(NO_MANAGER_WARNING)
            else:
                self._check_manager_counts(manager)
                trimmed = await manager.atrim_context(state)
                if not isinstance(trimmed, AgentState):
                    raise GraphError(
                        f"node {run.node!r}: {type(manager).__name__}.atrim_context returned "
                        f"{type(trimmed).__name__}; a context manager must return the state",
                    )
                state = trimmed
        request = self.build_request(state)
        response = await self.client.acomplete(request)
        usages = response.message.usages
        # estimated counters (Anthropic, Gemini, ...) learn the provider's real sizes from every reply
        feed_calibration(
            (manager_counter(run.context_manager), self.counter),
            usages.prompt_tokens if usages is not None else None,
            lambda base: count_request(request, base),
        )
        reply = response.message  # already an assistant reply with its calls in both forms (`LLMResponse`)
        reply.metadata.setdefault("node", run.node)
        state.context = add_messages(state.context, [reply])
        return state
