"""`Message` and `TokenUsages`: one conversation turn and what a provider billed for it.

A message's `fingerprint()` is a hash of everything a model would see of it (role, content, tool calls,
reasoning). It is memoized on the instance and reset whenever a field is assigned *or the content list is edited
in place* (``message.content[0] = TextBlock(...)``, ``append``, ``del``...), so token counters can cache per
``(message_id, fingerprint)``, re-counting a long history costs only the new or changed messages, and an edited
message is never counted at its old size. ``content`` is a `BlockList`: a ``list`` that validates what is put into
it and tells the messages holding it that their fingerprint is stale. Blocks themselves are frozen; the dicts
inside a tool call's ``args`` or a tool result's ``output`` are not tracked, so replace the block to change them.

Text is sanitized at construction (lone surrogates become U+FFFD, see `windowkeeper.boundary`), so a message can
always be hashed, stored and sent. Non-finite floats (NaN, Infinity) are serialized as the JSON constants rather
than silently as ``null``, so a store can refuse them with an error instead of changing the data.
"""

from __future__ import annotations

import hashlib
import json
import marshal
import threading
import time
import uuid
import weakref
from collections.abc import Iterable, Sequence
from typing import Any, Literal, SupportsIndex, overload

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, TypeAdapter, ValidationError
from pydantic_core import to_json

from .blocks import (
    MEDIA_BLOCK_TYPES,
    AnnotationBlock,
    ContentBlock,
    ErrorBlock,
    ReasoningBlock,
    TextBlock,
    ToolCallBlock,
    ToolResultBlock,
    block_from_stored,
    block_from_trusted,
    set_dict,
    set_extra,
    set_fields_set,
    set_private,
    tool_output_text,
)
from .boundary import clean_id, clean_json, clean_text

_BLOCK_TYPES: tuple[type[BaseModel], ...] = (
    TextBlock,
    ToolCallBlock,
    ToolResultBlock,
    ReasoningBlock,
    ErrorBlock,
    AnnotationBlock,
    *MEDIA_BLOCK_TYPES,
)

Role = Literal["user", "assistant", "system", "tool"]
ROLES: tuple[str, ...] = ("user", "assistant", "system", "tool")


class TokenUsages(BaseModel):
    """Token accounting a provider reported for one model call."""

    model_config = ConfigDict(extra="allow", ser_json_inf_nan="constants")

    completion_tokens: int = 0
    prompt_tokens: int = 0
    total_tokens: int = 0
    reasoning_tokens: int = 0
    cache_creation_input_tokens: int = 0
    cache_read_input_tokens: int = 0
    image_tokens: int | None = 0
    audio_tokens: int | None = 0

    def __add__(self, other: TokenUsages) -> TokenUsages:
        return TokenUsages(
            completion_tokens=self.completion_tokens + other.completion_tokens,
            prompt_tokens=self.prompt_tokens + other.prompt_tokens,
            total_tokens=self.total_tokens + other.total_tokens,
            reasoning_tokens=self.reasoning_tokens + other.reasoning_tokens,
            cache_creation_input_tokens=self.cache_creation_input_tokens + other.cache_creation_input_tokens,
            cache_read_input_tokens=self.cache_read_input_tokens + other.cache_read_input_tokens,
            image_tokens=(self.image_tokens or 0) + (other.image_tokens or 0),
            audio_tokens=(self.audio_tokens or 0) + (other.audio_tokens or 0),
        )


def _new_id() -> str:
    return uuid.uuid4().hex


_FINGERPRINTED = frozenset({"role", "content", "tools_calls", "reasoning"})

_BLOCK_ADAPTER: TypeAdapter[ContentBlock] = TypeAdapter(ContentBlock)
_FINGERPRINT_JSON = json.JSONEncoder(sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=str)
"""Built once: ``json.dumps`` with options constructs an encoder per call (same output)."""


class _NotPlain(Exception):
    """Raised by `_key_sorted` at the first value pydantic's JSON writer may spell differently from the standard
    encoder."""


_FAST_DEPTH = 64
"""Nesting `_key_sorted` copies; a deeper payload is encoded by the standard encoder (the same text)."""

_INT64 = range(-(2**63), 2**63)


