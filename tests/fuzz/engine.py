"""The hostile-input fuzzer shared by the short suite (tests/fuzz/test_*.py) and the long run (bench/fuzz_long.py).

Three generators, all driven by one `random.Random` so a failure is reproduced from its seed:

* `conversation`: a provider-valid conversation made of careless content: lone surrogates and file names from
  ``os.listdir``, empty and huge texts, int and odd string ids, system messages anywhere, parallel and pending
  tool calls, tool arguments and outputs nested up to the store limit, media blocks;
* `provider_payload`: one such conversation written in a provider format by our own ``to_*`` writer;
* `mutate`: a payload with a few random edits (keys dropped, values swapped for other types, NaN, deep nesting,
  lone surrogates, cycles of lists, huge numbers), the way a careless client or a hostile one would send it.

Checks raise `Finding` (an AssertionError) naming what broke; the callers count them. "Typed" means a
`FormatError` for the readers and any `WindowkeeperError` elsewhere; anything else is an untyped error.
"""

from __future__ import annotations

import asyncio
import copy
import logging
import math
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from windowkeeper import Message
from windowkeeper.blocks import (
    ImageBlock,
    MediaRef,
    ReasoningBlock,
    TextBlock,
    ToolCallBlock,
    ToolResultBlock,
)
from windowkeeper.boundary import MAX_JSON_DEPTH
from windowkeeper.errors import FormatError, WindowkeeperError
from windowkeeper.llm import formats
from windowkeeper.units import validate

HALF_EMOJI = "\ud83d"
LISTDIR_NAME = b"r\xe9sum\xe9.pdf".decode("utf-8", "surrogateescape")
WORDS = (
    "invoice",
    "Berlin",
    "42 km",
    "2024-05-01",
    "/srv/app/config.yaml",
    "deploy",
    "error: timeout",
    "Sam",
    "décision",
    "数据",
    "😀",
    HALF_EMOJI,
    LISTDIR_NAME,
    "\x00",
    "\u202e",
    "{",
    "]]",
    "'",
    '"',
    "\\",
    "NaN",
    "",
)
TOOLS = ("search", "read_file", "get_weather", "calc")

SLOW_CALL_S = 10.0
"""A single reader, manager or memory call slower than this counts as a hang."""


class Finding(AssertionError):
    """A fuzz case broke a guarantee: an untyped error, an invalid view, lost data or a hang."""


@dataclass
class Tally:
    """What a fuzz run did and found; ``findings`` keeps the first few messages for the report."""

    views: int = 0
    payloads: int = 0
    typed_errors: int = 0
    untyped_errors: int = 0
    invalid_views: int = 0
    lost: int = 0
    hangs: int = 0
    slowest_s: float = 0.0
    findings: list[str] = field(default_factory=list)

    def found(self, kind: str, message: str) -> None:
        setattr(self, kind, getattr(self, kind) + 1)
        if len(self.findings) < 20:
            self.findings.append(f"{kind}: {message}")

    def timed(self, started: float, what: str) -> None:
        took = time.perf_counter() - started
        self.slowest_s = max(self.slowest_s, took)
        if took > SLOW_CALL_S:
            self.found("hangs", f"{what} took {took:.1f} s")

    @property
    def clean(self) -> bool:
        return not (self.untyped_errors or self.invalid_views or self.lost or self.hangs)

    def summary(self) -> str:
        return (
            f"views={self.views:,} payloads={self.payloads:,} typed_errors={self.typed_errors:,} "
            f"untyped_errors={self.untyped_errors} invalid_views={self.invalid_views} lost={self.lost} "
            f"hangs={self.hangs} slowest_call={self.slowest_s:.2f}s"
        )


# -- conversations --------------------------------------------------------------------------------------------


def nested(rnd: random.Random, depth: int) -> Any:
    value: Any = rnd.choice(WORDS)
    for _ in range(depth):
        value = [value] if rnd.random() < 0.5 else {rnd.choice(WORDS): value}
    return value


