"""Merging what a node returned into the state.

Nodes may answer in several shapes (a message, messages, a `ToolResult`, a dict of field updates, or the state
itself); all of them end up as field updates merged through the state class's reducers, so ``context`` is always
appended to via `add_messages` and never silently overwritten by a dict.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ValidationError

from ..errors import GraphError
from ..messages import Message
from ..state import AgentState, ToolResult, field_reducers

#: Keys a node may use in a dict update that are not field names: ``messages`` appends to ``context``.
_ALIASES = {"messages": "context"}


def _as_message(value: Any, *, node: str) -> Message:
    if isinstance(value, Message):
        return value
    if isinstance(value, str):
        return Message.text_message(value, role="assistant")
    raise GraphError(f"node {node!r}: ToolResult.message must be a Message or str, got {type(value).__name__}")


def output_to_update(output: object, *, node: str) -> dict[str, Any] | AgentState | None:
    """Normalize a node's return value to a dict of field updates, a replacement state, or None."""
    if output is None:
        return None
    if isinstance(output, AgentState):
        return output
    if isinstance(output, Message):
        return {"context": [output]}
    if isinstance(output, (list, tuple)):
        if all(isinstance(m, Message) for m in output):
            return {"context": list(output)}
        bad = next(type(m).__name__ for m in output if not isinstance(m, Message))
        raise GraphError(f"node {node!r} returned a list containing {bad}; a returned list must hold only Messages")
    if isinstance(output, ToolResult):
        update = dict(output.state)
        if output.message not in (None, ""):
            message = _as_message(output.message, node=node)
            update["context"] = [*update.get("context", []), message]
        return update
    if isinstance(output, Mapping):
        return dict(output)
    raise GraphError(
        f"node {node!r} returned {type(output).__name__}; return a Message, a list of Messages, a ToolResult, "
        "a dict of state updates, the state, or None",
    )


def apply_update(state: AgentState, update: Mapping[str, Any], *, node: str) -> None:
    """Merge ``update`` into ``state`` in place, through reducers, validating each assigned value."""
    cls = type(state)
    reducers = field_reducers(cls)
    fields = cls.model_fields
    for raw_key, value in update.items():
        key = _ALIASES.get(raw_key, raw_key)
        if key not in fields:
            known = ", ".join(sorted(fields))
            raise GraphError(
                f"node {node!r} updated unknown state field {raw_key!r}; {cls.__name__} has: {known} "
                "(subclass AgentState to add fields)",
            )
        if key == "context" and isinstance(value, Message):
            value = [value]
        reducer = reducers.get(key)
        new_value = reducer(getattr(state, key), value) if reducer is not None else value
        try:
            cls.__pydantic_validator__.validate_assignment(state, key, new_value)
        except ValidationError as exc:
            raise GraphError(f"node {node!r} set state field {key!r} to an invalid value: {exc}") from exc


def adopt_state(current: AgentState, returned: BaseModel, *, node: str) -> AgentState:
    """Accept a state object a node returned, converting between compatible state classes."""
    cls = type(current)
    if isinstance(returned, cls):
        return returned
    try:
        return cls.model_validate(returned.model_dump())
    except ValidationError as exc:
        raise GraphError(
            f"node {node!r} returned a {type(returned).__name__} that is not a valid {cls.__name__}: {exc}",
        ) from exc
