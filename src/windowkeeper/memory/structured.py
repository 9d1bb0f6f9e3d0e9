"""Structured summaries of memory events: the tier-3 record that replaces many events in a working view.

A free-text summary loses the things an agent needs to resume work (which files it touched, what it decided,
the error it is chasing). `StructuredSummary` keeps those as fields, so they survive repeated re-summarizing and
can be rendered compactly or inspected by code.

Events use the memory layer's dict shape: ``{"message": {"id", "role", "content", "timestamp", "tool_calls"?,
"tool_call_id"?}, "state": {...}}``. Three ways to produce a summary:

* `ExtractiveStructuredSummarizer` (the default): offline and deterministic, built from patterns in the text;
* `StructuredLLMSummarizer`: asks a model for the structure as JSON and validates the reply;
* any sync or async callable ``fn(events) -> StructuredSummary | dict | str``, or a text `Summarizer`, adapted by
  `as_structured_summarizer`.
"""

from __future__ import annotations

import inspect
import json
import re
import uuid
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any, Protocol, runtime_checkable

from pydantic import AliasChoices, BaseModel, ConfigDict, Field, PrivateAttr, ValidationError

from .._bridge import run_in_daemon
from ..blocks import TextBlock, ToolCallBlock, ToolResultBlock
from ..errors import ConfigurationError, ProviderError
from ..messages import ROLES, Message
from ..summarize.salience import DETECTORS
from ..summarize.transcript import render_transcript

Event = Mapping[str, Any]

# Caps keep a summary's size bounded however long the session grows; newest items win for decisions.
MAX_DECISIONS = 24
MAX_FILES = 64
MAX_ERRORS = 8
MAX_MEASUREMENTS = 16
MAX_TEXT = 300
NOTES_KEY = "notes"
"""The ``critical_context`` entry of `with_notes`: sentences said once, kept word for word, oldest first."""
MAX_NOTE = 200

REFERENCE_FIELDS = frozenset({"count", "time_range", "timestamp"})
"""The reference's own summary shape: a summarizer that states any of these (even with no content field) has
said what the reference asks of it, so its summary may replace the events."""


class TimeRange(BaseModel):
    """When the summarized events happened (either end may be unknown)."""

    model_config = ConfigDict(extra="ignore")

    start: datetime | None = None
    end: datetime | None = None


def _now() -> datetime:
    return datetime.now(UTC)


class StructuredSummary(BaseModel):
    """What a run of events established, as fields an agent can rely on.

    ``covered_ids`` are the event ids this summary replaced in the view; ``supersedes`` names earlier summaries
    whose content was folded into this one (they leave the view too). Camel-case keys (``timeRange``,
    ``keyDecisions``...) are accepted so JSON from TypeScript-style prompts validates unchanged.
    """

    model_config = ConfigDict(extra="allow", populate_by_name=True)

    id: str = Field(default_factory=lambda: uuid.uuid4().hex)
    count: int = Field(default=0, ge=0)
    time_range: TimeRange = Field(default_factory=TimeRange, validation_alias=AliasChoices("time_range", "timeRange"))
    timestamp: datetime = Field(default_factory=_now)
    user_goal: str | None = Field(default=None, validation_alias=AliasChoices("user_goal", "userGoal"))
    last_step: str | None = Field(default=None, validation_alias=AliasChoices("last_step", "lastStep"))
    key_decisions: list[str] = Field(
        default_factory=list, validation_alias=AliasChoices("key_decisions", "keyDecisions")
    )
    modified_files: list[str] = Field(
        default_factory=list, validation_alias=AliasChoices("modified_files", "modifiedFiles")
    )
    critical_context: dict[str, Any] = Field(
        default_factory=dict, validation_alias=AliasChoices("critical_context", "criticalContext")
    )
    covered_ids: list[str] = Field(default_factory=list, validation_alias=AliasChoices("covered_ids", "coveredIds"))
    supersedes: list[str] = Field(default_factory=list)
    _reference_shaped: bool | None = PrivateAttr(default=None)  # set by `coerce_summary`, from what was stated

    def is_empty(self) -> bool:
        """True when the summary says nothing: no goal, step, decision, file or context entry.

        Such a summary must never replace events, since they would leave the view with nothing in their place.
        """
        return not (
            (self.user_goal or "").strip()
            or (self.last_step or "").strip()
            or any(str(d).strip() for d in self.key_decisions)
            or any(str(f).strip() for f in self.modified_files)
            or self.critical_context
        )

    def says_something(self) -> bool:
        """True when the summary may stand in for its events: it has content, or its summarizer stated the
        reference's shape (count, time range or timestamp). A reply with neither, such as ``{}`` or only empty
        content fields, is a broken summarizer, and the events must not leave the view for it.
        """
        stated = self._reference_shaped
        if stated is None:
            stated = bool(REFERENCE_FIELDS & self.model_fields_set)
        return stated or not self.is_empty()

    def render(self) -> str:
        """The text a model reads in place of the covered events: short labelled lines, empty fields left out."""
        span = ""
        if self.time_range.start or self.time_range.end:
            start = self.time_range.start.isoformat() if self.time_range.start else "?"
            end = self.time_range.end.isoformat() if self.time_range.end else "?"
            span = f", {start} to {end}"
        lines = [f"[Summary of {self.count} earlier events{span}]"]
        if self.user_goal:
            lines.append(f"Goal: {self.user_goal}")
        if self.last_step:
            lines.append(f"Last step: {self.last_step}")
        if self.key_decisions:
            lines.append("Decisions:")
            lines.extend(f"- {d}" for d in self.key_decisions)
        if self.modified_files:
            lines.append("Modified files: " + ", ".join(self.modified_files))
        for key, value in self.critical_context.items():
            shown = "; ".join(map(str, value)) if isinstance(value, list) else str(value)
            lines.append(f"{key}: {shown}")
        return "\n".join(lines)