def _key_sorted(value: Any, depth: int = 0) -> Any:
    """``value`` with every dict's keys in sorted order (new dicts and lists), for pydantic's JSON writer, which
    writes a value of these types character for character as the standard encoder with ``sort_keys`` does (it
    keeps the order it is given). `_NotPlain` for anything else: a float (``1e16`` against ``1e+16``), a
    subclass of str or int, an int past 64 bits, a tuple, a value a ``default`` would write, a key that is not a
    str, or nesting past `_FAST_DEPTH`. Used for fingerprints here and for `canonical_json` by the formats.

    A leaf (str, bool, None, a 64-bit int) is tested in line, not by a call per value: this runs on every new
    item a `Window` reads."""
    kind = type(value)
    if kind is dict and depth < _FAST_DEPTH:
        if not _STR_ONLY.issuperset(map(type, value)):
            raise _NotPlain
        out = {}
        for key in sorted(value):
            item = value[key]
            leaf = type(item)
            out[key] = (
                item
                if leaf is str or leaf is bool or item is None or (leaf is int and item in _INT64)
                else _key_sorted(item, depth + 1)
            )
        return out
    if kind is list and depth < _FAST_DEPTH:
        return [
            item
            if type(item) is str or type(item) is bool or item is None or (type(item) is int and item in _INT64)
            else _key_sorted(item, depth + 1)
            for item in value
        ]
    if kind is str or kind is bool or value is None or (kind is int and value in _INT64):
        return value
    raise _NotPlain


_STR_ONLY = frozenset({str})


_LONG_TEXT = 1024
"""A block holding a string this long is written by pydantic's serializer (`_fingerprint_bytes`); below it the
sorted copy costs more than the standard encoder's escaping saves (tau/SWE-agent messages: ~9.5 us either way)."""


def _fingerprint_bytes(payload: dict[str, Any]) -> bytes:
    """The bytes a fingerprint hashes: ``payload`` as compact JSON with sorted keys, UTF-8 (lone surrogates
    passed through). For a block with a long text (a tool output), written by pydantic's serializer when every
    value is one it spells as the standard encoder does (about half its time on a 5 KB output, and no second
    pass to encode the text to UTF-8), else by the standard encoder: the same bytes either way (fingerprints are
    stored, so they must never change)."""
    if any(type(v) is str and len(v) >= _LONG_TEXT for block in payload["c"] for v in block.values()):
        try:
            return to_json(_key_sorted(payload))
        except (_NotPlain, ValueError):  # PydanticSerializationError (a lone surrogate) is a ValueError
            pass
    # constructors replace lone surrogates; "surrogatepass" keeps a value slipped in without validation
    # (model_construct) hashable instead of crashing every counter that reads it
    return _FINGERPRINT_JSON.encode(payload).encode("utf-8", "surrogatepass")


_edit_lock = threading.Lock()
_edits = 0


def edit_epoch() -> int:
    """How many in-place edits of messages this process has seen (content, role, tool calls, reasoning, and a
    new ``metadata`` or ``raw`` object assigned).

    A cache that remembers a list of messages by identity stores the epoch with it: while the epoch is unchanged
    no message anywhere was edited, so identity still means "same content" (and the same metadata and raw
    objects) and checking costs nothing. When it moved, `edited_since` tells which of its messages changed what a
    model sees (a new metadata or raw object moves the epoch only: it changes no fingerprint).
    """
    return _edits


def fingerprints(messages: Iterable[Message]) -> tuple[str, ...]:
    """Each message's `Message.fingerprint`, the memoized ones read in one comprehension (a method call per
    message was most of the cost of a pass over a whole view)."""
    return tuple(
        fp if (p := m.__pydantic_private__) is not None and (fp := p.get("_fingerprint")) else m.fingerprint()
        for m in messages
    )


def participant_name(message: Message) -> str | None:
    """The name of who said ``message`` when the caller gave one (Chat Completions' and LangChain's ``name``,
    which the readers keep in ``metadata["name"]``); None otherwise. In a chat among several people it is part of
    what the model reads: who said a line."""
    name = message.metadata.get("name")
    return name if isinstance(name, str) and name else None


