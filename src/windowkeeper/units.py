"""Grouping a message list into units, and checking a list against a provider's structural rules.

Every strategy (trim, summarize, compact, budget) cuts between units and never inside one, so a provider never
receives a tool result without its call or a call without its results. A unit is a system message, a user
message, a plain assistant message, or an assistant message that calls tools together with every tool message that
answers it. A trailing call whose results have not all arrived is ``pending``: it belongs to the current turn and
must be kept whole.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Literal, TypeVar

from .blocks import ToolCallBlock, ToolResultBlock
from .messages import Message
from .providers import PROVIDERS, ProviderName, normalize_provider

_T = TypeVar("_T")
UnitKind = Literal["system", "user", "assistant", "tool_turn", "pending", "incomplete", "orphan"]
Provider = ProviderName


@dataclass(frozen=True)
class Unit:
    """A run of messages that must be kept or removed together.

    ``incomplete`` marks an assistant tool call in the middle of a list whose results never came (invalid input
    that strategies may drop whole); ``orphan`` marks a tool message whose call is not before it.
    """

    kind: UnitKind
    start: int
    end: int
    messages: tuple[Message, ...]
    call_ids: tuple[str, ...] = ()
    answered_ids: tuple[str, ...] = field(default=())

    @property
    def head(self) -> Message:
        return self.messages[0]

    def __len__(self) -> int:
        return self.end - self.start


def _result_ids(message: Message) -> list[str]:
    """`Message.tool_result_blocks`' call ids, read in one pass (no list of blocks in between)."""
    return [b.call_id for b in message.content if isinstance(b, ToolResultBlock)]


def _call_ids(message: Message) -> list[str]:
    """`Message.tool_call_ids`: the ids of the content's call blocks, read in one pass; only a message without
    any, carrying provider-native ``tools_calls``, goes through the method that parses those."""
    ids = [b.id for b in message.content if isinstance(b, ToolCallBlock)]
    if ids or not message.tools_calls:
        return ids
    return message.tool_call_ids()


_new_object = object.__new__
_set_attribute = object.__setattr__


def _unit(
    kind: UnitKind,
    start: int,
    end: int,
    messages: tuple[Message, ...],
    call_ids: tuple[str, ...] = (),
    answered_ids: tuple[str, ...] = (),
) -> Unit:
    """``Unit(kind, start, end, messages, call_ids, answered_ids)``, its fields set in one step: a frozen dataclass's
    ``__init__`` sets each field through ``object.__setattr__``, and grouping makes one unit per turn of every
    view a budget manager compacts."""
    unit = _new_object(Unit)
    _set_attribute(
        unit,
        "__dict__",
        {
            "kind": kind,
            "start": start,
            "end": end,
            "messages": messages,
            "call_ids": call_ids,
            "answered_ids": answered_ids,
        },
    )
    return unit


def group_units(messages: Sequence[Message]) -> list[Unit]:
    """Split ``messages`` into consecutive units covering the whole list in order."""
    return group_units_as(messages, _unit)


UnitMaker = Callable[[UnitKind, int, int, tuple[Message, ...], tuple[str, ...], tuple[str, ...]], _T]
"""Builds what a caller keeps of one unit from ``(kind, start, end, messages, call_ids, answered_ids)``."""


def group_units_as(messages: Sequence[Message], make: UnitMaker[_T]) -> list[_T]:
    """`group_units`, each unit handed to ``make`` instead of built as a `Unit`.

    A budget manager regroups the tail of its view at every compaction and keeps its own record of each unit (the
    messages with their counts); building a `Unit` first only to read three of its fields was a fifth of that
    regrouping.
    """
    units: list[_T] = []
    append = units.append
    n = len(messages)
    i = 0
    while i < n:
        msg = messages[i]
        role = msg.role
        if role == "assistant":
            call_ids = _call_ids(msg)
            if not call_ids:
                append(make("assistant", i, i + 1, (msg,), (), ()))
                i += 1
                continue
            wanted = set(call_ids)
            answered: list[str] = []
            j = i + 1
            while j < n and messages[j].role == "tool":
                ids = _result_ids(messages[j])
                if not ids or not wanted.issuperset(ids) or not set(answered).isdisjoint(ids):
                    break
                answered.extend(ids)
                j += 1
            complete = wanted <= set(answered)
            kind: UnitKind = "tool_turn" if complete else ("pending" if j == n else "incomplete")
            append(make(kind, i, j, tuple(messages[i:j]), tuple(call_ids), tuple(answered)))
            i = j
            continue
        if role == "tool":
            append(make("orphan", i, i + 1, (msg,), (), tuple(_result_ids(msg))))
        else:
            append(make(role, i, i + 1, (msg,), (), ()))
        i += 1
    return units


