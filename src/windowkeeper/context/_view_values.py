"""What `same_message` compares of a whole view, laid out flat so one view is compared with another in C.

A caller that keeps its state in its own JSON store hands the budget manager, every call, an equal copy of the
view it returned last time: the same messages as new objects without fingerprints. Recognising that copy message
by message (`same_message`, a Python walk over each message's blocks) cost 5-14 us a message on a freshly parsed
view, which at a 32k budget (150-250 messages) was more than the rest of the call. Here a run of messages becomes
a few lists built with ``map`` and ``itertools`` (roles, reasoning, block counts and types) and two ``marshal``
strings: one of every block's field dict, one of the provider-native ``tools_calls``. Two runs lay out equal when
all of them are equal, and that is checked in C.

``marshal`` (format 0) writes the type of every value, so equal strings mean equal values type for type: ``1``,
``True`` and ``1.0`` differ, as do ``0.0`` and ``-0.0``, exactly as in the JSON a fingerprint hashes (`==` alone
would take them as equal). It refuses what is not plain data (models, subclasses of the builtin types), and blocks
that hold models (media, annotations) are not laid out: such a run is left to `same_message`, as is any run that
lays out differently (other key order, other values), so a "same" answer here is always one `same_message` gives.

The remembered side is laid out once and extended with what each call appends: a marshalled list is a count and
its items' bytes, and those bytes do not depend on what comes before them, so the item bytes of a longer view are
those of the shorter one followed by those of the new messages (`ViewValues.extend`). A call then reads only the
copy it was handed, not the remembered messages again.
"""

from __future__ import annotations

import itertools
import marshal
import operator
from collections.abc import Sequence
from typing import Any

from ..blocks import ErrorBlock, ReasoningBlock, TextBlock, ToolCallBlock, ToolResultBlock
from ..messages import Message

_ROLE = operator.attrgetter("role")
_REASONING = operator.attrgetter("reasoning")
_TOOLS_CALLS = operator.attrgetter("tools_calls")
_CONTENT = operator.attrgetter("content")
_FIELDS = operator.attrgetter("__dict__")
_ANNOTATIONS = operator.attrgetter("annotations")

_LAID_OUT = frozenset({TextBlock, ToolCallBlock, ToolResultBlock, ReasoningBlock, ErrorBlock})
"""Block types whose fields are plain data: text (validated ``str``) or None, a call's ``args`` and a result's
``output`` (JSON values), and a text block's ``annotations`` (laid out only when empty)."""

_LIST_HEAD = 5
"""Bytes before a marshalled list's items: its type code and its length."""


def _items(values: list[Any]) -> bytes:
    """The marshal (format 0) bytes of ``values``' items, without the list's own type and length."""
    return marshal.dumps(values, 0)[_LIST_HEAD:]


class ViewValues:
    """The fields `Message.fingerprint` covers for a run of messages, laid out flat (see the module docstring).

    ``laid_out`` is False when some block is of a type not laid out, a text block has annotations, or a value is
    not plain data: such a run is never declared the same here.
    """

    __slots__ = ("blocks", "calls", "fields", "laid_out", "reasonings", "roles", "sizes")

    def __init__(self) -> None:
        self.roles: list[str] = []
        self.reasonings: list[str | None] = []
        self.sizes: list[int] = []
        self.blocks: list[type] = []
        self.fields = bytearray()
        """Item bytes of the marshalled list of every block's field dict, in order."""
        self.calls = bytearray()
        """Item bytes of the marshalled list of every message's ``tools_calls``."""
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
        if not _LAID_OUT.issuperset(types) or any(
            map(_ANNOTATIONS, itertools.compress(blocks, map(operator.is_, types, itertools.repeat(TextBlock))))
        ):
            self.laid_out = False
            return
        try:
            fields = _items(list(map(_FIELDS, blocks)))
            calls = _items(list(map(_TOOLS_CALLS, messages)))
        except ValueError:  # a value marshal refuses (not plain data): left to `same_message`
            self.laid_out = False
            return
        self.roles.extend(map(_ROLE, messages))
        self.reasonings.extend(map(_REASONING, messages))
        self.sizes.extend(map(len, contents))
        self.blocks.extend(types)
        self.fields += fields
        self.calls += calls

    def same_as(self, other: ViewValues) -> bool:
        """True only when every message here is `same_message` as the one at its place in ``other`` (ids are the
        caller's to compare); False means "not shown here", not "different"."""
        return (
            self.laid_out
            and other.laid_out
            and self.sizes == other.sizes
            and self.blocks == other.blocks
            and self.roles == other.roles
            and self.reasonings == other.reasonings
            and self.calls == other.calls
            and self.fields == other.fields
        )
