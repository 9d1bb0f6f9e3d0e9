"""``windowkeeper inspect``: where the tokens of a conversation go, by zone and by role."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from rich.console import Console
from rich.table import Table

from ..context.zones import build_zones
from ..evaluation.loaders import load_state
from ..tokens import default_counter
from ..units import validate


def run_inspect(console: Console, file: Path, *, fmt: str, reserve: int) -> None:
    state = load_state(file, fmt=fmt)
    messages = state.context
    counter = default_counter()
    zones = build_zones(state, counter=counter, reserve_tokens=reserve)
    total = zones.total_tokens or 1

    by_zone = Table(title=f"{file.name}: {len(messages)} messages, {zones.input_tokens:,} input tokens (o200k_base)")
    by_zone.add_column("zone", style="bold")
    by_zone.add_column("tokens", justify="right")
    by_zone.add_column("share", justify="right")
    for zone, tokens in zones.breakdown().items():
        by_zone.add_row(zone, f"{tokens:,}", f"{100 * tokens / total:.1f}%")
    console.print(by_zone)

    role_tokens: Counter[str] = Counter()
    role_count: Counter[str] = Counter()
    tool_calls = 0
    for msg in messages:
        role_tokens[msg.role] += counter.count_message(msg)
        role_count[msg.role] += 1
        tool_calls += len(msg.tool_call_blocks())
    by_role = Table(title="by role")
    by_role.add_column("role", style="bold")
    by_role.add_column("messages", justify="right")
    by_role.add_column("tokens", justify="right")
    by_role.add_column("share of input", justify="right")
    input_total = sum(role_tokens.values()) or 1
    for role in ("system", "user", "assistant", "tool"):
        if role_count[role]:
            share = f"{100 * role_tokens[role] / input_total:.1f}%"
            by_role.add_row(role, str(role_count[role]), f"{role_tokens[role]:,}", share)
    console.print(by_role)

    largest = sorted(range(len(messages)), key=lambda i: counter.count_message(messages[i]), reverse=True)[:5]
    console.print(
        f"{tool_calls} tool calls. Largest messages: "
        + ", ".join(f"#{i} {messages[i].role} {counter.count_message(messages[i]):,}" for i in largest)
    )
    for provider in ("openai", "anthropic", "gemini"):
        problems = validate(messages, provider)
        if problems:
            console.print(f"[yellow]{provider}: {len(problems)} structural problem(s); first: {problems[0]}[/]")


__all__ = ["run_inspect"]
