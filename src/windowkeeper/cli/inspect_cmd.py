"""``windowkeeper inspect``: where the tokens of a conversation go (by zone and role) and what a provider would
reject. Exit 1 when a structural problem is found."""

from __future__ import annotations

import heapq
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from rich.markup import escape
from rich.table import Table

from ..blocks import ToolCallBlock
from ..io import Conversation, ConversationFileError, read_text
from ..io.reader import index_out_of_range, parse_text, read_folder
from ..io.stream import MessageStream, open_stream
from ..messages import Message
from ..prompt.cost import system_costs, tool_schema_tokens
from ..prompt.recall import is_recall
from ..prompt.sections import system_message_text
from ..tokenizing.counters import counting_once
from ..tokens import default_counter
from ..units import Problem, validate
from .output import Output

PROVIDERS = ("openai", "anthropic", "gemini")
OWN_PROVIDER = {
    "openai": "openai",
    "responses": "openai",
    "tau-bench": "openai",
    "swe-agent": "openai",
    "codex": "openai",
    "anthropic": "anthropic",
    "claude-code": "anthropic",
    "gemini": "gemini",
}
"""The provider whose rules a file of each format is checked against with ``--provider auto``."""

_ALTERNATING = {"anthropic": ("user", "assistant"), "gemini": ("user", "model")}
"""Formats whose request turns must alternate between two roles, and those roles."""

_FIRST_ONLY = frozenset({"first_message_not_user", "no_user_message"})


def providers_for(fmt: str, provider: str) -> tuple[str, ...]:
    if provider == "all" or (provider == "auto" and fmt not in OWN_PROVIDER):
        return PROVIDERS
    return (OWN_PROVIDER[fmt],) if provider == "auto" else (provider,)