def text(rnd: random.Random) -> str:
    roll = rnd.random()
    if roll < 0.05:
        return ""
    words = rnd.choices(WORDS, k=rnd.randint(1, 8))
    repeat = 400 if roll > 0.98 else rnd.choice((1, 1, 1, 3, 20))
    return " ".join(words * repeat)


def json_value(rnd: random.Random) -> Any:
    roll = rnd.random()
    if roll < 0.4:
        return text(rnd)
    if roll < 0.6:
        return {"rows": [1, 2.5, None, True], "note": text(rnd)}
    if roll < 0.7:
        return nested(rnd, rnd.randint(1, MAX_JSON_DEPTH - 8))
    if roll < 0.8:
        return [text(rnd) for _ in range(rnd.randint(0, 5))]
    return rnd.choice((None, 0, -1, 10**30, 1e300, "", [], {}))


def message_id(rnd: random.Random, n: int) -> str | int:
    style = rnd.random()
    if style < 0.1:
        return n  # int ids, as some stores hand them out
    if style < 0.15:
        return f"id {n} {LISTDIR_NAME}"
    if style < 0.2:
        return f"{n}:{{}}/%s'; DROP TABLE x;--"
    return f"m{n}"


class _Builder:
    def __init__(self, rnd: random.Random) -> None:
        self.rnd = rnd
        self.messages: list[Message] = []
        self.calls = 0

    def add(self, role: str, content: list[Any], **fields: Any) -> None:
        n = len(self.messages)
        self.messages.append(
            Message(message_id=message_id(self.rnd, n), role=role, content=content, timestamp=float(n), **fields)  # type: ignore[arg-type]
        )

    def system(self) -> None:
        self.add("system", [TextBlock(text="rule: " + text(self.rnd))])

    def user(self) -> None:
        rnd = self.rnd
        content: list[Any] = [TextBlock(text=text(rnd))]
        if rnd.random() < 0.1:
            content.append(
                ImageBlock(
                    media=MediaRef(
                        url=f"https://example.com/{len(self.messages)}.png",
                        width=rnd.choice((None, 1, 4096)),
                        height=300,
                    )
                )
            )
        self.add("user", content, metadata={"file": LISTDIR_NAME} if rnd.random() < 0.1 else {})

    def assistant(self) -> None:
        rnd = self.rnd
        content: list[Any] = []
        if rnd.random() < 0.15:
            content.append(ReasoningBlock(text=text(rnd), signature="sig" if rnd.random() < 0.5 else None))
        content.append(TextBlock(text=text(rnd)))
        self.add("assistant", content)

    def tool_call(self, *, answered: int | None = None) -> None:
        rnd = self.rnd
        n_calls = rnd.randint(1, 3)
        ids = [f"call_{self.calls + k}" for k in range(n_calls)]
        self.calls += n_calls
        content: list[Any] = [TextBlock(text=text(rnd))] if rnd.random() < 0.5 else []
        content.extend(ToolCallBlock(id=cid, name=rnd.choice(TOOLS), args={"q": json_value(rnd)}) for cid in ids)
        self.add("assistant", content)
        order = list(ids)
        rnd.shuffle(order)
        if answered is not None:
            order = order[:answered]
        if not order:
            return
        if rnd.random() < 0.5:
            self.add(
                "tool",
                [
                    ToolResultBlock(call_id=cid, output=json_value(rnd), status=rnd.choice(("completed", "error")))
                    for cid in order
                ],
            )
        else:
            for cid in order:
                self.add("tool", [ToolResultBlock(call_id=cid, output=json_value(rnd))])


