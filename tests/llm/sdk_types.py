"""Checking what windowkeeper writes against the official SDKs' request types, unknown keys included.

A pydantic ``TypeAdapter`` over an SDK's TypedDicts checks types and required keys but ignores keys a TypedDict
does not declare (and ``extra="forbid"`` reaches the top level only), so `sdk_problems` also walks the value
against the TypedDict annotations and reports every key no SDK type declares, however deep.
"""

from __future__ import annotations

import functools
import typing
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from pydantic import PydanticSchemaGenerationError, TypeAdapter, ValidationError


@functools.cache
def _adapter(tp: Any) -> TypeAdapter[Any]:
    return TypeAdapter(tp)


def _unwrap(tp: Any) -> Any:
    while True:
        origin = typing.get_origin(tp)
        if origin in (typing.Required, typing.NotRequired, typing.Annotated):
            tp = typing.get_args(tp)[0]
            continue
        return tp


@functools.cache
def _hints(td: Any) -> dict[str, Any]:
    return typing.get_type_hints(td, include_extras=True)


def _is_typeddict(tp: Any) -> bool:
    return isinstance(tp, type) and issubclass(tp, dict) and hasattr(tp, "__annotations__") and hasattr(tp, "__total__")


def unknown_keys(value: Any, tp: Any, path: str = "") -> list[str] | None:
    """Paths of keys in ``value`` that ``tp`` does not declare (None when ``value`` does not fit ``tp`` at all)."""
    tp = _unwrap(tp)
    origin = typing.get_origin(tp)
    if origin is typing.Union or (origin is not None and str(origin) == "<class 'types.UnionType'>"):
        best: list[str] | None = None
        for member in typing.get_args(tp):
            try:
                _adapter(member).validate_python(value)
            except (ValidationError, PydanticSchemaGenerationError):  # the latter: a member of files (IO[bytes])
                continue
            found = unknown_keys(value, member, path)
            if found is not None and (best is None or len(found) < len(best)):
                best = found
        return best
    if _is_typeddict(tp):
        if not isinstance(value, Mapping):
            return None
        hints = _hints(tp)
        out = [f"{path}.{k}" if path else str(k) for k in value if k not in hints]
        for key, item in value.items():
            if key in hints:
                inner = unknown_keys(item, hints[key], f"{path}.{key}" if path else str(key))
                out.extend(inner or [])
        return out
    if origin in (list, Iterable, Sequence, typing.Iterable, typing.Sequence) or (
        origin is not None and getattr(origin, "__name__", "") in ("Iterable", "Sequence", "list")
    ):
        (inner_tp,) = typing.get_args(tp) or (Any,)
        if isinstance(value, str) or not isinstance(value, list | tuple):
            return None
        out = []
        for j, item in enumerate(value):
            out.extend(unknown_keys(item, inner_tp, f"{path}[{j}]") or [])
        return out
    return []


def sdk_problems(items: Sequence[Any], tp: Any) -> list[str]:
    """Every way ``items`` break the SDK type ``tp`` of one item: validation errors and unknown keys, by index."""
    problems: list[str] = []
    adapter = _adapter(tp)
    for i, item in enumerate(items):
        try:
            adapter.validate_python(item)
        except ValidationError as exc:
            problems.append(f"item {i}: {exc.errors()[0]}")
            continue
        for key in unknown_keys(item, tp) or []:
            problems.append(f"item {i}: unknown key {key}")
    return problems