# -- reading events ---------------------------------------------------------------------------------------------


def _message(event: Event) -> Mapping[str, Any]:
    msg = event.get("message") if isinstance(event, Mapping) else None
    if not isinstance(msg, Mapping):
        raise ConfigurationError(f"event {event!r} has no 'message' dict; events look like {{'message': {{...}}}}")
    return msg


def event_tool_calls(event: Event) -> list[tuple[str, str, dict[str, Any]]]:
    """``(id, name, args)`` of the tool calls an event's message requests, from flat or OpenAI-style dicts."""
    raw_calls = _message(event).get("tool_calls") or []
    out: list[tuple[str, str, dict[str, Any]]] = []
    for index, raw in enumerate(raw_calls):
        if not isinstance(raw, Mapping):
            continue
        fn_raw = raw.get("function")
        fn: Mapping[str, Any] = fn_raw if isinstance(fn_raw, Mapping) else {}
        name = fn.get("name", raw.get("name"))
        args: Any = fn.get("arguments", raw.get("arguments", raw.get("args", {})))
        if isinstance(args, str):
            try:
                args = json.loads(args) if args.strip() else {}
            except json.JSONDecodeError:
                args = {"_raw": args}
        call_id = raw.get("id", f"call_{index}")
        out.append((str(call_id), str(name or "tool"), dict(args) if isinstance(args, Mapping) else {}))
    return out


def event_timestamp(event: Event) -> datetime | None:
    """The event's message timestamp as an aware datetime (epoch seconds, ISO strings and datetimes accepted)."""
    value = _message(event).get("timestamp")
    if value is None:
        return None
    try:
        parsed = TimeRange.model_validate({"start": value}).start
    except ValidationError:
        return None
    if parsed is not None and parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    return parsed


def events_to_messages(events: Sequence[Event]) -> list[Message]:
    """Events as `Message` objects (text content, tool calls and results as blocks), for text summarizers."""
    out: list[Message] = []
    for event in events:
        msg = _message(event)
        role = msg.get("role") if msg.get("role") in ROLES else "user"
        text = str(msg.get("content") or "")
        blocks: list[Any] = []
        if role == "tool" and msg.get("tool_call_id"):
            blocks.append(ToolResultBlock(call_id=str(msg["tool_call_id"]), output=text, name=msg.get("name")))
        elif text:
            blocks.append(TextBlock(text=text))
        if role == "assistant":
            blocks.extend(ToolCallBlock(id=cid, name=name, args=args) for cid, name, args in event_tool_calls(event))
        out.append(Message(message_id=str(msg.get("id", uuid.uuid4().hex)), role=role, content=blocks))
    return out


# -- extraction patterns ----------------------------------------------------------------------------------------

