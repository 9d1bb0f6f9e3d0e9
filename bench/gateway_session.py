"""A long agent session through `windowkeeper serve`, per protocol, with the official SDKs as the client.

The client is an agent loop written the plain way: it keeps the whole conversation as SDK-shaped dicts, sends all
of it on every call (streamed on every other call), runs the tool the model asked for and appends its (large)
output. It defines one tool, ``run_command``, and never a recall tool. It also sends what windowkeeper does not
model: an unknown top-level field on every call, an unknown key on its user messages, on Anthropic an unknown
content block and ``cache_control`` marks moved to the newest message each call (system mark kept; four at most).

The fake upstream (``windowkeeper.testing.fake_servers``) asks for a tool on every call. Call 1's tool output holds
a fact (a deploy token). On the last call the model asks the gateway's recall tool for it; the gateway answers
inside the same client request, the upstream is called again and replies with text.

Measured from what the upstream received: every request valid for its provider and under budget, every item equal
to one the client sent arriving byte for byte as the client sent it, the unknown top-level field on every request,
no more cache marks than the client set, the share of calls whose message list starts with the previous call's
(prefix-stable), the fact in the gateway's answer to the recall call, and no recall tool in anything the client got.

    PYTHONPATH=src python bench/gateway_session.py [--calls 200] [--budget 32000]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import anthropic  # noqa: E402
import openai  # noqa: E402
from tests.serve.harness import running  # noqa: E402

from windowkeeper.integrations._formats import read_messages  # noqa: E402
from windowkeeper.serve import ServeConfig  # noqa: E402
from windowkeeper.serve.projection import PLAIN, item_key  # noqa: E402
from windowkeeper.testing.fake_servers import (  # noqa: E402
    FakeAnthropicServer,
    FakeOpenAIServer,
    FakeProviderServer,
    FakeToolCall,
    RecordedRequest,
)
from windowkeeper.units import validate  # noqa: E402

SYSTEM = "You are a release engineer. Use run_command to inspect the machine; answer briefly."
FACT = "ORCHID-7781-QX"
TASK = "Prepare the staging release. First show me config.env, then work through the checklist."
UNKNOWN_TOP = {"x_trace": {"span": "abc123", "sampled": True}}
TOOL = {
    "name": "run_command",
    "description": "Run a shell command on the release machine and return its output.",
    "parameters": {"type": "object", "properties": {"cmd": {"type": "string"}}, "required": ["cmd"]},
}
PROTOCOLS = ("chat_completions", "responses", "messages")


def command_output(n: int, cmd: str) -> str:
    """A deterministic, large tool output (~700 tokens); call 1's holds the fact."""
    lines = [f"$ {cmd}"]
    if n == 1:
        lines += ["APP_ENV=staging", f"DEPLOY_TOKEN={FACT}", "REGION=eu-west-3"]
    for i in range(60):
        lines.append(
            f"[{n:03d}.{i:02d}] worker-{(n * 7 + i) % 23} step {i} of {cmd!r}: "
            f"ok checksum {(n * 131 + i * 17) % 9973:04d}"
        )
    return "\n".join(lines)


@dataclass
class SessionReport:
    protocol: str
    calls: int
    upstream_requests: int
    over_budget: int = 0
    invalid: int = 0
    changed_originals: int = 0
    missing_unknown_top: int = 0
    too_many_marks: int = 0
    prefix_stable: int = 0
    prefix_pairs: int = 0
    managed_cuts: int = 0
    body_reuses: int = 0
    """Requests whose body the gateway parsed only where it continued the client's previous one."""
    threads: set[str] = field(default_factory=set)
    recall_answer_has_fact: bool = False
    client_saw_recall: bool = False
    final_text: str = ""

    @property
    def prefix_stable_share(self) -> float:
        return self.prefix_stable / self.prefix_pairs if self.prefix_pairs else 1.0

    def ok(self) -> bool:
        return (
            self.over_budget == 0
            and self.invalid == 0
            and self.changed_originals == 0
            and self.missing_unknown_top == 0
            and self.too_many_marks == 0
            and len(self.threads) == 1
            and self.recall_answer_has_fact
            and not self.client_saw_recall
        )


