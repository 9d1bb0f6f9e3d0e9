"""`AgentState`, its execution metadata, the `add_messages` reducer and `ToolResult`.

Reducers are declared with ``Annotated[type, reducer]`` on a state field; the graph runtime finds them with
`field_reducers` and merges node updates through them instead of overwriting the field.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Iterable
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field

from .constants import START
from .messages import Message


def add_messages(left: Iterable[Message] | None, right: Iterable[Message] | Message | None) -> list[Message]:
    """Append ``right`` to ``left``.

    A message whose id is already present (on either side) is skipped, and ``delta=True`` partial messages are
    never stored, so replaying a node's output or a stream cannot duplicate or corrupt history.
    """
    merged = list(left or [])
    if right is None:
        return merged
    incoming = [right] if isinstance(right, Message) else list(right)
    seen = {m.message_id for m in merged}
    for msg in incoming:
        if msg.delta or msg.message_id in seen:
            continue
        seen.add(msg.message_id)
        merged.append(msg)
    return merged


class ExecutionStatus(enum.StrEnum):
    IDLE = "idle"
    RUNNING = "running"
    INTERRUPTED_BEFORE = "interrupted_before"
    INTERRUPTED_AFTER = "interrupted_after"
    COMPLETED = "completed"
    ERROR = "error"


class ExecMeta(BaseModel):
    """Runtime bookkeeping the graph keeps inside the state so that it is checkpointed with it."""

    current_node: str = START
    step: int = 0
    status: ExecutionStatus = ExecutionStatus.IDLE
    interrupted_node: str | None = None
    interrupt_reason: str | None = None
    stop_requested: bool = False
    error: str | None = None
    thread_id: str | None = None
    internal_data: dict[str, Any] = Field(default_factory=dict)


class AgentState(BaseModel):
    """The state every graph node receives; subclass it to add application fields.

    ``context`` is the view sent to the model (managers trim it); the full history is kept by the checkpointer.
    ``context_summary`` holds a summary of what was trimmed away, and ``scratchpad`` curated working notes that
    budget managers keep pinned.
    """

    # NaN/Infinity stay numbers when dumped, so a store refuses them loudly instead of persisting null
    model_config = ConfigDict(validate_assignment=False, arbitrary_types_allowed=True, ser_json_inf_nan="constants")

    context: Annotated[list[Message], add_messages] = Field(default_factory=list)
    context_summary: str | None = None
    scratchpad: str | None = None
    execution_meta: ExecMeta = Field(default_factory=ExecMeta)

    def is_running(self) -> bool:
        return self.execution_meta.status == ExecutionStatus.RUNNING

    def is_interrupted(self) -> bool:
        return self.execution_meta.status in (
            ExecutionStatus.INTERRUPTED_BEFORE,
            ExecutionStatus.INTERRUPTED_AFTER,
        )

    def is_stopped_requested(self) -> bool:
        return self.execution_meta.stop_requested

    def request_stop(self) -> None:
        self.execution_meta.stop_requested = True

    def advance_step(self) -> None:
        self.execution_meta.step += 1

    def set_current_node(self, name: str) -> None:
        self.execution_meta.current_node = name

    def start(self) -> None:
        self.execution_meta.status = ExecutionStatus.RUNNING
        self.execution_meta.error = None

    def complete(self) -> None:
        self.execution_meta.status = ExecutionStatus.COMPLETED

    def error(self, msg: str) -> None:
        self.execution_meta.status = ExecutionStatus.ERROR
        self.execution_meta.error = msg

    def set_interrupt(self, node: str, reason: str, *, before: bool) -> None:
        meta = self.execution_meta
        meta.status = ExecutionStatus.INTERRUPTED_BEFORE if before else ExecutionStatus.INTERRUPTED_AFTER
        meta.interrupted_node = node
        meta.interrupt_reason = reason

    def clear_interrupt(self) -> None:
        meta = self.execution_meta
        meta.interrupted_node = None
        meta.interrupt_reason = None
        if self.is_interrupted():
            meta.status = ExecutionStatus.RUNNING


Reducer = Callable[[Any, Any], Any]


def field_reducers(state_cls: type[BaseModel]) -> dict[str, Reducer]:
    """The reducer declared for each field of a state class (``Annotated[T, reducer]``)."""
    out: dict[str, Reducer] = {}
    for name, info in state_cls.model_fields.items():
        for meta in info.metadata:
            if callable(meta) and not isinstance(meta, type):
                out[name] = meta
    return out


class ToolResult(BaseModel):
    """What a tool returns when it must both answer the model and update state fields.

    ``message`` goes back to the model as the tool's output; only the keys in ``state`` are written.
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    message: Any = ""
    state: dict[str, Any] = Field(default_factory=dict)
