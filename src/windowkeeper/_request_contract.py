"""What a caller outside the context layer may ask a context manager besides trimming: its counter and what it counts.

The graph runs any object with ``async atrim_context(state)`` and does not import the context layer. Its `Agent`
still needs two facts from a manager that budgets the request: the counter it prices messages with (fed the
provider's reported prompt sizes, so an estimated counter calibrates itself) and the system prompt and tool
schemas its budget counts (the Agent warns when they are not what it sends). `RequestCounting` states both, with
the defaults of a manager that budgets no request, below both layers: `BaseContextManager` inherits it, and the
Agent asks ``isinstance(manager, RequestCounting)`` and calls the contract instead of probing attributes.
"""

from __future__ import annotations

from abc import ABC
from typing import Any


class RequestCounting(ABC):  # noqa: B024 - a contract of defaults: nothing to override is mandatory
    """The request-facing part of the context-manager contract (see the module docstring)."""

    counter: Any = None
    """The `TokenCounter` the manager prices messages with (None when it counts nothing); callers count the
    request they send with it."""

    def counted_request(self) -> tuple[str | None, list[dict[str, Any]]] | None:
        """The system prompt and tool schemas the manager's budget counts, or None when it budgets no request
        (then nothing a caller adds can push the request past a budget the manager holds)."""
        return None