WHOLE_KEY = "windowkeeper_whole"
"""Metadata marking a tool message whose provider item holds nothing a text could stand for (a Responses
``computer_call_output`` is one screenshot): a pointer in its place would be an item the API refuses, so a cut
keeps it as it came or drops it with its whole unit (its call included)."""


def kept_whole(message: Message) -> bool:
    """Whether ``message`` may only be kept as it came or dropped with its unit, never cleared (`WHOLE_KEY`)."""
    return message.metadata.get(WHOLE_KEY) is True


def edited_since(message: Message, epoch: int) -> bool:
    """Whether ``message`` was edited in place after `edit_epoch` returned ``epoch``."""
    private = message.__pydantic_private__
    return private is not None and private.get("_edited", 0) > epoch


def _moved() -> None:
    global _edits
    with _edit_lock:
        _edits += 1


def _mark_edited(private: dict[str, Any]) -> None:
    global _edits
    with _edit_lock:
        _edits += 1
        private["_edited"] = _edits
    private["_fingerprint"] = None


def _as_block(item: Any) -> ContentBlock:
    """A block put into a content list after construction is validated like one given to the constructor."""
    if isinstance(item, _BLOCK_TYPES):
        return item  # type: ignore[return-value]
    return _BLOCK_ADAPTER.validate_python(item)


def _refs(owners: weakref.ref[Message] | list[weakref.ref[Message]]) -> list[weakref.ref[Message]]:
    return owners if isinstance(owners, list) else [owners]


class BlockList(list[ContentBlock]):
    """A message's content: a ``list`` of blocks that reports in-place edits to the messages holding it.

    Token counts are cached per ``(message_id, fingerprint)`` and the fingerprint is memoized, so an edit that
    bypassed the message (``message.content.append(block)``) used to leave the old count in place: a view of
    20,000 tokens was reported as 22. Every mutating method here clears the memoized fingerprint of each message
    that holds this list (weakly referenced; copies made by ``model_copy`` share the list and register too), so
    reading stays a dictionary lookup and only an edited message is hashed again.
    """

    __slots__ = ("_owners",)

    def __init__(self, items: Iterable[ContentBlock] = ()) -> None:
        super().__init__(items)
        self._owners: weakref.ref[Message] | list[weakref.ref[Message]] | None = None

    def _own(self, message: Message) -> None:
        """Register ``message`` as holding this list. One holder (the common case: a list just built for one
        message) is kept as its bare reference, not in a list of one: a restarted thread's read builds one
        `BlockList` per message, and every container it allocates is one more for the garbage collector to walk."""
        owners = self._owners
        if owners is None:
            self._owners = weakref.ref(message)
            return
        kept = [ref for ref in _refs(owners) if ref() is not None and ref() is not message]
        kept.append(weakref.ref(message))
        self._owners = kept if len(kept) > 1 else kept[0]

    def _touch(self) -> None:
        owners = self._owners
        if owners is None:
            return
        for ref in _refs(owners):
            message = ref()
            if message is not None:
                private = message.__pydantic_private__
                if private is not None:
                    _mark_edited(private)

    def __reduce__(self) -> tuple[Any, ...]:
        return (BlockList, (list(self),))

    def __copy__(self) -> BlockList:
        return BlockList(self)

    def __deepcopy__(self, memo: dict[int, Any]) -> BlockList:
        import copy

        return BlockList(copy.deepcopy(list(self), memo))

    def append(self, item: ContentBlock) -> None:
        super().append(_as_block(item))
        self._touch()

    def extend(self, items: Iterable[ContentBlock]) -> None:
        super().extend([_as_block(item) for item in items])
        self._touch()

    def insert(self, index: SupportsIndex, item: ContentBlock) -> None:
        super().insert(index, _as_block(item))
        self._touch()

    @overload
    def __setitem__(self, index: SupportsIndex, item: ContentBlock) -> None: ...

    @overload
    def __setitem__(self, index: slice, item: Iterable[ContentBlock]) -> None: ...

    def __setitem__(self, index: Any, item: Any) -> None:
        if isinstance(index, slice):
            super().__setitem__(index, [_as_block(block) for block in item])
        else:
            super().__setitem__(index, _as_block(item))
        self._touch()

    def __delitem__(self, index: SupportsIndex | slice) -> None:
        super().__delitem__(index)
        self._touch()

    def __iadd__(self, items: Iterable[ContentBlock]) -> BlockList:  # type: ignore[override,misc]
        self.extend(items)
        return self

    def __imul__(self, count: SupportsIndex) -> BlockList:
        super().__imul__(count)
        self._touch()
        return self

    def pop(self, index: SupportsIndex = -1) -> ContentBlock:
        item = super().pop(index)
        self._touch()
        return item

    def remove(self, item: ContentBlock) -> None:
        super().remove(item)
        self._touch()

    def clear(self) -> None:
        super().clear()
        self._touch()

    def sort(self, *args: Any, **kwargs: Any) -> None:
        super().sort(*args, **kwargs)
        self._touch()

    def reverse(self) -> None:
        super().reverse()
        self._touch()