_CJK_STOPS = "\u3002\uff01\uff1f\uff1b"  # ideographic full stop, fullwidth ! ? ;
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|(?<=[" + _CJK_STOPS + r"])|\n+")
# One fact vocabulary: the extractive text summarizer's detectors (summarize/salience.py) decide what a decision,
# an error and a quantity are; the structured summary only adds what its fields need on top (change verbs that
# make a decision, Chinese forms).
_DECISION = re.compile(
    DETECTORS["decision"].pattern
    + r"|\b(?:we will|going to|opted|increas(?:e|ed|ing)|decreas(?:e|ed|ing)|reduc(?:e|ed|ing)|rais(?:e|ed)|"
    r"lower(?:ed)?|add(?:ed)?\s+(?:a|an|the)?\s*\w+\s+(?:logic|check|retry|cache|index|limit|timeout|guard|lock)|"
    r"implement(?:ed)?|introduc(?:e|ed)|enabl(?:e|ed)|disabl(?:e|ed)|replac(?:e|ed)|migrat(?:e|ed)|"
    r"pinn?(?:ed)?|set\s+\S+\s+to|use\s+\w+\s+instead)\b"
    r"|\b(?:approach|plan|fix)\s*:"
    r"|决定|方案|改为|采用|换成|我们将|选择|引入|增加到|提高到|降低到|启用|禁用",
    re.IGNORECASE,
)
_FILE_TOOL = re.compile(r"edit|write|creat|patch|replace|update|apply|save|modif|insert|append|rename|move|str_replace")
_PATH_ARG_KEYS = ("path", "file", "file_path", "filepath", "filename", "target", "target_file", "dest", "destination")
_PATH = r"[\w./\\-]*[\w-]\.[A-Za-z0-9]{1,8}|[\w.-]+/[\w./-]*\w"
_FILE_VERB = re.compile(
    r"(?:\b(?:modified|updated|created|edited|wrote|rewrote|changed|patched|fixed|saved|touched)\s+"
    r"(?:the\s+|a\s+|new\s+)?(?:file\s+|module\s+)?|(?:修改了|更新了|创建了|编辑了|改动了|新建了)\s*(?:文件\s*)?)"
    r"[`'\"]?(" + _PATH + r")[`'\"]?",
    re.IGNORECASE,
)
_ERROR = re.compile(
    r"\b[A-Z]\w*(?:Error|Exception|Timeout|Failure)\b|\bTraceback\b|\b(?:timed out|connection refused|"
    r"permission denied|segmentation fault|out of memory)\b|错误|失败|超时|异常|崩溃",
    re.IGNORECASE,
)
_PROGRESS = re.compile(r"\[\s*\d+%\]")
_TOOL_LINE = "[tool call "
_GREETING_WORDS = 3
_MEASURE = re.compile(
    DETECTORS["quantity"].pattern
    + r"|(?<![\w.])\d[\d,]*(?:\.\d+)?\s?(?:毫秒|秒|分钟|小时|天|个用户|用户|个请求|次|个连接|连接|行|条|%)",
)
_ENVIRONMENT = re.compile(
    r"\b(production|staging|development|prod|dev|qa|sandbox)\b|(生产环境|测试环境|预发环境|开发环境)", re.IGNORECASE
)


_DECISION_LABEL = re.compile(
    r"^(?:decision|approach|plan|fix)\s*[:\uff1a]\s*|^(?:决定|方案)\s*[:\uff1a]\s*", re.IGNORECASE
)


def decision_text(sentence: str) -> str:
    """A decision sentence without its "Decision:" style label, so restatements deduplicate."""
    return _clip(_DECISION_LABEL.sub("", sentence), 200)


def _clip(text: str, limit: int = MAX_TEXT) -> str:
    text = " ".join(text.split()) if " " in text else text.strip()
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def sentences(text: str) -> list[str]:
    """Sentences and lines of ``text`` (Latin and CJK punctuation), stripped, empty ones dropped."""
    return [s.strip() for s in _SENTENCE_END.split(text) if s and s.strip()]


def _add_unique(target: list[str], items: Iterable[str], cap: int | None = None) -> None:
    seen = {t.casefold() for t in target}
    for item in items:
        folded = item.casefold()
        if item and folded not in seen:
            seen.add(folded)
            target.append(item)
    if cap is not None and len(target) > cap:
        del target[: len(target) - cap]


