"""What `same_message` compares of a whole view, laid out flat so one view is compared with another in C.

A caller that keeps its state in its own JSON store hands the budget manager, every call, an equal copy of the
view it returned last time: the same messages as new objects without fingerprints. Recognising that copy message
by message (`same_message`, a Python walk over each message's blocks) cost 5-14 us a message on a freshly parsed
view, which at a 32k budget (150-250 messages) was more than the rest of the call. Here a run of messages becomes
a few lists built with ``map`` and ``itertools`` (each message's role, reasoning and native tool calls, block
counts, every block's field dict) and the ``marshal`` bytes of the few values that ``==`` alone would not compare
type for type (below). Two runs lay out equal when all of them are equal, and that is checked in C.

The field dicts are compared with ``==``, which is exact for text but not for numbers: ``1``, ``True`` and ``1.0``
are equal in Python, as are ``0.0`` and ``-0.0``, and differ in the JSON a fingerprint hashes. Among the block
types laid out, only a call's ``args`` and a result's ``output`` can hold such values, so those alone are also
marshalled: ``marshal`` (format 0) writes the type of every value, so equal strings mean equal values type for
type. Marshalling every field instead cost five times as much, nearly all of it encoding text that ``==`` already
compares exactly. ``marshal`` refuses what is not plain data (models, subclasses of the builtin types), and blocks
that hold models (media, annotations) are not laid out: such a run is left to `same_message`, as is any run that
lays out differently, so a "same" answer here is always one `same_message` gives (it compares the same way).

The remembered side is laid out once and extended with what each call appends: every part is a list with one
entry per message, block or picked value, which does not depend on what comes before it, so the layout of a
longer view is that of the shorter one followed by that of the new messages (`ViewValues.extend`), and the layout
of messages a compaction kept is a slice of the one before it (`ViewValues.extend_from`). A call then reads only
the copy it was handed, not the remembered messages again.
"""

from __future__ import annotations

import itertools
import marshal
import operator
from collections.abc import Iterable, Iterator, Sequence
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


def _marshalled(values: Iterable[Any]) -> list[bytes]:
    """The marshal (format 0) bytes of each of ``values``; ValueError when one is not plain data."""
    return list(map(marshal.dumps, values, itertools.repeat(0)))


class ViewValues:
    """The fields `Message.fingerprint` covers for a run of remembered messages, laid out flat (see the module
    docstring), to tell whether a copy holds the same (`matches`).

    ``laid_out`` is False when some block is of a type not laid out, a text block has annotations, or a value is
    not plain data: such a run is never declared the same here.
    """

    __slots__ = (
        "args",
        "calls",
        "fields",
        "laid_out",
        "natives",
        "outputs",
        "reasonings",
        "roles",
        "sizes",
        "strict",
    )

    def __init__(self) -> None:
        # one list per attribute rather than a tuple per message: a copy's roles and reasoning are mostly the
        # remembered objects themselves (interned literals, None), compared without reading a remembered tuple
        self.roles: list[str] = []
        self.reasonings: list[str | None] = []
        self.natives: list[list[dict[str, Any]] | None] = []
        """Each message's provider-native ``tools_calls``, compared by ``==`` (and also type for type when
        ``strict`` picks it)."""
        self.sizes: list[int] = []
        self.fields: list[dict[str, Any]] = []
        """Every block's field dict, in order (the blocks' own, not copies)."""
        self.strict: tuple[list[bool], list[bool], list[bool]] = ([], [], [])
        """Which values are also compared type for type (`_typed`): per block, a tool call's ``args`` and a tool
        result's ``output``; per message, its ``tools_calls``. A copy's are picked at the same places."""
        self.args: list[bytes] = []
        """The marshal bytes of each tool call's ``args`` picked by ``strict``."""
        self.outputs: list[bytes] = []
        """The marshal bytes of each tool output picked by ``strict``."""
        self.calls: list[bytes] = []
        """The marshal bytes of each message's ``tools_calls`` picked by ``strict``."""
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
        self.natives.extend(map(_TOOLS_CALLS, messages))
        self.sizes.extend(map(len, contents))
        self.fields.extend(map(_FIELDS, blocks))
        self.strict[0].extend(is_call)
        self.strict[1].extend(is_value)
        self.strict[2].extend(native)
        self.args += args
        self.outputs += outputs
        self.calls += calls

    def extend_from(self, other: ViewValues, start: int, stop: int) -> None:
        """Append ``other``'s layout of its messages ``start`` to ``stop``: what `extend` would lay out for those
        very message objects, unedited since, without walking them again.

        A compaction gives the view new head messages (a summary, cleared tool results) but keeps the rest as
        they were; after it, a copy's view would otherwise be laid out again in full (about 2 us a message, 0.4
        ms at a 32k budget), once per compaction."""
        if not self.laid_out or not other.laid_out:
            self.laid_out = False
            return
        sizes = other.sizes
        first = sum(sizes[:start])
        last = first + sum(sizes[start:stop])
        is_call, is_value, native = other.strict
        self.roles += other.roles[start:stop]
        self.reasonings += other.reasonings[start:stop]
        self.natives += other.natives[start:stop]
        self.sizes += sizes[start:stop]
        self.fields += other.fields[first:last]
        self.strict[0].extend(is_call[first:last])
        self.strict[1].extend(is_value[first:last])
        self.strict[2].extend(native[start:stop])
        self.args += _picked_part(other.args, is_call, first, last)
        self.outputs += _picked_part(other.outputs, is_value, first, last)
        self.calls += _picked_part(other.calls, native, start, stop)

    def matches(self, messages: Sequence[Message]) -> bool:
        """True only when each of ``messages`` is `same_message` as the remembered one at its place (ids are the
        caller's to compare); False means "not shown here", not "different".

        The copy is read, never laid out: equal field dicts hold equal ``type`` literals, so its blocks are of the
        same types at the same places as the remembered ones, and the values compared type for type are picked
        from it where the remembered run has them (when the remembered run picks none, a copy equal by ``==``
        holds the same types everywhere, see `_typed`, and nothing more is read).
        """
        if not self.laid_out or list(map(_ROLE, messages)) != self.roles:
            return False
        contents = list(map(_CONTENT, messages))
        if list(map(len, contents)) != self.sizes or list(map(_REASONING, messages)) != self.reasonings:
            return False
        if list(map(_TOOLS_CALLS, messages)) != self.natives:
            return False
        blocks = list(itertools.chain.from_iterable(contents))
        if list(map(_FIELDS, blocks)) != self.fields:
            return False
        if not (self.args or self.outputs or self.calls):
            return True
        try:
            args, outputs, calls = _strict_values(messages, blocks, self.strict)
        except ValueError:
            return False
        return args == self.args and outputs == self.outputs and calls == self.calls