_CLEANED = ("message_id", "tools_calls", "reasoning", "metadata", "raw")
"""`Message` fields the boundary rule applies to (blocks clean their own text)."""


def _clean_field(name: str, value: Any) -> Any:
    if name == "message_id":
        return clean_id(value) if isinstance(value, str) else value
    if name == "reasoning":
        return clean_text(value) if isinstance(value, str) else value
    return clean_json(value)


class Message(BaseModel):
    """One turn of a conversation: a role and a list of typed content blocks.

    ``tools_calls`` mirrors the `ToolCallBlock`s in provider-native dict form; the blocks are authoritative.
    Partial streaming chunks carry ``delta=True`` and are never stored by `add_messages`.
    """

    model_config = ConfigDict(extra="forbid", validate_assignment=True, ser_json_inf_nan="constants")

    message_id: str | int = Field(default_factory=_new_id)
    role: Role
    content: list[ContentBlock] = Field(default_factory=BlockList)
    delta: bool = False
    tools_calls: list[dict[str, Any]] | None = None
    reasoning: str | None = None
    timestamp: float | None = Field(default_factory=time.time)
    metadata: dict[str, Any] = Field(default_factory=dict)
    usages: TokenUsages | None = None
    raw: dict[str, Any] | None = None

    _fingerprint: str | None = PrivateAttr(default=None)
    # "_edited" (the edit epoch of the last in-place edit) is written into the private dict only when an edit
    # happens: a second declared private attribute would double the cost of constructing every message

    def __eq__(self, other: object) -> bool:
        """Equal fields, equal messages: pydantic would also compare the private memo and edit stamp, so a message
        that had computed its fingerprint was unequal to an identical one that had not."""
        if not isinstance(other, Message):
            return NotImplemented
        return (
            type(self) is type(other)
            and self.__dict__ == other.__dict__
            and self.__pydantic_extra__ == other.__pydantic_extra__
        )

    __hash__ = None  # type: ignore[assignment]  # mutable: unhashable, as pydantic makes it

    def model_post_init(self, context: Any, /) -> None:
        """Apply the boundary rule to this message's own fields and adopt its content list.

        One Python call for the whole message, with cheap checks for the common case (ASCII id, empty metadata),
        rather than a validator per field: constructing messages is on every load path. Blocks clean their own
        text in their validators.
        """
        fields = self.__dict__
        for name in _CLEANED:
            value = fields[name]
            if value:
                fields[name] = _clean_field(name, value)
        self._adopt_content()

    def _adopt_content(self) -> None:
        """Make ``content`` a `BlockList` that knows this message holds it (paths that skip validation too)."""
        content = self.__dict__.get("content")
        if content is None:
            return
        if type(content) is not BlockList:
            content = BlockList(content)
            self.__dict__["content"] = content
        content._own(self)

    def __setattr__(self, name: str, value: Any) -> None:
        super().__setattr__(name, value)
        if name in _CLEANED and value:
            self.__dict__[name] = _clean_field(name, self.__dict__[name])
        if name in _FINGERPRINTED:
            private = self.__pydantic_private__
            if private is not None:
                _mark_edited(private)
        elif name == "metadata" or name == "raw":
            _moved()  # what a cache of this object's metadata or raw record holds is another object now
            if name == "content":
                self._adopt_content()

    def model_copy(self, *, update: Any = None, deep: bool = False) -> Message:
        """A copy that shares (or, with ``deep``, copies) the content list and stays told about its edits."""
        copy = super().model_copy(update=update, deep=deep)
        copy._adopt_content()
        if update and not _FINGERPRINTED.isdisjoint(update):
            copy.__pydantic_private__["_fingerprint"] = None  # type: ignore[index]
        return copy

    def __copy__(self) -> Message:
        copy = super().__copy__()
        copy._adopt_content()
        return copy

    def __deepcopy__(self, memo: dict[int, Any] | None = None) -> Message:
        copy = super().__deepcopy__(memo)
        copy._adopt_content()
        return copy

    def __setstate__(self, state: dict[Any, Any]) -> None:
        super().__setstate__(state)
        self._adopt_content()

    # -- constructors -------------------------------------------------------------------------------------

    @classmethod
    def from_blocks(
        cls, role: str, content: Sequence[ContentBlock], *, message_id: str, timestamp: float | None
    ) -> Message:
        """``Message(role=..., content=..., message_id=..., timestamp=...)`` for blocks that are already built
        (block objects, not dicts), without validating them again; anything unexpected goes to the constructor.

        For the library's own readers that build many messages (a reopened memory's compacted events).
        """
        blocks = BlockList(content)
        if (
            type(role) is str
            and role in _ROLE_SET
            and type(message_id) is str
            and (timestamp is None or type(timestamp) is float)
            and _BLOCK_TYPE_SET.issuperset(map(type, blocks))
        ):
            fields = {
                "message_id": message_id if message_id.isascii() else clean_id(message_id),
                "role": role,
                "content": blocks,
                "delta": False,
                "tools_calls": None,
                "reasoning": None,
                "timestamp": timestamp,
                "metadata": {},
                "usages": None,
                "raw": None,
            }
            return _make_message(fields, {"message_id", "role", "content", "timestamp"})
        return cls(role=role, content=list(content), message_id=message_id, timestamp=timestamp)  # type: ignore[arg-type]

    @classmethod
    def from_stored(cls, data: Any, *, clean: bool = True, fingerprint: str | None = None) -> Message:
        """The message whose ``model_dump(mode="json")`` is ``data`` (decoded JSON), built cheaply when it is in
        exactly that form, else validated in full (which raises `pydantic.ValidationError` for bad data).

        Reading a stored history builds every message again, and validation was most of the cost of reopening a
        session (a validator call per text field, a constructor per block). Here each value is checked to have the
        type the dump writes and gets the same boundary rule, so the result equals ``model_validate(data)``
        (``==``, fingerprint, fields set); anything else (records of other versions, hand edits) is validated.
        ``clean=False`` skips the boundary rule: only for data decoded by a parser that refuses lone surrogates.
        ``fingerprint``, when known for exactly this data (stored with it), is memoized on the message.
        """
        message = message_from_stored(data, clean) if type(data) is dict else None
        if message is None:
            message = cls.model_validate(data)
        if fingerprint is not None:
            message.__pydantic_private__["_fingerprint"] = fingerprint  # type: ignore[index]
        return message

    @classmethod
    def text_message(
        cls,
        text: str,
        role: Role = "user",
        message_id: str | int | None = None,
        **fields: Any,
    ) -> Message:
        """A message holding a single text block."""
        if message_id is not None:
            fields["message_id"] = message_id
        return cls(role=role, content=[TextBlock(text=text)], **fields)

    @classmethod
    def tool_message(
        cls,
        content: Sequence[ContentBlock],
        message_id: str | int | None = None,
        **fields: Any,
    ) -> Message:
        """A ``tool``-role message, normally holding `ToolResultBlock`s."""
        if message_id is not None:
            fields["message_id"] = message_id
        return cls(role="tool", content=list(content), **fields)

    # -- reading ------------------------------------------------------------------------------------------

    def text(self) -> str:
        """Concatenated text of the text blocks and tool results, in block order."""
        parts: list[str] = []
        for block in self.content:
            if isinstance(block, TextBlock):
                parts.append(block.text)
            elif isinstance(block, ToolResultBlock):
                parts.append(tool_output_text(block.output))
        return "".join(parts)

    def tool_call_blocks(self) -> list[ToolCallBlock]:
        """The tool calls this message requests.

        Taken from the content blocks; when a message carries only provider-native ``tools_calls`` dicts
        (OpenAI ``{"id", "function": {"name", "arguments"}}`` or flat ``{"id", "name", "args"}``) those are read.
        """
        blocks = [b for b in self.content if isinstance(b, ToolCallBlock)]
        if blocks or not self.tools_calls:
            return blocks
        out: list[ToolCallBlock] = []
        for raw in self.tools_calls:
            fn = raw.get("function") if isinstance(raw.get("function"), dict) else None
            name = (fn or {}).get("name", raw.get("name"))
            args: Any = (fn or {}).get("arguments", raw.get("args", raw.get("arguments", {})))
            if isinstance(args, str):
                try:
                    args = json.loads(args) if args.strip() else {}
                except json.JSONDecodeError:
                    args = {"_raw": args}
            if raw.get("id") is None or name is None:
                continue
            out.append(ToolCallBlock(id=str(raw["id"]), name=str(name), args=args if isinstance(args, dict) else {}))
        return out

    def tool_call_ids(self) -> list[str]:
        return [b.id for b in self.tool_call_blocks()]

    def tool_result_blocks(self) -> list[ToolResultBlock]:
        return [b for b in self.content if isinstance(b, ToolResultBlock)]

    def reasoning_text(self) -> str:
        """Reasoning from ``reasoning`` and any `ReasoningBlock`s."""
        parts = [self.reasoning] if self.reasoning else []
        parts.extend(b.text for b in self.content if isinstance(b, ReasoningBlock))
        return "\n".join(parts)

    def fingerprint(self) -> str:
        """A stable hash of what a model sees of this message; memoized until a field is reassigned."""
        # the memo is read and written in pydantic's private dict: its attribute path costs ~2 us per access,
        # as much as a counter's whole cache lookup
        private = self.__pydantic_private__
        fp = private.get("_fingerprint") if private is not None else self._fingerprint
        if fp is None:
            payload = {
                "r": self.role,
                # ``type`` is a default, so it is added back: a text and a reasoning block must not collide
                "c": [{**b.model_dump(mode="json", exclude_defaults=True), "type": b.type} for b in self.content],
                "t": self.tools_calls,
                "z": self.reasoning,
            }
            fp = hashlib.blake2b(_fingerprint_bytes(payload), digest_size=16).hexdigest()
            if private is not None:
                private["_fingerprint"] = fp
            else:
                self._fingerprint = fp
        return fp

    def with_content(self, content: Sequence[ContentBlock], **changes: Any) -> Message:
        """A copy with other content (same id), as used when a view replaces a message's body."""
        # built directly rather than through ``model_copy``: a budget manager makes one per cleared tool result,
        # and pydantic's copy plus a second content list for the update took 5.8 us where this takes 2.6 us
        unknown = changes.keys() - _MESSAGE_KEYS
        if unknown:
            raise TypeError(f"with_content() got unknown message field(s) {sorted(unknown)}; use {_MESSAGE_FIELDS}")
        fields = {**self.__dict__, **changes, "content": BlockList(content)}
        return _make_message(fields, {*self.__pydantic_fields_set__, "content", *changes})