def files_in_event(event: Event) -> list[str]:
    """Paths written by the event: arguments of file-editing tool calls, and "modified/updated/created X" text."""
    found: list[str] = []
    for _cid, name, args in event_tool_calls(event):
        if not _FILE_TOOL.search(name.lower()):
            continue
        for key in _PATH_ARG_KEYS:
            value = args.get(key)
            if isinstance(value, str) and value.strip():
                found.append(value.strip())
            elif isinstance(value, list):
                found.extend(v for v in value if isinstance(v, str) and v.strip())
    msg = _message(event)
    if msg.get("role") != "tool":
        found.extend(m.group(1).rstrip(".") for m in _FILE_VERB.finditer(str(msg.get("content") or "")))
    return found


def _state_context(event: Event) -> dict[str, Any]:
    state = event.get("state") if isinstance(event, Mapping) else None
    if not isinstance(state, Mapping):
        return {}
    return {
        str(k): v
        for k, v in state.items()
        if not str(k).startswith("__") and k != "session_id" and isinstance(v, str | int | float | bool)
    }


def _describe_call(name: str, args: Mapping[str, Any]) -> str:
    for key in (*_PATH_ARG_KEYS, "command", "query", "url"):
        if isinstance(args.get(key), str):
            return f"called {name}({_clip(args[key], 80)})"
    return f"called {name}"


# -- summarizers --------------------------------------------------------------------------------------------


def _merge_previous(summary: StructuredSummary, previous: Sequence[StructuredSummary]) -> StructuredSummary:
    """Fold earlier summaries into ``summary`` so the newest one alone carries the whole session's facts."""
    if not previous:
        return summary
    decisions: list[str] = []
    files: list[str] = []
    context: dict[str, Any] = {}
    for prev in (*previous, summary):
        _add_unique(decisions, prev.key_decisions)
        _add_unique(files, prev.modified_files)
        for key, value in prev.critical_context.items():
            if isinstance(value, list) and isinstance(context.get(key), list):
                merged = list(context[key])
                _add_unique(merged, map(str, value))
                context[key] = merged
            elif key not in context or prev is summary:
                context[key] = value
    starts = [p.time_range.start for p in (*previous, summary) if p.time_range.start]
    ends = [p.time_range.end for p in (*previous, summary) if p.time_range.end]
    return summary.model_copy(
        update={
            "count": summary.count + sum(p.count for p in previous),
            "time_range": TimeRange(start=min(starts) if starts else None, end=max(ends) if ends else None),
            "user_goal": next((p.user_goal for p in previous if p.user_goal), summary.user_goal),
            "last_step": summary.last_step or previous[-1].last_step,
            "key_decisions": decisions[-MAX_DECISIONS:],
            "modified_files": files[-MAX_FILES:],
            "critical_context": context,
            "supersedes": [p.id for p in previous],
        }
    )


def summarize_structured(events: Sequence[Event], *, previous: Sequence[StructuredSummary] = ()) -> StructuredSummary:
    """Extract a `StructuredSummary` from ``events`` with no model call; same input, same fields.

    Goal = the first user request; last step = the last assistant action; decisions = sentences that state a
    choice or a change; files = paths written by edit/write tool calls or named after "modified/updated/created";
    critical context = error lines, numbers with units, the environment, and scalar values from event state.
    ``previous`` summaries are folded in (and listed in ``supersedes``).
    """
    goal: str | None = None
    last_step: str | None = None
    decisions: list[str] = []
    files: list[str] = []
    errors: list[str] = []
    measurements: list[str] = []
    environment: str | None = None
    state_context: dict[str, Any] = {}
    ids: list[str] = []
    stamps: list[datetime] = []
    for event in events:
        msg = _message(event)
        if msg.get("id") is not None:
            ids.append(str(msg["id"]))
        stamp = event_timestamp(event)
        if stamp is not None:
            stamps.append(stamp)
        role = msg.get("role")
        text = str(msg.get("content") or "")
        for key, value in _state_context(event).items():
            state_context.setdefault(key, value)
        parts = [p for p in sentences(_PROGRESS.sub("", text)) if not p.startswith(_TOOL_LINE)]
        if role == "user" and goal is None:
            # skip greetings ("Hi!") so the goal is the request itself
            asks = [p for p in parts if len(p.split()) >= _GREETING_WORDS or len(p) >= 12]
            if asks:
                goal = _clip(asks[0])
        if role == "assistant":
            calls = event_tool_calls(event)
            if parts:
                last_step = _clip(parts[0], 200)
            elif calls:
                last_step = _describe_call(calls[-1][1], calls[-1][2])
        if role in ("user", "assistant"):
            _add_unique(decisions, (decision_text(s) for s in parts if _DECISION.search(s)))
        _add_unique(files, files_in_event(event))
        _add_unique(errors, (_clip(s, 200) for s in parts if _ERROR.search(s)), MAX_ERRORS)
        _add_unique(measurements, (" ".join(m.group(0).split()) for m in _MEASURE.finditer("\n".join(parts))))
        if environment is None:
            env = _ENVIRONMENT.search(text)
            if env:
                environment = (env.group(1) or env.group(2)).lower()
    if goal is None and last_step is None and not decisions and not files:
        # nothing matched a pattern: keep the newest text verbatim-ish rather than an empty summary
        texts = [str(_message(e).get("content") or "").strip() for e in events]
        last_step = next((_clip(t, 200) for t in reversed(texts) if t), None)
    context: dict[str, Any] = {}
    if errors:
        context["errors"] = errors
    if measurements:
        context["measurements"] = measurements[:MAX_MEASUREMENTS]
    if environment is not None:
        context["environment"] = state_context.pop("environment", environment)
    context.update(state_context)
    summary = StructuredSummary(
        count=len(events),
        time_range=TimeRange(start=min(stamps) if stamps else None, end=max(stamps) if stamps else None),
        user_goal=goal,
        last_step=last_step,
        key_decisions=decisions[-MAX_DECISIONS:],
        modified_files=files[-MAX_FILES:],
        critical_context=context,
        covered_ids=ids,
    )
    return _merge_previous(summary, previous)