def conversation(rnd: random.Random, max_messages: int = 60) -> list[Message]:
    """A provider-valid conversation (OpenAI and Anthropic rules) of careless content."""
    target = rnd.randint(1, max_messages)
    b = _Builder(rnd)
    for _ in range(rnd.randint(0, 2)):
        b.system()
    while len(b.messages) < target:
        b.user()
        for _ in range(rnd.randint(0, 3)):
            if rnd.random() < 0.1:
                b.system()
            if rnd.random() < 0.5:
                b.tool_call()
            else:
                b.assistant()
    if rnd.random() < 0.25:
        b.tool_call(answered=rnd.randint(0, 2))
        last = max(i for i, m in enumerate(b.messages) if m.role == "assistant")
        wanted = set(b.messages[last].tool_call_ids())
        got = {blk.call_id for m in b.messages[last + 1 :] for blk in m.tool_result_blocks()}
        if wanted <= got:
            b.messages = b.messages[: last + 1]
    _dedupe_ids(b.messages)
    return b.messages


def _dedupe_ids(messages: list[Message]) -> None:
    seen: set[str] = set()
    for i, m in enumerate(messages):
        key = repr(m.message_id)
        if key in seen:
            m.message_id = f"dup{i}"
        seen.add(repr(m.message_id))


# -- provider payloads ----------------------------------------------------------------------------------------

Reader = Callable[[Any], list[Message]]


@dataclass(frozen=True)
class Codec:
    name: str
    write: Callable[[Sequence[Message]], Any]
    read: Reader


def _anthropic_write(messages: Sequence[Message]) -> Any:
    system, items = formats.to_anthropic(messages)
    return {"system": system, "messages": items}


def _gemini_write(messages: Sequence[Message]) -> Any:
    system, contents = formats.to_gemini(messages)
    return {"system_instruction": system, "contents": contents}


def _responses_write(messages: Sequence[Message]) -> Any:
    instructions, items = formats.to_responses_input(messages)
    return {"instructions": instructions, "input": items}


def _langchain_write(messages: Sequence[Message]) -> Any:
    return [m.model_dump() for m in formats.to_langchain(messages)]


def _langchain_read(payload: Any) -> list[Message]:
    from langchain_core.messages import messages_from_dict

    items = payload if isinstance(payload, list) else [payload]
    objects: list[Any] = []
    for item in items:
        if isinstance(item, dict) and isinstance(item.get("type"), str):
            try:
                objects.extend(messages_from_dict([{"type": item["type"], "data": item}]))
                continue
            except Exception:
                pass
        objects.append(item)
    return formats.from_langchain(objects)


def _mapping_arg(payload: Any, key: str) -> Any:
    return payload.get(key) if isinstance(payload, dict) else None


CODECS: tuple[Codec, ...] = (
    Codec("openai_chat", formats.to_openai_chat, formats.from_openai_chat),
    Codec(
        "responses",
        _responses_write,
        lambda p: formats.from_responses_input(
            _mapping_arg(p, "input") if isinstance(p, dict) else p, _mapping_arg(p, "instructions")
        ),
    ),
    Codec(
        "anthropic",
        _anthropic_write,
        lambda p: formats.from_anthropic(
            _mapping_arg(p, "system"), _mapping_arg(p, "messages") if isinstance(p, dict) else p
        ),
    ),
    Codec(
        "gemini",
        _gemini_write,
        lambda p: formats.from_gemini(
            _mapping_arg(p, "system_instruction"), _mapping_arg(p, "contents") if isinstance(p, dict) else p
        ),
    ),
    Codec("langchain", _langchain_write, _langchain_read),
)


def provider_payload(rnd: random.Random, codec: Codec) -> Any:
    return codec.write(conversation(rnd, max_messages=12))


def _cyclic(rnd: random.Random) -> Any:
    loop: list[Any] = [rnd.choice(WORDS)]
    loop.append(loop)
    return loop