_MESSAGE_FIELDS = (
    "message_id",
    "role",
    "content",
    "delta",
    "tools_calls",
    "reasoning",
    "timestamp",
    "metadata",
    "usages",
    "raw",
)
_MESSAGE_KEYS = frozenset(_MESSAGE_FIELDS)
_MESSAGE_FIELD_SET = set(_MESSAGE_FIELDS)
_ROLE_SET = frozenset(ROLES)
_BLOCK_TYPE_SET = frozenset(_BLOCK_TYPES)
_DICT_ONLY = frozenset({dict})
_new_object = object.__new__
_new_list = list.__new__
_list_append = list.append
_weak = weakref.ref


def message_from_stored(data: dict[str, Any], clean: bool = True) -> Message | None:
    """`Message.from_stored` without the fallback: ``None`` unless ``data`` is a dump's complete, exact form
    (for a reader whose fallback is another validation, e.g. ``model_validate_json`` of the text it decoded)."""
    if data.keys() != _MESSAGE_KEYS:
        return None
    role = data["role"]
    content = data["content"]
    message_id = data["message_id"]
    tools_calls = data["tools_calls"]
    reasoning = data["reasoning"]
    timestamp = data["timestamp"]
    metadata = data["metadata"]
    usages = data["usages"]
    raw = data["raw"]
    if (
        type(role) is not str
        or role not in _ROLE_SET
        or type(content) is not list
        or (type(message_id) is not str and type(message_id) is not int)
        or type(data["delta"]) is not bool
        or (
            tools_calls is not None
            and (type(tools_calls) is not list or not _DICT_ONLY.issuperset(map(type, tools_calls)))
        )
        or (reasoning is not None and type(reasoning) is not str)
        or (timestamp is not None and type(timestamp) is not float)
        or type(metadata) is not dict
        or (raw is not None and type(raw) is not dict)
        or (usages is not None and type(usages) is not dict)
    ):
        return None
    blocks = BlockList()
    for item in content:
        block = block_from_stored(item, clean=clean)
        if block is None:
            return None
        list.append(blocks, block)
    if usages is not None:  # a model of its own (extra fields allowed): validated, errors reported by the caller's
        try:
            usages = TokenUsages.model_validate(usages)
        except ValidationError:
            return None
    # new containers where validation makes them (their values shared, as validation leaves them)
    fields = {
        "message_id": message_id,
        "role": role,
        "content": blocks,
        "delta": data["delta"],
        "tools_calls": None if tools_calls is None else [dict(call) for call in tools_calls],
        "reasoning": reasoning,
        "timestamp": timestamp,
        "metadata": dict(metadata) if metadata else {},
        "usages": usages,
        "raw": None if raw is None else dict(raw),
    }
    if clean:  # what model_post_init does for validated messages
        for name in _CLEANED:
            value = fields[name]
            if value:
                fields[name] = _clean_field(name, value)
    return _make_message(fields)