_LIST_KEYS = (NOTES_KEY, "measurements", "errors")
"""The ``critical_context`` lists `fit_summary` shortens item by item (oldest first), in this order."""


def _removal_order(summary: StructuredSummary) -> list[tuple[str, Any]]:
    """What `fit_summary` gives up first: the oldest notes (`with_notes`), oldest measurements and errors, older
    decisions and files (one of each kept), the other context entries, then the last decision and file."""
    order: list[tuple[str, Any]] = []
    for key in _LIST_KEYS:
        value = summary.critical_context.get(key)
        if isinstance(value, list):
            order.extend(("item", (key, i)) for i in range(len(value)))
    order.extend(("decision", i) for i in range(len(summary.key_decisions) - 1))
    order.extend(("file", i) for i in range(len(summary.modified_files) - 1))
    order.extend(("context", key) for key in summary.critical_context if key not in _LIST_KEYS)
    if summary.key_decisions:
        order.append(("decision", len(summary.key_decisions) - 1))
    if summary.modified_files:
        order.append(("file", len(summary.modified_files) - 1))
    return order


def _item_text(summary: StructuredSummary, step: tuple[str, Any]) -> str:
    kind, ref = step
    if kind == "item":
        return str(summary.critical_context[ref[0]][ref[1]])
    if kind == "decision":
        return f"- {summary.key_decisions[ref]}"
    if kind == "file":
        return str(summary.modified_files[ref])
    value = summary.critical_context[ref]
    return f"{ref}: {'; '.join(map(str, value)) if isinstance(value, list) else value}"


def _without(summary: StructuredSummary, dropped: Sequence[tuple[str, Any]]) -> StructuredSummary:
    gone = set(map(repr, dropped))
    context: dict[str, Any] = {}
    for key, value in summary.critical_context.items():
        if repr(("context", key)) in gone:
            continue
        if isinstance(value, list) and key in _LIST_KEYS:
            value = [v for i, v in enumerate(value) if repr(("item", (key, i))) not in gone]
            if not value:
                continue
        context[key] = value
    return summary.model_copy(
        update={
            "key_decisions": [d for i, d in enumerate(summary.key_decisions) if repr(("decision", i)) not in gone],
            "modified_files": [f for i, f in enumerate(summary.modified_files) if repr(("file", i)) not in gone],
            "critical_context": context,
        }
    )