_REPLACEMENTS: tuple[Callable[[random.Random], Any], ...] = (
    lambda r: None,
    lambda r: r.choice((0, -1, 1, 2**63, -(2**70), True, False)),
    lambda r: r.choice((math.nan, math.inf, -math.inf, 1e308, -0.0)),
    lambda r: r.choice(("", " ", HALF_EMOJI, LISTDIR_NAME, "\x00", "null", "[]", "{}", "user", "tool", "x" * 10_000)),
    lambda r: [],
    lambda r: {},
    lambda r: [r.choice(WORDS)],
    lambda r: {"type": r.choice(("text", "image", "tool_use", "function_call", "unknown", "")), "text": 5},
    lambda r: nested(r, r.choice((50, 150, 250, 600, 2_000))),
    lambda r: b"\xff\xfe bytes",
    _cyclic,
    lambda r: object(),
)


def _nodes(value: Any) -> list[tuple[Any, ...]]:
    """Paths to every node of a payload, not descending into cycles or below 40 levels (earlier edits)."""
    out: list[tuple[Any, ...]] = []
    stack: list[tuple[Any, tuple[Any, ...]]] = [(value, ())]
    seen: set[int] = set()
    while stack:
        item, path = stack.pop()
        out.append(path)
        if id(item) in seen or len(path) > 40:
            continue
        if isinstance(item, dict):
            seen.add(id(item))
            stack.extend((v, (*path, k)) for k, v in item.items())
        elif isinstance(item, list):
            seen.add(id(item))
            stack.extend((v, (*path, i)) for i, v in enumerate(item))
    return out


def _parent(value: Any, path: tuple[Any, ...]) -> Any:
    for step in path[:-1]:
        value = value[step]
    return value


def mutate(rnd: random.Random, payload: Any, edits: int | None = None) -> Any:
    """A copy of ``payload`` with 1-3 random edits (replace, delete, duplicate, swap a key, wrap)."""
    value = copy.deepcopy(payload)
    for _ in range(edits if edits is not None else rnd.randint(1, 3)):
        paths = _nodes(value)
        path = rnd.choice(paths)
        replacement = rnd.choice(_REPLACEMENTS)(rnd)
        if not path:
            value = replacement if rnd.random() < 0.3 else [value]
            continue
        parent = _parent(value, path)
        key = path[-1]
        action = rnd.random()
        if action < 0.55:
            parent[key] = replacement
        elif action < 0.75:
            del parent[key]
        elif action < 0.85 and isinstance(parent, list):
            parent.insert(key, parent[key])  # aliased, as a careless client might
        elif action < 0.95 and isinstance(parent, dict):
            parent[rnd.choice(("role", "type", "content", "id", "name", "tool_call_id", "parts", "__proto__"))] = (
                replacement
            )
        else:
            parent[key] = [parent[key]]
    return value


def check_reader(codec: Codec, payload: Any, tally: Tally) -> list[Message] | None:
    """Read one payload: a result or a `FormatError`; anything else (or a hang) is counted as a finding."""
    tally.payloads += 1
    started = time.perf_counter()
    try:
        messages = codec.read(payload)
    except FormatError:
        tally.typed_errors += 1
        return None
    except Exception as exc:
        tally.found("untyped_errors", f"{codec.name}: {type(exc).__name__}: {str(exc)[:300]}")
        return None
    finally:
        tally.timed(started, f"{codec.name} reader")
    if not isinstance(messages, list) or not all(isinstance(m, Message) for m in messages):
        tally.found("untyped_errors", f"{codec.name}: returned {type(messages).__name__}, not a list of Message")
        return None
    for m in messages:  # what a reader returns must be storable and hashable
        m.fingerprint()
    return messages


# -- managers and memory --------------------------------------------------------------------------------------