def flatten(units: Iterable[Unit]) -> list[Message]:
    """The messages of ``units`` in order."""
    out: list[Message] = []
    for unit in units:
        out.extend(unit.messages)
    return out


@dataclass(frozen=True)
class Problem:
    """One structural problem: the index of the offending message, a stable code and a readable explanation."""

    index: int
    code: str
    message: str

    def __str__(self) -> str:
        return f"[{self.index}] {self.code}: {self.message}"


def validate(messages: Sequence[Message], provider: ProviderName | str = "openai") -> list[Problem]:
    """Every structural problem that would make ``provider`` reject ``messages``, in index order.

    Checked for all providers: tool results with no preceding call, tool calls left unanswered (other than the
    trailing pending turn), parallel calls answered only in part, tool messages without results. For Anthropic
    call ids must be unique across the conversation, and for Anthropic and Gemini the first non-system message
    must come from the user (a conversation with no user message at all is reported as ``no_user_message``).
    ``provider`` is any name of `windowkeeper.providers` (``"gemini"`` and ``"google"``
    alike); an unknown one raises `ConfigurationError`.
    """
    name = provider
    provider = normalize_provider(provider)
    problems: list[Problem] = []
    seen_calls: dict[str, int] = {}
    units = group_units(messages)
    for unit in units:
        if unit.kind == "orphan":
            ids = list(unit.answered_ids)
            if not ids:
                problems.append(Problem(unit.start, "empty_tool_message", "tool message carries no tool result"))
            else:
                problems.append(
                    Problem(
                        unit.start,
                        "orphan_tool_result",
                        f"tool result for call id(s) {', '.join(map(repr, ids))} has no matching tool call "
                        "in the assistant message right before it",
                    )
                )
            continue
        if unit.kind in ("tool_turn", "pending", "incomplete"):
            for cid in unit.call_ids:
                # OpenAI pairs results by adjacency and accepts an id reused in a later turn (recorded
                # trajectories do this); Anthropic rejects any repeated tool_use id.
                if cid in seen_calls and provider == "anthropic":
                    problems.append(
                        Problem(
                            unit.start,
                            "duplicate_tool_call_id",
                            f"tool call id {cid!r} already used at message {seen_calls[cid]}",
                        )
                    )
                seen_calls.setdefault(cid, unit.start)
            if unit.kind == "incomplete":
                missing = [c for c in unit.call_ids if c not in set(unit.answered_ids)]
                code = "partial_parallel_results" if unit.answered_ids else "unanswered_tool_call"
                what = "parallel calls answered only in part" if unit.answered_ids else "tool call never answered"
                problems.append(
                    Problem(unit.start, code, f"{what}: missing results for {', '.join(map(repr, missing))}")
                )
    if provider in ("anthropic", "google"):
        for index, msg in enumerate(messages):
            if msg.role == "system":
                continue
            if msg.role != "user":
                problems.append(
                    Problem(
                        index,
                        "first_message_not_user",
                        f"first non-system message has role {msg.role!r}; "
                        f"{name} requires the conversation to start with a user message",
                    )
                )
            break
        else:  # nothing but system messages (or nothing at all): there is no turn to answer
            problems.append(
                Problem(
                    len(messages),
                    "no_user_message",
                    f"the conversation has no user message; {name} requires at least one user turn "
                    "(keep the user's current request in the view)",
                )
            )
    problems.sort(key=lambda p: p.index)
    return problems


def is_valid(messages: Sequence[Message], provider: ProviderName | str = "openai") -> bool:
    return not validate(messages, provider)


__all__ = [
    "PROVIDERS",
    "Problem",
    "Provider",
    "Unit",
    "UnitKind",
    "flatten",
    "group_units",
    "is_valid",
    "validate",
]
