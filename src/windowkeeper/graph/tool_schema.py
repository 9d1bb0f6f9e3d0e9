"""Tool specs for the model from a plain Python function: JSON schema from the signature, text from the docstring.

One pydantic model per tool serves twice: its JSON schema is what the model is shown, and validating the model's
arguments with it gives coercion and precise error text for bad arguments. Fields are stored under neutral names
with the parameter names as aliases, so a parameter called ``json`` or ``copy`` cannot clash with BaseModel.
"""

from __future__ import annotations

import inspect
import re
import typing
from collections.abc import Callable, Collection
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, create_model

from ..errors import ConfigurationError

_GOOGLE_HEADERS = re.compile(r"^\s*(Args|Arguments|Parameters|Params|Keyword Args|Keyword Arguments)\s*:\s*$")
_SECTION_HEADERS = re.compile(
    r"^\s*(Args|Arguments|Parameters|Params|Keyword Args|Keyword Arguments|Returns?|Yields?|Raises?|Examples?|"
    r"Notes?|See Also|Warnings?|References|Attributes|Other Parameters)\s*:?\s*$",
)
_GOOGLE_PARAM = re.compile(r"^(\*{0,2}\w+)\s*(\([^)]*\))?\s*:\s*(.*)$")
_NUMPY_PARAM = re.compile(r"^(\*{0,2}\w+)\s*(:.*)?$")
_SPHINX_PARAM = re.compile(r"^\s*:param\s+(?:[^:]*\s)?(\w+)\s*:\s*(.*)$")


@dataclass(frozen=True)
class ParsedDocstring:
    description: str
    params: dict[str, str]


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


def parse_docstring(doc: str | None) -> ParsedDocstring:
    """Summary text and per-parameter descriptions from a Google, NumPy or Sphinx style docstring."""
    if not doc:
        return ParsedDocstring("", {})
    lines = inspect.cleandoc(doc).splitlines()
    params: dict[str, str] = {}
    description: list[str] = []
    i = 0
    in_description = True
    while i < len(lines):
        line = lines[i]
        sphinx = _SPHINX_PARAM.match(line)
        if sphinx:
            in_description = False
            name = sphinx.group(1)
            text: list[str] = [sphinx.group(2).strip()]
            i += 1
            while i < len(lines) and lines[i].strip() and not lines[i].lstrip().startswith(":"):
                text.append(lines[i].strip())
                i += 1
            params[name] = " ".join(t for t in text if t)
            continue
        if line.lstrip().startswith(":"):
            in_description = False
            i += 1
            continue
        numpy_header = (
            i + 1 < len(lines) and re.fullmatch(r"\s*-{3,}\s*", lines[i + 1]) is not None and line.strip() != ""
        )
        if numpy_header:
            in_description = False
            section = line.strip().lower()
            i += 2
            while i < len(lines):
                if i + 1 < len(lines) and re.fullmatch(r"\s*-{3,}\s*", lines[i + 1]) and lines[i].strip():
                    break
                entry = lines[i]
                if entry.strip() and _indent(entry) == 0 and section in ("parameters", "other parameters"):
                    match = _NUMPY_PARAM.match(entry.strip())
                    i += 1
                    text = []
                    while i < len(lines) and (not lines[i].strip() or _indent(lines[i]) > 0):
                        if lines[i].strip():
                            text.append(lines[i].strip())
                        i += 1
                    if match:
                        for name in match.group(1).split(","):
                            params[name.strip().lstrip("*")] = " ".join(text)
                    continue
                i += 1
            continue
        if _GOOGLE_HEADERS.match(line):
            in_description = False
            base = _indent(line)
            i += 1
            current: str | None = None
            entry_indent: int | None = None
            while i < len(lines):
                entry = lines[i]
                if entry.strip() and _indent(entry) <= base:
                    break
                if not entry.strip():
                    i += 1
                    continue
                if entry_indent is None:
                    entry_indent = _indent(entry)
                match = _GOOGLE_PARAM.match(entry.strip())
                if match and _indent(entry) == entry_indent:
                    current = match.group(1).lstrip("*")
                    params[current] = match.group(3).strip()
                elif current is not None:
                    params[current] = f"{params[current]} {entry.strip()}".strip()
                i += 1
            continue
        if _SECTION_HEADERS.match(line):
            in_description = False
        elif in_description:
            description.append(line)
        i += 1
    text_out = "\n".join(description).strip()
    return ParsedDocstring(re.sub(r"\n{3,}", "\n\n", text_out), params)