def check_view(
    name: str, view: Sequence[Message], source: Sequence[Message], tally: Tally, provider: str = "openai"
) -> None:
    """A manager's view is provider-valid whenever its input was, and invents no message ids."""
    tally.views += 1
    problems = validate(view, provider) if not validate(source, provider) else []
    if problems:
        tally.found("invalid_views", f"{name}: {problems[:2]}")
    known = {repr(m.message_id) for m in source}
    invented = [
        m.message_id
        for m in view
        if m.role != "system"
        and repr(m.message_id) not in known
        and not str(m.message_id).startswith(("windowkeeper", "summary", "recall:"))
    ]
    if invented:
        tally.found("invalid_views", f"{name}: view holds messages not in the input: {invented[:3]}")


def run_typed(tally: Tally, what: str, fn: Callable[[], Any]) -> Any:
    """Call ``fn``: a `WindowkeeperError` is a typed outcome, anything else a finding; time it for hangs."""
    started = time.perf_counter()
    try:
        return fn()
    except WindowkeeperError:
        tally.typed_errors += 1
        return None
    except Exception as exc:
        tally.found("untyped_errors", f"{what}: {type(exc).__name__}: {str(exc)[:300]}")
        return None
    finally:
        tally.timed(started, what)


def managers() -> list[tuple[str, Any]]:
    from windowkeeper.context.budget import TokenBudgetContextManager
    from windowkeeper.context.message import MessageContextManager
    from windowkeeper.context.summary import SummaryContextManager
    from windowkeeper.summarize.extractive import ExtractiveSummarizer

    return [
        ("budget", TokenBudgetContextManager(max_tokens=3_000, reserve_tokens=0, summarizer=ExtractiveSummarizer())),
        (
            "budget-failing-summarizer",
            TokenBudgetContextManager(max_tokens=2_500, reserve_tokens=0, summarizer=_failing_summarizer),
        ),
        ("message", MessageContextManager(max_messages=4)),
        ("summary", SummaryContextManager(max_messages=12, keep_recent=4, summarizer=ExtractiveSummarizer())),
    ]


def _failing_summarizer(messages: Sequence[Message]) -> str:
    raise RuntimeError("summarizer is down")


def check_managers(rnd: random.Random, tally: Tally, mgrs: list[tuple[str, Any]], rounds: int = 3) -> None:
    """Feed one growing conversation to every manager, a few messages at a time, checking each view."""
    from windowkeeper.state import AgentState, ExecMeta

    full = conversation(rnd, max_messages=rnd.choice((20, 60, 150)))
    cut_points = sorted(rnd.sample(range(1, len(full) + 1), k=min(rounds, len(full))))
    for name, manager in mgrs:
        thread = f"t{rnd.randrange(10**9)}"
        state = AgentState(execution_meta=ExecMeta(thread_id=thread))
        fed = 0
        for cut in cut_points:
            state.context = [*state.context, *full[fed:cut]]
            fed = cut
            source = list(state.context)
            result = run_typed(tally, f"{name}.trim_context", lambda m=manager, s=state: m.trim_context(s))
            if result is None:
                break
            state = result
            check_view(name, state.context, source, tally)


async def check_memory(rnd: random.Random, tally: Tally, store_factory: Callable[[], Any] | None = None) -> None:
    """Add a careless conversation to a memory; its view must stay valid and its history must keep everything."""
    from windowkeeper.memory import InMemoryMemory

    memory = InMemoryMemory(
        thresholds={"pre_rot_threshold": rnd.choice((800, 2_000, 8_000)), "keep_recent_count": rnd.choice((1, 2, 4))}
    )
    session = f"s{rnd.randrange(10**9)}"
    added: list[str] = []
    fed: list[Message] = []
    for message in conversation(rnd, max_messages=rnd.choice((10, 40))):
        fed.append(message)
        started = time.perf_counter()
        try:
            await asyncio.wait_for(memory.add(message, session_id=session), timeout=SLOW_CALL_S * 3)
            added.append(str(message.message_id))
        except WindowkeeperError:
            tally.typed_errors += 1
        except TimeoutError:
            tally.found("hangs", "memory.add did not return")
        except Exception as exc:
            tally.found("untyped_errors", f"memory.add: {type(exc).__name__}: {str(exc)[:300]}")
        finally:
            tally.timed(started, "memory.add")
        view = await memory.messages(session)
        tally.views += 1
        problems = validate(view, "anthropic") if not validate(fed, "anthropic") else []
        if problems:
            tally.found("invalid_views", f"memory: {problems[:2]}")
    history = await memory.history(session)
    kept = {str(event["message"]["id"]) for event in history if not str(event["message"]["id"]).startswith("summary")}
    missing = [mid for mid in added if mid not in kept]
    if missing:
        tally.found("lost", f"memory lost events {missing[:5]}")
    await memory.close() if hasattr(memory, "close") else None