class Client:
    """The agent's side for one protocol: its list, one call through the SDK, appending the reply and results."""

    def __init__(self, protocol: str, gateway_url: str, api_key: str) -> None:
        self.protocol = protocol
        self.items: list[dict[str, Any]] = []
        self.headers_seen: list[dict[str, str]] = []
        if protocol == "messages":
            self.anthropic = anthropic.Anthropic(base_url=gateway_url, api_key=api_key, max_retries=0)
        else:
            self.openai = openai.OpenAI(base_url=gateway_url + "/v1", api_key=api_key, max_retries=0)
        first: dict[str, Any] = {"role": "user", "content": TASK, "x_client_tag": "task"}
        if protocol == "chat_completions":
            self.items = [{"role": "system", "content": SYSTEM}, first]
        elif protocol == "responses":
            self.items = [{**first, "type": "message"}]
        else:
            self.items = [
                {
                    "role": "user",
                    "content": [{"type": "text", "text": TASK}, {"type": "x_unknown_block", "data": {"k": 1}}],
                }
            ]

    def close(self) -> None:
        """Close the SDK client: its pooled socket would otherwise stay open until the garbage collector reaches
        the client (and, in the test suite, warn inside whichever test runs then)."""
        (self.anthropic if self.protocol == "messages" else self.openai).close()

    def _marked(self) -> list[dict[str, Any]]:
        """Anthropic: the list with a cache mark on the newest message only (clients move it every call)."""
        out = list(self.items)
        last = dict(out[-1])
        content = last["content"]
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else [dict(b) for b in content]
        blocks[-1] = {**blocks[-1], "cache_control": {"type": "ephemeral"}}
        last["content"] = blocks
        out[-1] = last
        return out

    def call(self, stream: bool) -> tuple[list[dict[str, Any]], str]:
        """One model call; returns (tool calls as dicts with id/name/args, text)."""
        p = self.protocol
        if p == "chat_completions":
            kwargs: dict[str, Any] = {
                "model": "gpt-fake",
                "messages": self.items,
                "tools": [{"type": "function", "function": TOOL}],
                "extra_body": UNKNOWN_TOP,
            }
            if stream:
                with self.openai.chat.completions.with_streaming_response.create(stream=True, **kwargs) as raw:
                    self.headers_seen.append(dict(raw.headers))
                    chunks = list(raw.parse())
                message = _chat_from_chunks(chunks)
            else:
                raw = self.openai.chat.completions.with_raw_response.create(**kwargs)
                self.headers_seen.append(dict(raw.headers))
                message = raw.parse().choices[0].message.model_dump(exclude_none=True)
            self.items.append(message)
            calls = [
                {"id": c["id"], "name": c["function"]["name"], "args": json.loads(c["function"]["arguments"] or "{}")}
                for c in message.get("tool_calls") or []
            ]
            return calls, message.get("content") or ""
        if p == "responses":
            kwargs = {
                "model": "gpt-fake",
                "input": self.items,
                "tools": [{"type": "function", **TOOL}],
                "extra_body": UNKNOWN_TOP,
            }
            if stream:
                with self.openai.responses.with_streaming_response.create(stream=True, **kwargs) as raw:
                    self.headers_seen.append(dict(raw.headers))
                    events = list(raw.parse())
                response = next(e.response for e in events if e.type == "response.completed")
            else:
                raw = self.openai.responses.with_raw_response.create(**kwargs)
                self.headers_seen.append(dict(raw.headers))
                response = raw.parse()
            output = [item.model_dump(exclude_none=True) for item in response.output]
            self.items.extend(output)
            calls = [
                {"id": i["call_id"], "name": i["name"], "args": json.loads(i["arguments"] or "{}")}
                for i in output
                if i["type"] == "function_call"
            ]
            return calls, response.output_text
        kwargs = {
            "model": "claude-fake",
            "max_tokens": 1024,
            "system": [{"type": "text", "text": SYSTEM, "cache_control": {"type": "ephemeral"}}],
            "messages": self._marked(),
            "tools": [{"name": TOOL["name"], "description": TOOL["description"], "input_schema": TOOL["parameters"]}],
            "extra_body": UNKNOWN_TOP,
        }
        if stream:
            with self.anthropic.messages.with_streaming_response.create(stream=True, **kwargs) as raw:
                self.headers_seen.append(dict(raw.headers))
                events = list(raw.parse())
            content = _anthropic_from_events(events)
        else:
            raw = self.anthropic.messages.with_raw_response.create(**kwargs)
            self.headers_seen.append(dict(raw.headers))
            content = [b.model_dump(exclude_none=True) for b in raw.parse().content]
        self.items.append({"role": "assistant", "content": content})
        calls = [{"id": b["id"], "name": b["name"], "args": b["input"]} for b in content if b["type"] == "tool_use"]
        return calls, "".join(b.get("text", "") for b in content if b["type"] == "text")

    def answer(self, calls: list[dict[str, Any]], n: int) -> None:
        p = self.protocol
        outputs = [(c["id"], command_output(n, str(c["args"].get("cmd", "")))) for c in calls]
        if p == "chat_completions":
            self.items.extend({"role": "tool", "tool_call_id": cid, "content": out} for cid, out in outputs)
        elif p == "responses":
            self.items.extend({"type": "function_call_output", "call_id": cid, "output": out} for cid, out in outputs)
        else:
            blocks = [{"type": "tool_result", "tool_use_id": cid, "content": out} for cid, out in outputs]
            self.items.append({"role": "user", "content": blocks})

    def say(self, text: str) -> None:
        if self.protocol == "messages":
            self.items.append(
                {
                    "role": "user",
                    "content": [{"type": "text", "text": text}, {"type": "x_unknown_block", "n": len(self.items)}],
                }
            )
        elif self.protocol == "responses":
            self.items.append({"type": "message", "role": "user", "content": text, "x_client_tag": "turn"})
        else:
            self.items.append({"role": "user", "content": text, "x_client_tag": "turn"})