def _picked_part(items: list[bytes], picked: list[bool], start: int, stop: int) -> list[bytes]:
    """The ``items`` of the places ``start`` to ``stop`` of ``picked`` (one item per True place)."""
    if not items:
        return []
    skipped = picked[:start].count(True)
    return items[skipped : skipped + picked[start:stop].count(True)]


def _strict_values(
    messages: Sequence[Message], blocks: list[Any], picked: tuple[list[bool], list[bool], list[bool]]
) -> tuple[list[bytes], list[bytes], list[bytes]]:
    """The marshalled values ``picked`` (see `ViewValues.strict`): tool call arguments, tool outputs and the
    messages' ``tools_calls`` that `==` alone would not compare type for type."""
    is_call, is_value, native = picked
    return (
        _marshalled(map(_ARGS, itertools.compress(blocks, is_call))),
        _marshalled(map(_OUTPUT, itertools.compress(blocks, is_value))),
        _marshalled(map(_TOOLS_CALLS, itertools.compress(messages, native))),
    )


def _typed(value: Any) -> bool:
    """Whether a copy equal to ``value`` by `==` could still differ from it in type: ``value`` holds a number,
    a bool or anything but text, None, lists and dicts with text keys. A copy equal to one that holds none of
    those holds the same types (a string equals only a string, a list only a list, None only None), so only the
    values this picks are compared type for type; most tool arguments are text and cost nothing more.

    A container whose items are all text or None is answered in C, without a call per item: the remembered
    side is laid out once per new message, and tool arguments and native tool calls (nested dicts of text)
    made this recursion most of that cost."""
    kind = type(value)
    if kind is str or value is None:
        return False
    if kind is dict:
        if not _TEXT_KEYS.issuperset(map(type, value)):
            return True
        items: Any = value.values()
    elif kind is list:
        items = value
    else:
        return True
    return not _PLAIN.issuperset(map(type, items)) and any(map(_typed, items))


_TEXT_KEYS = frozenset({str})
_PLAIN = frozenset({str, type(None)})
"""The types `_typed` needs not look inside: a copy equal by `==` holds the same type at the same place."""


def _of_type(blocks: list[Any], types: list[type], kind: type) -> Iterator[Any]:
    """The blocks of exactly ``kind``, in order, picked in C."""
    return itertools.compress(blocks, map(operator.is_, types, itertools.repeat(kind)))