class _Tally:
    """The counts of one conversation, added to slice by slice (a million messages need not be held at once)."""

    def __init__(self, fmt: str, providers: tuple[str, ...]) -> None:
        self.counter = default_counter()
        self.count = counting_once(self.counter)
        self.format = fmt
        self.providers = providers
        self.messages = 0
        self.tool_calls = 0
        self.roles: dict[str, dict[str, int]] = {}
        self.largest: list[tuple[int, int, str]] = []  # a min-heap of (tokens, -index, role)
        self.system_parts: list[str] = []
        self.recall = 0
        self.recent = 0
        self.problems: dict[str, list[Problem]] = {p: [] for p in providers}
        self.call_ids: dict[str, int] = {}
        self.last_role: str | None = None
        self.wire_index = 0

    def add(self, messages: list[Message], wire_roles: list[str] | None) -> None:
        offset = self.messages
        anthropic = "anthropic" in self.providers
        for i, message in enumerate(messages):
            if message.role == "system":
                text = system_message_text(message)
                if text:
                    self.system_parts.append(text)
            tokens = self.count(message)
            if message.role != "system":
                if is_recall(message):
                    self.recall += tokens
                else:
                    self.recent += tokens
            entry = self.roles.setdefault(message.role, {"messages": 0, "tokens": 0})
            entry["messages"] += 1
            entry["tokens"] += tokens
            calls = message.tool_call_blocks()
            self.tool_calls += len(calls)
            if calls and anthropic:
                self._call_ids(calls, offset, offset + i)
            item = (tokens, -(offset + i), message.role)
            if len(self.largest) < 5:
                heapq.heappush(self.largest, item)
            elif item > self.largest[0]:
                heapq.heapreplace(self.largest, item)
        for provider in self.providers:
            found = validate(messages, provider)
            if offset:
                found = [p for p in found if p.code not in _FIRST_ONLY]
            self.problems[provider].extend(Problem(p.index + offset, p.code, p.message) for p in found)
        if wire_roles is not None and self.format in _ALTERNATING:
            self._turn_order(wire_roles)
        self.messages += len(messages)

    def _call_ids(self, calls: list[ToolCallBlock], offset: int, index: int) -> None:
        """Anthropic rejects a tool call id used twice; `validate` finds repeats within one slice, this across."""
        for call in calls:
            first = self.call_ids.get(call.id)
            if first is not None and first < offset:
                message = f"tool call id {call.id!r} already used at message {first}"
                self.problems["anthropic"].append(Problem(index, "duplicate_tool_call_id", message))
            self.call_ids.setdefault(call.id, index)

    def _turn_order(self, roles: list[str]) -> None:
        """Consecutive turns of one role, which the format's API rejects or silently merges (indices are the
        file's message positions, not our messages')."""
        provider = self.format
        if provider not in self.problems:
            return
        start = self.wire_index
        for i, role in enumerate(roles):
            if role == self.last_role:
                self.problems[provider].append(
                    Problem(
                        start + i,
                        "consecutive_same_role",
                        f"two {role!r} turns in a row (file message "
                        f"{start + i - 1} and {start + i}); {provider} expects turns to alternate: merge them",
                    )
                )
            self.last_role = role
        self.wire_index = start + len(roles)

    def report(
        self,
        *,
        name: str,
        tools: list[dict[str, Any]],
        summary: str | None,
        scratchpad: str | None,
        reserve: int,
        skipped: dict[str, int],
        warnings: list[str],
    ) -> dict[str, Any]:
        costs = system_costs(self.system_parts, summary, scratchpad, self.counter)
        zones = {
            "system": costs.system,
            "tools": tool_schema_tokens(tools, self.counter),
            "summary": costs.summary,
            "scratchpad": costs.scratchpad,
            "recall": self.recall,
            "recent": self.recent + self.counter.count_messages([]),  # the reply priming, as assemble counts it
            "reserve": reserve,
        }
        input_tokens = sum(n for zone, n in zones.items() if zone != "reserve")
        for found in self.problems.values():
            found.sort(key=lambda p: p.index)
        largest = sorted(self.largest, reverse=True)
        return {
            "name": name,
            "format": self.format,
            "messages": self.messages,
            "tool_calls": self.tool_calls,
            "tool_schemas": len(tools),
            "skipped_events": skipped,
            "warnings": warnings,
            "tokens": {
                "input": input_tokens,
                "total": input_tokens + reserve,
                "tool_schemas": zones["tools"],
                "zones": zones,
            },
            "roles": self.roles,
            "largest": [{"index": -i, "role": role, "tokens": tokens} for tokens, i, role in largest],
            "problems": {
                provider: [{"index": p.index, "code": p.code, "message": p.message} for p in found]
                for provider, found in self.problems.items()
            },
        }


def _report(
    source: Conversation | MessageStream,
    slices: Iterable[tuple[list[Message], list[str] | None]],
    *,
    reserve: int,
    providers: tuple[str, ...],
) -> dict[str, Any]:
    tally = _Tally(source.format, providers)
    for messages, roles in slices:
        tally.add(messages, roles)
    return tally.report(
        name=source.name,
        tools=source.tools,
        summary=source.summary,
        scratchpad=source.scratchpad,
        reserve=reserve,
        skipped=source.skipped,
        warnings=list(getattr(source, "warnings", ())),  # a streamed message list has no envelope to warn about
    )


def conversation_report(conversation: Conversation, *, reserve: int, providers: tuple[str, ...]) -> dict[str, Any]:
    """The JSON object describing one conversation (its fields are listed in ``windowkeeper inspect -h``)."""
    slices = [(conversation.messages, conversation.wire_roles)]
    return _report(conversation, slices, reserve=reserve, providers=providers)


def stream_report(stream: MessageStream, *, reserve: int, providers: tuple[str, ...]) -> dict[str, Any]:
    """`conversation_report` of a conversation read slice by slice."""
    return _report(stream, stream.slices(), reserve=reserve, providers=providers)