def _chat_from_chunks(chunks: list[Any]) -> dict[str, Any]:
    text = ""
    calls: dict[int, dict[str, Any]] = {}
    for chunk in chunks:
        if not chunk.choices:
            continue
        delta = chunk.choices[0].delta
        text += delta.content or ""
        for tc in delta.tool_calls or []:
            call = calls.setdefault(tc.index, {"id": "", "type": "function", "function": {"name": "", "arguments": ""}})
            call["id"] = tc.id or call["id"]
            if tc.function is not None:
                call["function"]["name"] += tc.function.name or ""
                call["function"]["arguments"] += tc.function.arguments or ""
    message: dict[str, Any] = {"role": "assistant", "content": text or None}
    if calls:
        message["tool_calls"] = [calls[i] for i in sorted(calls)]
    return {k: v for k, v in message.items() if v is not None}


def _anthropic_from_events(events: list[Any]) -> list[dict[str, Any]]:
    blocks: dict[int, dict[str, Any]] = {}
    partial: dict[int, str] = {}
    for event in events:
        if event.type == "content_block_start":
            blocks[event.index] = event.content_block.model_dump(exclude_none=True)
        elif event.type == "content_block_delta":
            d = event.delta
            if d.type == "text_delta":
                blocks[event.index]["text"] += d.text
            elif d.type == "input_json_delta":
                partial[event.index] = partial.get(event.index, "") + d.partial_json
    for index, text in partial.items():
        blocks[index]["input"] = json.loads(text) if text else {}
    return [blocks[i] for i in sorted(blocks)]


FMT = {"chat_completions": "openai_chat", "responses": "openai_responses", "messages": "anthropic"}
PROVIDER = {"chat_completions": "openai", "responses": "openai", "messages": "anthropic"}


def _upstream_items(protocol: str, request: RecordedRequest) -> list[Any]:
    return list(request.json["input" if protocol == "responses" else "messages"])


def _marks(value: Any) -> int:
    if isinstance(value, dict):
        return ("cache_control" in value) + sum(_marks(v) for v in value.values())
    if isinstance(value, list):
        return sum(_marks(v) for v in value)
    return 0


def analyze(
    protocol: str, client_lists: list[list[Any]], requests: list[RecordedRequest], budget: int, report: SessionReport
) -> None:
    """Check every upstream request against what the client sent for that call (see the module docstring)."""
    fmt = FMT[protocol]
    plain_of = PLAIN[fmt]
    previous: list[str] | None = None
    for sent, request in zip(client_lists, requests, strict=False):
        body = request.json
        items = _upstream_items(protocol, request)
        if any(body.get(k) != v for k, v in UNKNOWN_TOP.items()):
            report.missing_unknown_top += 1
        originals = {item_key(plain_of(i)): i for i in sent}
        for item in items:
            match = originals.get(item_key(plain_of(item)))
            if match is not None and match != item:
                report.changed_originals += 1
        if _marks(body) > 4:
            report.too_many_marks += 1
        messages = read_messages(fmt, [plain_of(i) for i in items])
        if validate(messages, PROVIDER[protocol]):
            report.invalid += 1
        keys = [item_key(plain_of(i)) for i in items]
        if previous is not None:
            report.prefix_pairs += 1
            report.prefix_stable += keys[: len(previous)] == previous
        previous = keys


