"""What `same_message` compares of a whole view, laid out flat so one view is compared with another in C.

A caller that keeps its state in its own JSON store hands the budget manager, every call, an equal copy of the
view it returned last time: the same messages as new objects without fingerprints. Recognising that copy message
by message (`same_message`, a Python walk over each message's blocks) cost 5-14 us a message on a freshly parsed
view, which at a 32k budget (150-250 messages) was more than the rest of the call. Here a run of messages becomes
a few lists built with ``map`` and ``itertools`` (roles, reasoning, block counts and types, every block's field
dict) and two ``marshal`` strings: one of the values that are not text (tool call arguments and tool outputs that
are not strings), one of the provider-native ``tools_calls``. Two runs lay out equal when all of them are equal,
and that is checked in C.

The field dicts are compared with ``==``, which is exact for text but not for numbers: ``1``, ``True`` and ``1.0``
are equal in Python, as are ``0.0`` and ``-0.0``, and differ in the JSON a fingerprint hashes. Among the block
types laid out, only a call's ``args`` and a result's ``output`` can hold such values, so those alone are also
marshalled: ``marshal`` (format 0) writes the type of every value, so equal strings mean equal values type for
type. Marshalling every field instead cost five times as much, nearly all of it encoding text that ``==`` already
compares exactly. ``marshal`` refuses what is not plain data (models, subclasses of the builtin types), and blocks
that hold models (media, annotations) are not laid out: such a run is left to `same_message`, as is any run that
lays out differently, so a "same" answer here is always one `same_message` gives (it compares the same way).

The remembered side is laid out once and extended with what each call appends: the field dicts are a list, and a
marshalled list is a count and its items' bytes, which do not depend on what comes before them, so the item bytes
of a longer view are those of the shorter one followed by those of the new messages (`ViewValues.extend`). A call
then reads only the copy it was handed, not the remembered messages again.
"""

from __future__ import annotations

import itertools
import marshal
import operator
from collections.abc import Iterator, Sequence
from typing import Any

from ..blocks import ErrorBlock, ReasoningBlock, TextBlock, ToolCallBlock, ToolResultBlock
from ..messages import Message

_ROLE = operator.attrgetter("role")
_REASONING = operator.attrgetter("reasoning")
_TOOLS_CALLS = operator.attrgetter("tools_calls")
_CONTENT = operator.attrgetter("content")
_FIELDS = operator.attrgetter("__dict__")
_ANNOTATIONS = operator.attrgetter("annotations")
_ARGS = operator.attrgetter("args")
_OUTPUT = operator.attrgetter("output")

_LAID_OUT = frozenset({TextBlock, ToolCallBlock, ToolResultBlock, ReasoningBlock, ErrorBlock})
"""Block types whose fields are plain data: text (validated ``str``) or None, a call's ``args`` and a result's
``output`` (JSON values), and a text block's ``annotations`` (laid out only when empty)."""

_LIST_HEAD = 5
"""Bytes before a marshalled list's items: its type code and its length."""


def _items(values: list[Any]) -> bytes:
    """The marshal (format 0) bytes of ``values``' items, without the list's own type and length."""
    return marshal.dumps(values, 0)[_LIST_HEAD:]