# -- the CLI ----------------------------------------------------------------------------------------------------


def cli_input(rnd: random.Random) -> bytes:
    """A file a careless user might point the CLI at: binary, Latin-1, deep JSON, odd shapes, mutated payloads."""
    import json

    roll = rnd.random()
    if roll < 0.1:
        return rnd.randbytes(rnd.randint(0, 2_000))
    if roll < 0.2:
        return "café, naïve résumé".encode("latin-1")
    if roll < 0.3:
        depth = rnd.choice((100, 1_000, 100_000))
        return ("[" * depth + "]" * depth).encode()
    if roll < 0.4:
        return rnd.choice((b"null", b"42", b'"text"', b"[]", b"{}", b"[1, 2]", b'{"messages": 5}', b"NaN", b""))
    codec = rnd.choice(CODECS[:4])
    payload = mutate(rnd, provider_payload(rnd, codec)) if rnd.random() < 0.7 else provider_payload(rnd, codec)
    try:
        return json.dumps(payload, ensure_ascii=False, default=repr).encode("utf-8", "surrogateescape")
    except (ValueError, RecursionError, UnicodeError):  # a cycle or a surrogate the writer cannot encode
        return rb'{"messages": [{"role": "user", "content": "\ud83d"}]}'


def check_cli(rnd: random.Random, tally: Tally, workdir: Any) -> None:
    """One CLI run on a hostile file: exit 0, 1 or 2 with a one-line error, never a traceback or a hang."""
    from typer.testing import CliRunner

    from windowkeeper.cli.app import app

    path = workdir / f"in-{rnd.randrange(10**9)}.json"
    path.write_bytes(cli_input(rnd))
    command = rnd.choice(("inspect", "compact"))
    args = [command, str(path)]
    if command == "compact":
        args += ["-o", str(workdir / f"out-{rnd.randrange(10**9)}.json"), "--budget", str(rnd.choice((500, 4_000)))]
    if rnd.random() < 0.3:
        args.append("--json")
    tally.payloads += 1
    root = logging.getLogger()
    handlers = list(root.handlers)
    started = time.perf_counter()
    try:
        result = CliRunner().invoke(app, args)
    finally:
        # the app's logging.basicConfig binds the runner's captured stderr, closed after the run: drop it, as a
        # real process would end with it
        for handler in [h for h in root.handlers if h not in handlers]:
            root.removeHandler(handler)
    tally.timed(started, f"windowkeeper {command}")
    output = result.output or ""
    if (
        result.exit_code not in (0, 1, 2)
        or "Traceback" in output
        or (result.exception is not None and not isinstance(result.exception, SystemExit))
    ):
        tally.found("untyped_errors", f"cli {command}: exit {result.exit_code}, {result.exception!r}: {output[-300:]}")
    elif result.exit_code == 2:
        tally.typed_errors += 1


__all__ = [
    "CODECS",
    "Codec",
    "Finding",
    "Tally",
    "check_cli",
    "check_managers",
    "check_memory",
    "check_reader",
    "check_view",
    "cli_input",
    "conversation",
    "managers",
    "mutate",
    "provider_payload",
    "run_typed",
]