def _strip_titles(schema: Any) -> Any:
    """Drop pydantic's auto-generated ``title`` keys: noise for the model, tokens for the bill."""
    if isinstance(schema, dict):
        out: dict[str, Any] = {}
        for key, value in schema.items():
            if key == "title" and isinstance(value, str):
                continue
            if key == "properties" and isinstance(value, dict):
                out[key] = {name: _strip_titles(prop) for name, prop in value.items()}
            else:
                out[key] = _strip_titles(value)
        return out
    if isinstance(schema, list):
        return [_strip_titles(v) for v in schema]
    return schema


@dataclass(frozen=True)
class ToolSignature:
    """The model-facing spec of one tool and the validator for its arguments."""

    name: str
    description: str
    parameters: dict[str, Any]
    args_model: type[BaseModel]
    field_names: dict[str, str]  # alias (parameter name) -> model field name

    def spec(self) -> dict[str, Any]:
        return {"name": self.name, "description": self.description, "parameters": self.parameters}

    def validate(self, args: dict[str, Any]) -> dict[str, Any]:
        """Arguments coerced to the annotated types, keyed by parameter name; raises pydantic ValidationError."""
        model = self.args_model.model_validate(args)
        extra = dict(model.model_extra or {})
        out = {alias: getattr(model, field) for alias, field in self.field_names.items()}
        out.update(extra)
        return out


def tool_signature(fn: Callable[..., Any], *, name: str | None = None, skip: Collection[str] = ()) -> ToolSignature:
    """Build the spec and argument validator of ``fn``; parameters in ``skip`` are filled by the runtime."""
    tool_name = name or getattr(fn, "__name__", None)
    if not tool_name or not re.fullmatch(r"[A-Za-z0-9_-]{1,64}", tool_name):
        raise ConfigurationError(
            f"tool name {tool_name!r} is not usable by providers; use 1-64 letters, digits, '_' or '-' "
            "(rename the function or wrap it)",
        )
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError) as exc:
        raise ConfigurationError(f"cannot read the signature of tool {tool_name!r}: {exc}") from exc
    try:
        hints = typing.get_type_hints(fn, include_extras=True)
    except Exception:
        hints = {}
    doc = parse_docstring(inspect.getdoc(fn))
    fields: dict[str, Any] = {}
    field_names: dict[str, str] = {}
    allow_extra = False
    for index, param in enumerate(sig.parameters.values()):
        if param.name in skip:
            continue
        if param.kind is inspect.Parameter.VAR_KEYWORD:
            allow_extra = True
            continue
        if param.kind is inspect.Parameter.VAR_POSITIONAL:
            continue
        annotation = hints.get(param.name, param.annotation)
        if annotation is inspect.Parameter.empty:
            annotation = Any
        default = ... if param.default is inspect.Parameter.empty else param.default
        field_name = f"p{index}"
        description = doc.params.get(param.name)
        fields[field_name] = (annotation, Field(default, alias=param.name, description=description))
        field_names[param.name] = field_name
    config = ConfigDict(extra="allow" if allow_extra else "forbid", arbitrary_types_allowed=True)
    try:
        model = create_model(f"{tool_name}_args", __config__=config, **fields)
        schema = _strip_titles(model.model_json_schema(by_alias=True))
    except Exception as exc:
        raise ConfigurationError(
            f"tool {tool_name!r}: cannot build a JSON schema from its parameter types ({exc}); "
            "use JSON-compatible annotations (str, int, float, bool, list, dict, Literal, Enum, pydantic models)",
        ) from exc
    schema.setdefault("properties", {})
    schema["type"] = "object"
    return ToolSignature(
        name=tool_name,
        description=doc.description or f"Call {tool_name}.",
        parameters=schema,
        args_model=model,
        field_names=field_names,
    )