def inspect_reports(
    path: str, *, fmt: str, index: int | None, reserve: int, provider: str, max_bytes: int, timeout: float
) -> list[dict[str, Any]]:
    """The report of every conversation in ``path`` (a file, ``-``, or a folder of conversation files), or of
    the ``index``-th. One long message list is read slice by slice."""
    if path != "-" and Path(path).is_dir():
        conversations = read_folder(path, fmt=fmt, max_bytes=max_bytes, timeout=timeout)
    else:
        raw = read_text(path, max_bytes=max_bytes, timeout=timeout)
        stream = open_stream(raw, fmt) if index in (None, 0) else None
        if stream is not None:
            return [stream_report(stream, reserve=reserve, providers=providers_for(stream.format, provider))]
        conversations = parse_text(raw, fmt)
    if index is not None:
        if not 0 <= index < len(conversations):
            raise ConversationFileError(index_out_of_range(index, path, len(conversations)))
        conversations = [conversations[index]]
    return [conversation_report(c, reserve=reserve, providers=providers_for(c.format, provider)) for c in conversations]


def print_warnings(output: Output, reports: list[dict[str, Any]]) -> None:
    """What reading a file could not carry, on stderr whatever the mode: a count read from a file without it
    would be trusted as the whole story."""
    for report in reports:
        for warning in report["warnings"]:
            output.status(f"[yellow]warning:[/] {escape(warning)}", markup=True)


def problem_count(report: dict[str, Any]) -> int:
    return sum(len(found) for found in report["problems"].values())


def print_conversation(output: Output, report: dict[str, Any]) -> None:
    tokens = report["tokens"]
    total = tokens["total"] or 1
    title = (
        f"{escape(report['name'])} ({report['format']}): {report['messages']} messages, "
        f"{tokens['input']:,} input tokens"
    )
    by_zone = Table(title=title + " (o200k_base)", title_justify="left")
    by_zone.add_column("zone", style="bold")
    by_zone.add_column("tokens", justify="right")
    by_zone.add_column("share", justify="right")
    for zone, count in tokens["zones"].items():
        by_zone.add_row(zone, f"{count:,}", f"{100 * count / total:.1f}%")
    output.table(by_zone)
    by_role = Table(title="by role", title_justify="left")
    by_role.add_column("role", style="bold")
    by_role.add_column("messages", justify="right")
    by_role.add_column("tokens", justify="right")
    by_role.add_column("share of messages", justify="right")
    role_total = sum(r["tokens"] for r in report["roles"].values()) or 1
    for role in ("system", "user", "assistant", "tool"):
        entry = report["roles"].get(role)
        if entry:
            share = f"{100 * entry['tokens'] / role_total:.1f}%"
            by_role.add_row(role, str(entry["messages"]), f"{entry['tokens']:,}", share)
    output.table(by_role)
    largest = ", ".join(f"#{e['index']} {e['role']} {e['tokens']:,}" for e in report["largest"])
    output.out.print(f"{report['tool_calls']} tool calls. Largest messages: {largest}", markup=False)
    skipped = report["skipped_events"]
    if skipped:
        kinds = ", ".join(f"{kind} {n}" for kind, n in skipped.items())
        output.out.print(f"Skipped {sum(skipped.values())} events that are not conversation: {kinds}", markup=False)
    print_problems(output, report)


def print_problems(output: Output, report: dict[str, Any]) -> None:
    for provider, found in report["problems"].items():
        if found:
            output.out.print(
                f"[yellow]{provider}: {len(found)} structural problem(s) in {escape(report['name'])}[/]", soft_wrap=True
            )
            for p in found:
                output.out.print(f"  [{p['index']}] {p['code']}: {p['message']}", markup=False, soft_wrap=True)


def print_collection(output: Output, reports: list[dict[str, Any]], *, source: str) -> None:
    table = Table(title=f"{escape(source)}: {len(reports)} conversations", title_justify="left")
    table.add_column("#", justify="right")
    table.add_column("conversation", style="bold")
    table.add_column("messages", justify="right")
    table.add_column("input tokens", justify="right")
    table.add_column("problems", justify="right")
    for i, r in enumerate(reports):
        problems = problem_count(r)
        table.add_row(
            str(i),
            escape(r["name"]),
            str(r["messages"]),
            f"{r['tokens']['input']:,}",
            f"[red]{problems}[/]" if problems else "0",
        )
    output.table(table)
    for r in reports:
        print_problems(output, r)
