"""``windowkeeper inspect``: where the tokens of a conversation go (by zone and role) and what a provider would
reject. Exit 1 when a structural problem is found."""

from __future__ import annotations

from typing import Any

from rich.markup import escape
from rich.table import Table

from ..io import Conversation
from ..prompt import assemble
from ..tokens import default_counter
from ..units import validate
from .output import Output

PROVIDERS = ("openai", "anthropic", "gemini")


def conversation_report(conversation: Conversation, *, reserve: int, providers: tuple[str, ...]) -> dict[str, Any]:
    """The JSON object describing one conversation (see docs/cli.md for the field list)."""
    counter = default_counter()
    messages = conversation.messages
    # the zones of the request an Agent would send for this state (`windowkeeper.prompt.assemble`)
    prompt = assemble(conversation.state(), tools=conversation.tools, counter=counter, reserve_tokens=reserve)
    counts = [counter.count_message(m) for m in messages]
    roles: dict[str, dict[str, int]] = {}
    for msg, tokens in zip(messages, counts, strict=True):
        entry = roles.setdefault(msg.role, {"messages": 0, "tokens": 0})
        entry["messages"] += 1
        entry["tokens"] += tokens
    largest = sorted(range(len(messages)), key=lambda i: counts[i], reverse=True)[:5]
    breakdown = prompt.zone_tokens
    return {
        "name": conversation.name,
        "format": conversation.format,
        "messages": len(messages),
        "tool_calls": sum(len(m.tool_call_blocks()) for m in messages),
        "tool_schemas": len(conversation.tools),
        "tokens": {
            "input": prompt.input_tokens,
            "total": prompt.total_tokens,
            "tool_schemas": breakdown["tools"],
            "zones": breakdown,
        },
        "roles": roles,
        "largest": [{"index": i, "role": messages[i].role, "tokens": counts[i]} for i in largest],
        "problems": {
            provider: [{"index": p.index, "code": p.code, "message": p.message} for p in validate(messages, provider)]
            for provider in providers
        },
    }


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
    output.out.print(by_zone)
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
    output.out.print(by_role)
    largest = ", ".join(f"#{e['index']} {e['role']} {e['tokens']:,}" for e in report["largest"])
    output.out.print(f"{report['tool_calls']} tool calls. Largest messages: {largest}", markup=False)
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
    output.out.print(table)
    for r in reports:
        print_problems(output, r)


__all__ = ["PROVIDERS", "conversation_report", "print_collection", "print_conversation", "problem_count"]