class ViewValues:
    """The fields `Message.fingerprint` covers for a run of remembered messages, laid out flat (see the module
    docstring), to tell whether a copy holds the same (`matches`).

    ``laid_out`` is False when some block is of a type not laid out, a text block has annotations, or a value is
    not plain data: such a run is never declared the same here.
    """

    __slots__ = ("args", "calls", "fields", "laid_out", "outputs", "reasonings", "roles", "sizes", "strict")

    def __init__(self) -> None:
        self.roles: list[str] = []
        self.reasonings: list[str | None] = []
        self.sizes: list[int] = []
        self.fields: list[dict[str, Any]] = []
        """Every block's field dict, in order (the blocks' own, not copies)."""
        self.strict: tuple[list[bool], list[bool], list[bool]] = ([], [], [])
        """Which values are also compared type for type (`_typed`): per block, a tool call's ``args`` and a tool
        result's ``output``; per message, its ``tools_calls``. A copy's are picked at the same places."""
        self.args = bytearray()
        """Item bytes of the marshalled list of the tool calls' ``args`` picked by ``strict``."""
        self.outputs = bytearray()
        """Item bytes of the marshalled list of the tool outputs picked by ``strict``."""
        self.calls = bytearray()
        """Item bytes of the marshalled list of the messages' ``tools_calls`` picked by ``strict``."""
        self.laid_out = True

    @classmethod
    def of(cls, messages: Sequence[Message]) -> ViewValues:
        values = cls()
        values.extend(messages)
        return values

    def extend(self, messages: Sequence[Message]) -> None:
        """Lay out ``messages`` after the ones already here."""
        if not self.laid_out:
            return
        contents = list(map(_CONTENT, messages))
        blocks = list(itertools.chain.from_iterable(contents))
        types = list(map(type, blocks))
        if not _LAID_OUT.issuperset(types) or any(map(_ANNOTATIONS, _of_type(blocks, types, TextBlock))):
            self.laid_out = False
            return
        # the values `==` alone could take for equal to a retyped copy (see `_typed`)
        is_call = [kind is ToolCallBlock and _typed(block.args) for kind, block in zip(types, blocks, strict=True)]
        is_value = [kind is ToolResultBlock and _typed(block.output) for kind, block in zip(types, blocks, strict=True)]
        native = list(map(_typed, map(_TOOLS_CALLS, messages)))
        try:
            args, outputs, calls = _strict_values(messages, blocks, (is_call, is_value, native))
        except ValueError:  # a value marshal refuses (not plain data): left to `same_message`
            self.laid_out = False
            return
        self.roles.extend(map(_ROLE, messages))
        self.reasonings.extend(map(_REASONING, messages))
        self.sizes.extend(map(len, contents))
        self.fields.extend(map(_FIELDS, blocks))
        self.strict[0].extend(is_call)
        self.strict[1].extend(is_value)
        self.strict[2].extend(native)
        self.args += args
        self.outputs += outputs
        self.calls += calls

    def matches(self, messages: Sequence[Message]) -> bool:
        """True only when each of ``messages`` is `same_message` as the remembered one at its place (ids are the
        caller's to compare); False means "not shown here", not "different".

        The copy is read, never laid out: equal field dicts hold equal ``type`` literals, so its blocks are of the
        same types at the same places as the remembered ones, and the values compared type for type are picked
        from it where the remembered run has them.
        """
        if not self.laid_out or list(map(_ROLE, messages)) != self.roles:
            return False
        contents = list(map(_CONTENT, messages))
        if list(map(len, contents)) != self.sizes or list(map(_REASONING, messages)) != self.reasonings:
            return False
        blocks = list(itertools.chain.from_iterable(contents))
        if list(map(_FIELDS, blocks)) != self.fields:
            return False
        try:
            args, outputs, calls = _strict_values(messages, blocks, self.strict)
        except ValueError:
            return False
        return args == self.args and outputs == self.outputs and calls == self.calls


def _strict_values(
    messages: Sequence[Message], blocks: list[Any], picked: tuple[list[bool], list[bool], list[bool]]
) -> tuple[bytes, bytes, bytes]:
    """The marshalled values ``picked`` (see `ViewValues.strict`): tool call arguments, tool outputs and the
    messages' ``tools_calls`` that `==` alone would not compare type for type."""
    is_call, is_value, native = picked
    return (
        _items(list(map(_ARGS, itertools.compress(blocks, is_call)))),
        _items(list(map(_OUTPUT, itertools.compress(blocks, is_value)))),
        _items(list(map(_TOOLS_CALLS, itertools.compress(messages, native)))),
    )


def _typed(value: Any) -> bool:
    """Whether a copy equal to ``value`` by `==` could still differ from it in type: ``value`` holds a number,
    a bool or anything but text, None, lists and dicts with text keys. A copy equal to one that holds none of
    those holds the same types (a string equals only a string, a list only a list, None only None), so only the
    values this picks are compared type for type; most tool arguments are text and cost nothing more."""
    kind = type(value)
    if kind is str or value is None:
        return False
    if kind is list:
        return any(map(_typed, value))
    if kind is dict:
        return not all(type(key) is str for key in value) or any(map(_typed, value.values()))
    return True


def _of_type(blocks: list[Any], types: list[type], kind: type) -> Iterator[Any]:
    """The blocks of exactly ``kind``, in order, picked in C."""
    return itertools.compress(blocks, map(operator.is_, types, itertools.repeat(kind)))