def fit_summary(summary: StructuredSummary, count_text: Callable[[str], int], max_tokens: int) -> StructuredSummary:
    """Shrink ``summary`` until its rendering fits ``max_tokens``: oldest measurements, errors, decisions, then
    files go first, and long texts are clipped last. A summary bigger than what it replaced would defeat tier 3.

    Linear in the summary's size: each item is counted once and dropped against a running estimate, and the
    real count is re-checked only a logarithmic number of times, so a 10,000-item reply fits in well under a
    second instead of re-rendering after every dropped item.
    """
    total = count_text(summary.render())
    if total <= max_tokens:
        return summary
    order = _removal_order(summary)
    costs = [count_text(_item_text(summary, step)) + 1 for step in order]
    cut = 0
    estimate = total
    while cut < len(order) and estimate > max_tokens:
        estimate -= costs[cut]
        cut += 1

    def fits(n: int) -> bool:
        return count_text(_without(summary, order[:n]).render()) <= max_tokens

    # The estimate is close but not exact (tokens do not add up across lines): search around it, doubling the
    # step, for a bracket (low does not fit, high fits), then bisect to the fewest items given up. fits(0) is
    # False since the whole summary is over the limit.
    step = 1
    if fits(cut):
        high, low = cut, cut - 1
        while low > 0 and fits(low):
            high, low = low, max(0, low - step)
            step *= 2
        low = max(low, 0)
    else:
        low, high = cut, min(len(order), cut + 1)
        while high < len(order) and not fits(high):
            low, high = high, min(len(order), high + step)
            step *= 2
    while low + 1 < high:
        middle = (low + high) // 2
        if fits(middle):
            high = middle
        else:
            low = middle
    fitted = _without(summary, order[:high])
    for field in ("user_goal", "last_step"):
        while count_text(fitted.render()) > max_tokens:
            text = getattr(fitted, field) or ""
            if len(text) <= 40:
                break
            fitted = fitted.model_copy(update={field: _clip(text, max(40, len(text) // 2))})
    return fitted


_NOTE_WORD = re.compile(r"\w+")


def _said_once(events: Sequence[Event]) -> tuple[list[tuple[int, str, str]], dict[str, int]]:
    """The short messages people said in ``events`` (position, speaker, text; at most `MAX_NOTE` characters, user
    and assistant only) and in how many events each word occurs."""
    found: list[tuple[int, str, str]] = []
    seen: dict[str, int] = {}
    for index, event in enumerate(events):
        msg = _message(event)
        role = str(msg.get("role") or "")
        text = str(msg.get("content") or "")
        if role == "system" or not text:
            continue
        for word in {w.casefold() for w in _NOTE_WORD.findall(text)}:
            seen[word] = seen.get(word, 0) + 1
        line = " ".join(text.split())
        if role in ("user", "assistant") and len(line) <= MAX_NOTE and not line.startswith(_TOOL_LINE):
            found.append((index, str(msg.get("name") or role), line))
    return found, seen


def with_notes(
    summary: StructuredSummary, events: Sequence[Event], count_text: Callable[[str], int], max_tokens: int
) -> StructuredSummary:
    """``summary`` with the room it leaves under ``max_tokens`` filled by notes: the short messages of ``events``
    (a line of at most `MAX_NOTE` characters, as a person says it in a chat) kept word for word, the ones with the
    most words said in no other of these events first (a name, a date, a place said once; small talk said every
    day has none), shown in conversation order after the notes of the summaries folded in. When the notes outgrow
    the room, `fit_summary` gives up the oldest first: a summary stands in for the conversation just before the
    view's verbatim part, so its newest facts are the ones a window of the same size would still hold.

    Why: the pattern fields of `summarize_structured` hold decisions, files, errors and measurements, which a
    chat between people rarely states; there a summary of hundreds of events used ~100 of its thousands of tokens
    and the facts it covered were gone from the view. Long messages (documents, answers, tool results) are left
    to those fields and to recall: notes of them filled the room with whatever they said once and took it from
    the view's verbatim part (docs/memory.md)."""
    base = {k: v for k, v in summary.critical_context.items() if k != NOTES_KEY}
    old = summary.critical_context.get(NOTES_KEY)
    old_notes = [str(n) for n in old] if isinstance(old, list) else []
    room = max_tokens - count_text(summary.model_copy(update={"critical_context": base}).render()) - 2
    if room <= 0:
        return summary
    found, seen = _said_once(events)
    ranked: list[tuple[int, int, str]] = []
    for order, (_, speaker, line) in enumerate(found):
        score = sum(1 for w in {w.casefold() for w in _NOTE_WORD.findall(line)} if seen.get(w, 0) == 1)
        if score:
            ranked.append((score, order, f"{speaker}: {line}"))
    ranked.sort(key=lambda r: (-r[0], -r[1]))  # most words said once, then the newest
    chosen: list[tuple[int, str]] = []
    for _, order, note in ranked:
        cost = count_text(note) + 1
        if cost <= room:
            chosen.append((order, note))
            room -= cost
    if not chosen:
        return summary
    notes = list(old_notes)
    _add_unique(notes, (note for _, note in sorted(chosen)))
    noted = summary.model_copy(update={"critical_context": {**base, NOTES_KEY: notes}})
    return fit_summary(noted, count_text, max_tokens)


@runtime_checkable
class StructuredSummarizer(Protocol):
    """Turns events (oldest first) into one `StructuredSummary`; may fold ``previous`` summaries in."""

    async def summarize_structured(
        self, events: Sequence[Event], *, previous: Sequence[StructuredSummary] = ()
    ) -> StructuredSummary: ...


class ExtractiveStructuredSummarizer:
    """The offline default: `summarize_structured` behind the `StructuredSummarizer` protocol."""

    async def summarize_structured(
        self, events: Sequence[Event], *, previous: Sequence[StructuredSummary] = ()
    ) -> StructuredSummary:
        return summarize_structured(events, previous=previous)


_FENCE = re.compile(r"```(?:json|JSON)?\s*(.*?)```", re.DOTALL)


def parse_structured_json(text: str) -> dict[str, Any]:
    """The JSON object in a model reply, tolerating code fences and prose around it."""
    fenced = _FENCE.search(text)
    body = fenced.group(1) if fenced else text
    start, end = body.find("{"), body.rfind("}")
    if start < 0 or end <= start:
        raise ProviderError(f"summary reply holds no JSON object: {_clip(text, 200)!r}")
    try:
        value = json.loads(body[start : end + 1])
    except json.JSONDecodeError as exc:
        raise ProviderError(f"summary reply is not valid JSON ({exc}): {_clip(text, 200)!r}") from exc
    if not isinstance(value, dict):
        raise ProviderError(f"summary reply is a JSON {type(value).__name__}, expected an object")
    return value


def coerce_summary(value: object, events: Sequence[Event]) -> StructuredSummary:
    """Validate what a summarizer returned (model, dict or JSON text) and fill count, span and covered ids.

    The count, time range and covered ids always come from the events themselves, because they are facts the
    summarizer cannot know better than the caller.
    """
    if isinstance(value, StructuredSummary):
        summary = value
    elif isinstance(value, Mapping):
        summary = StructuredSummary.model_validate(dict(value))
    elif isinstance(value, str):
        summary = StructuredSummary.model_validate(parse_structured_json(value))
    else:
        raise ConfigurationError(
            f"summarizer returned {type(value).__name__}; return a StructuredSummary, a dict or JSON text",
        )
    stamps = [s for s in (event_timestamp(e) for e in events) if s is not None]
    update: dict[str, Any] = {
        "covered_ids": [str(_message(e).get("id")) for e in events if _message(e).get("id") is not None],
    }
    if not summary.count:
        update["count"] = len(events)
    if summary.time_range.start is None and summary.time_range.end is None and stamps:
        update["time_range"] = TimeRange(start=min(stamps), end=max(stamps))
    coerced = summary.model_copy(update=update)
    # what the summarizer stated, before the count and span filled in here make every summary look shaped
    shaped = summary._reference_shaped
    coerced._reference_shaped = bool(REFERENCE_FIELDS & summary.model_fields_set) if shaped is None else shaped
    return coerced


_SCHEMA_HINT = """Reply with one JSON object and nothing else, with these keys:
{"user_goal": string, "last_step": string, "key_decisions": [string], "modified_files": [string],
 "critical_context": {string: any}}
user_goal: what the user is trying to achieve overall. last_step: the most recent action taken.
key_decisions: choices and changes that were made, with concrete values. modified_files: paths that were created
or changed. critical_context: errors, numbers with units, environment and anything needed to continue the work."""


class StructuredLLMSummarizer:
    """Asks a model (any `LLMClient`) for the structure as JSON, then parses and validates the reply.

    A reply that is not a JSON object of the right shape raises `ProviderError`, so the memory layer leaves the
    session untouched and reports the failure instead of storing a broken summary.
    """

    def __init__(
        self,
        client: Any,
        *,
        max_output_tokens: int = 800,
        instructions: str | None = None,
        max_result_chars: int = 2000,
    ) -> None:
        if not callable(getattr(client, "acomplete", None)):
            raise ConfigurationError(
                f"StructuredLLMSummarizer needs an LLMClient with an async acomplete(request); got {client!r}",
            )
        if max_output_tokens <= 0:
            raise ConfigurationError(f"max_output_tokens must be positive, got {max_output_tokens}")
        self.client = client
        self.max_output_tokens = max_output_tokens
        self.instructions = instructions
        self.max_result_chars = max_result_chars

    def _prompt(self, events: Sequence[Event], previous: Sequence[StructuredSummary]) -> str:
        parts: list[str] = []
        if previous:
            folded = [p.model_dump(mode="json", exclude={"covered_ids", "supersedes", "id"}) for p in previous]
            parts.append("Earlier summaries (fold them into yours):\n" + json.dumps(folded, ensure_ascii=False))
        transcript = render_transcript(events_to_messages(events), max_result_chars=self.max_result_chars)
        parts.append("Conversation to summarize:\n" + transcript)
        return "\n\n".join(parts)

    async def summarize_structured(
        self, events: Sequence[Event], *, previous: Sequence[StructuredSummary] = ()
    ) -> StructuredSummary:
        from ..llm.client import LLMRequest

        system = "You write structured summaries of agent conversations.\n" + _SCHEMA_HINT
        if self.instructions:
            system += "\n" + self.instructions
        request = LLMRequest(
            messages=[Message.text_message(self._prompt(events, previous), role="user")],
            system=system,
            max_output_tokens=self.max_output_tokens,
            temperature=0.0,
        )
        response = await self.client.acomplete(request)
        data = parse_structured_json(response.message.text())
        try:
            summary = coerce_summary(data, events)
        except ValidationError as exc:
            raise ProviderError(f"summary JSON does not match the StructuredSummary fields: {exc}") from exc
        summary = summary.model_copy(update={"count": len(events)})
        return _merge_previous(summary, previous)


class _CallableSummarizer:
    """Adapts ``fn(events)`` (sync or async, as in the reference's ``summarizer=`` option)."""

    def __init__(self, fn: Callable[[list[dict[str, Any]]], Any]) -> None:
        self.fn = fn

    async def summarize_structured(
        self, events: Sequence[Event], *, previous: Sequence[StructuredSummary] = ()
    ) -> StructuredSummary:
        payload = [dict(e) for e in events]
        if inspect.iscoroutinefunction(self.fn):
            result = await self.fn(payload)
        else:
            # a blocking summarizer must not stall the event loop (nor escape the caller's timeout, nor keep the
            # loop's shutdown waiting when it hangs): a daemon worker thread
            result = await run_in_daemon(self.fn, payload)
        if inspect.isawaitable(result):
            result = await result
        return coerce_summary(result, events)


class _TextSummarizerAdapter:
    """Lets a free-text `Summarizer` (LLM or extractive) serve tier 3: its text becomes ``critical_context``."""

    def __init__(self, summarizer: Any) -> None:
        self.summarizer = summarizer

    async def summarize_structured(
        self, events: Sequence[Event], *, previous: Sequence[StructuredSummary] = ()
    ) -> StructuredSummary:
        prev_text = "\n\n".join(p.render() for p in previous) or None
        text = await self.summarizer.summarize(events_to_messages(events), previous_summary=prev_text)
        if not isinstance(text, str) or not text.strip():
            raise ProviderError("text summarizer returned nothing; the session is left unchanged")
        base = summarize_structured(events)
        summary = base.model_copy(update={"critical_context": {**base.critical_context, "summary": text.strip()}})
        return _merge_previous(summary, previous)


def as_structured_summarizer(obj: object | None) -> StructuredSummarizer:
    """Accept ``None`` (extractive default), a `StructuredSummarizer`, a text `Summarizer`, or a callable."""
    if obj is None:
        return ExtractiveStructuredSummarizer()
    if callable(getattr(obj, "summarize_structured", None)):
        return obj  # type: ignore[return-value]
    if callable(getattr(obj, "summarize", None)):
        return _TextSummarizerAdapter(obj)
    if callable(obj):
        return _CallableSummarizer(obj)
    raise ConfigurationError(
        f"summarizer={obj!r} is not usable: pass a callable(events) -> StructuredSummary | dict, "
        "a StructuredLLMSummarizer, or a Summarizer with async summarize(messages)",
    )


SummarizerFn = Callable[[list[dict[str, Any]]], "StructuredSummary | dict[str, Any] | Awaitable[Any]"]