def run_session(
    protocol: str, calls: int, budget: int, *, store: str | None = None, stream_every: int = 2
) -> SessionReport:
    """Run one session of ``calls`` client calls at ``budget`` through a fresh gateway and measure it."""
    server: FakeProviderServer = FakeAnthropicServer() if protocol == "messages" else FakeOpenAIServer()
    with server, tempfile.TemporaryDirectory() as tmp:
        config = ServeConfig(
            budget=budget,
            store=store or f"sqlite:///{tmp}/gateway.sqlite3",
            openai_base_url=server.base_url if protocol != "messages" else "http://127.0.0.1:9",
            anthropic_base_url=server.url if protocol == "messages" else "http://127.0.0.1:9",
        )
        with running(config) as gw, contextlib.closing(Client(protocol, gw.url, "sk-bench-key")) as client:
            report = SessionReport(protocol=protocol, calls=calls, upstream_requests=0)
            client_lists: list[list[Any]] = []
            recall_request_index: int | None = None
            for n in range(1, calls + 1):
                if n == calls:
                    server.reply(tool_calls=[FakeToolCall("recall", {"query": "DEPLOY_TOKEN deploy token"})])
                    server.reply(f"The deploy token is {FACT}.")
                elif n % 20 == 0:
                    server.reply(f"Checklist part {n // 20} done.")
                else:
                    server.reply(tool_calls=[FakeToolCall("run_command", {"cmd": f"check step {n}"})])
                client_lists.append(_client_sent(client))
                before = len(server.requests)
                found, text = client.call(stream=n % stream_every == 0)
                if n == calls:
                    recall_request_index = before
                    report.final_text = text
                    report.client_saw_recall = any(c["name"] == "recall" for c in found)
                if found:
                    client.answer(found, n)
                elif n < calls:
                    client.say(f"Next: item {n // 20 + 1} of the checklist.")
            requests = list(server.requests)
            report.upstream_requests = len(requests)
            report.threads = {h.get("x-windowkeeper-thread", "") for h in client.headers_seen}
            report.over_budget = sum(int(h.get("x-windowkeeper-tokens-after", 0)) > budget for h in client.headers_seen)
            report.managed_cuts = int(gw.gateway.metrics.cuts[protocol])
            report.body_reuses = int(gw.gateway.metrics.body_reuses[protocol])
            main = [r for i, r in enumerate(requests) if i != (recall_request_index or -1) + 1]
            analyze(protocol, client_lists, main, budget, report)
            if recall_request_index is not None and recall_request_index + 1 < len(requests):
                offered = requests[recall_request_index].json.get("tools") or []
                follow = requests[recall_request_index + 1]
                answers = json.dumps(_upstream_items(protocol, follow)[-1])
                report.recall_answer_has_fact = FACT in answers and len(offered) == 2
    return report


def _client_sent(client: Client) -> list[Any]:
    return client._marked() if client.protocol == "messages" else list(client.items)


def table(reports: list[SessionReport]) -> str:
    rows = [
        "| protocol | calls | upstream requests | over budget | invalid | originals changed | unknown field lost "
        "| >4 marks | prefix-stable | cut calls | recall answered fact | client saw recall |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in reports:
        rows.append(
            f"| {r.protocol} | {r.calls} | {r.upstream_requests} | {r.over_budget} | {r.invalid} "
            f"| {r.changed_originals} | "
            f"{r.missing_unknown_top} | {r.too_many_marks} | {r.prefix_stable_share:.1%} | {r.managed_cuts} | "
            f"{r.recall_answer_has_fact} | {r.client_saw_recall} |"
        )
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--budget", type=int, default=32_000)
    parser.add_argument("--protocol", choices=PROTOCOLS, action="append")
    args = parser.parse_args(argv)
    reports = [run_session(p, args.calls, args.budget) for p in args.protocol or PROTOCOLS]
    print(table(reports))
    return 0 if all(r.ok() and r.prefix_stable_share >= 0.8 for r in reports) else 1


if __name__ == "__main__":
    raise SystemExit(main())