def message_from_trusted(data: Any, fingerprint: str | None = None) -> Message | None:
    """The message whose dump ``data`` is, for data this library wrote itself and that is unchanged since: a log
    row whose stamp matches its body (`windowkeeper.storage.base.decode_message`), decoded by a parser that refuses
    lone surrogates. Such a body is the dump of a validated message, so only its shape is checked (the keys of
    every object, a role and block types this version knows) and its values are taken as decoded, in ``data``
    itself, where `message_from_stored` checks each value's type and copies its containers: reading a restarted
    thread's log costs about half as much. ``data`` becomes the message's field dict (the parser made it, in field
    order, and nothing else holds it), with ``fingerprint`` (stored with the row) memoized. ``None`` when the shape
    is not the one this version writes (a row of another version): the caller then checks it in full."""
    if type(data) is not dict or data.keys() != _MESSAGE_KEYS or data["role"] not in _ROLE_SET:
        return None
    content, timestamp = data["content"], data["timestamp"]
    if type(content) is not list or (timestamp is not None and type(timestamp) is not float):
        return None  # (an integral timestamp another writer stored must become the float validation makes it)
    blocks = _new_list(BlockList)  # filled as a plain list: its own append would validate and report an edit
    for item in content:
        block = block_from_trusted(item)
        if block is None:
            return None
        _list_append(blocks, block)
    usages = data["usages"]
    if usages is not None:  # a model of its own (extra fields allowed)
        try:
            data["usages"] = TokenUsages.model_validate(usages)
        except ValidationError:
            return None
    data["content"] = blocks
    # `_make_message` inlined (this runs for every message of a restarted thread's log), the list's one holder
    # set directly
    message = _new_object(Message)
    set_dict(message, data)
    set_fields_set(message, _MESSAGE_FIELD_SET.copy())
    set_extra(message, None)
    set_private(message, {"_fingerprint": fingerprint})
    blocks._owners = _weak(message)
    return message


def same_message(a: Message, b: Message) -> bool:
    """Whether ``b`` is ``a`` or an equal copy (same id, same content): a view read back from a checkpointer, or
    from the caller's own JSON.

    Fingerprints decide when both messages have one memoized (a store hands them back with the messages). When
    one lacks it, the fields a fingerprint covers are compared directly, type for type, which costs a few
    microseconds where a fingerprint serializes and hashes the whole message (tens): a conversation reloaded
    from the caller's own database is recognised at that price, and the known fingerprint is copied over, so
    nothing is hashed again later.
    """
    if a is b:
        return True
    if a.message_id != b.message_id:
        return False
    pa, pb = a.__pydantic_private__, b.__pydantic_private__
    fa = pa.get("_fingerprint") if pa is not None else None
    fb = pb.get("_fingerprint") if pb is not None else None
    if fa is not None and fb is not None:
        return bool(fa == fb)
    if _same_fields(a, b):
        if fa is not None and pb is not None:
            pb["_fingerprint"] = fa
        elif fb is not None and pa is not None:
            pa["_fingerprint"] = fb
        return True
    return a.fingerprint() == b.fingerprint()


def _same_fields(a: Message, b: Message) -> bool:
    """Whether ``a`` and ``b`` hold the same role, content, tool calls and reasoning (what `Message.fingerprint`
    hashes), compared type for type: ``1 == True`` and ``0.0 == -0.0`` in Python but not in JSON. False is not a
    verdict (the caller then compares fingerprints): only True must never be wrong."""
    if a.role != b.role or a.reasoning != b.reasoning:
        return False
    ca, cb = a.content, b.content
    if len(ca) != len(cb):
        return False
    for x, y in zip(ca, cb, strict=True):  # lengths checked above
        if type(x) is not type(y):
            return False
        dx, dy = x.__dict__, y.__dict__
        if dx != dy:  # in C; then only values other than text can still differ in type
            return False
        for key, value in dx.items():
            kind = type(value)
            if kind is str or value is None or (kind is list and not value):
                continue
            if not _same_json(value, dy[key]):
                return False
    calls, others = a.tools_calls, b.tools_calls
    return (calls is None and others is None) or (calls == others and _same_json(calls, others))


def _same_json(x: Any, y: Any) -> bool:
    """For ``x == y``: whether they also agree type for type. marshal (format 0: no interning or reference flags,
    floats as text) tells ``1``, ``True`` and ``1.0`` apart, in C; what it cannot encode is walked."""
    try:
        return marshal.dumps(x, 0) == marshal.dumps(y, 0)
    except ValueError:
        return _strict_equal(x, y)


def _strict_equal(x: object, y: object) -> bool:
    """``x == y`` where every value also has the same type (so both serialize to the same JSON)."""
    if x is y:
        return True
    kind = type(x)
    if kind is not type(y):
        return False
    if kind is str or kind is int or kind is bool:
        return x == y
    if kind is dict:
        assert isinstance(x, dict) and isinstance(y, dict)
        return x.keys() == y.keys() and all(_strict_equal(v, y[k]) for k, v in x.items())
    if kind is list or kind is tuple:
        assert isinstance(x, list | tuple) and isinstance(y, list | tuple)
        return len(x) == len(y) and all(map(_strict_equal, x, y))
    if kind is float:
        return bool(x == y) and repr(x) == repr(y)
    if isinstance(x, BaseModel) and isinstance(y, BaseModel):
        return x.__pydantic_extra__ == y.__pydantic_extra__ and _strict_equal(x.__dict__, y.__dict__)
    return False  # anything else: let the fingerprints decide


def _make_message(
    fields: dict[str, Any], fields_set: set[str] | None = None, fingerprint: str | None = None
) -> Message:
    """A `Message` holding ``fields`` (all of them, validated and cleaned, ``content`` a new `BlockList`);
    ``fields_set`` as the constructor records it (default: every field, as validating a dump records it);
    ``fingerprint`` memoized when known for exactly these fields."""
    message = _new_object(Message)
    set_dict(message, fields)
    set_fields_set(message, _MESSAGE_FIELD_SET.copy() if fields_set is None else fields_set)
    set_extra(message, None)
    set_private(message, {"_fingerprint": fingerprint})
    fields["content"]._own(message)
    return message
