# ruff: noqa: RUF001  (the Chinese prose uses full-width punctuation on purpose)
"""Deterministic generator of long, realistic coding/debugging agent sessions.

Demos, benchmarks and memory tests need histories that look like what an agent really accumulates — a system
prompt, user requests, reasoning, parallel tool calls, file reads of real-looking code, pytest logs, stack traces,
failed tool calls, decisions and measurements — at any length, and they need to know which facts such a history
contains so they can measure how many survive trimming or summarization.

Everything is derived from the seed through one `random.Random`: message ids, tool call ids and timestamps
included, so the same arguments give byte-identical sessions, and ``generate_session(n)`` is a prefix of
``generate_session(n + 1)``. Every `Fact` text appears verbatim in the message it points to, so retention can be
checked by substring search. ``language="zh"`` writes the prose (requests, reasoning, answers, code comments) in
Chinese while code, logs and paths stay as they would in a real Chinese-speaking team's repository.
"""

from __future__ import annotations

import hashlib
import json
import random
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from ..blocks import ContentBlock, ReasoningBlock, TextBlock, ToolCallBlock, ToolResultBlock
from ..errors import ConfigurationError
from ..messages import Message

if TYPE_CHECKING:
    from ..tokens import TokenCounter

Language = Literal["en", "zh"]
FactKind = Literal["goal", "constraint", "file_path", "decision", "error", "number"]

DEFAULT_START_TIME = 1_718_000_000.0
"""2024-06-10 06:13:20 UTC: sessions start here plus a seed-derived offset, so timestamps never read the clock."""


@dataclass(frozen=True)
class Fact:
    """Something stated in the session that a good summary should keep; ``text`` occurs verbatim in the message."""

    text: str
    kind: FactKind
    message_id: str
    step: int


@dataclass
class GeneratedSession:
    """A generated history and the ground-truth facts it states."""

    messages: list[Message]
    facts: list[Fact]
    seed: int
    language: Language
    steps: int

    def facts_of(self, kind: FactKind) -> list[Fact]:
        return [f for f in self.facts if f.kind == kind]

    def message_by_id(self, message_id: str) -> Message:
        for message in self.messages:
            if message.message_id == message_id:
                return message
        raise KeyError(f"no message with id {message_id!r} in this session")


# -- vocabulary -------------------------------------------------------------------------------------------------

_PROJECTS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("billing", ("client", "retry", "invoices", "ledger", "webhooks", "currency")),
    ("ingest", ("reader", "parser", "batching", "schema", "dedupe", "sink")),
    ("scheduler", ("queue", "worker", "leases", "cron", "backoff", "metrics")),
    ("search", ("index", "tokenizer", "ranking", "cache", "query", "shards")),
    ("accounts", ("sessions", "tokens", "profiles", "audit", "permissions", "mailer")),
)
_NOUNS = ("invoice", "record", "batch", "job", "document", "session", "payload", "entry", "request", "event")
_VERBS = ("load", "parse", "apply", "flush", "resolve", "merge", "validate", "render", "fetch", "schedule")
_FIELDS = ("customer_id", "account_id", "retry_after", "created_at", "shard_key", "tenant", "amount_cents", "etag")


@dataclass(frozen=True)
class _Bug:
    error: Callable[[random.Random, str], str]
    symptom_en: str
    symptom_zh: str
    decision_en: Callable[[random.Random], str]
    decision_zh: Callable[[random.Random], str]


def _choice(rng: random.Random, items: tuple[str, ...]) -> str:
    return items[rng.randrange(len(items))]


_BUGS: tuple[_Bug, ...] = (
    _Bug(
        error=lambda r, f: f"KeyError: '{f}'",
        symptom_en="crashes on records that come without `{field}`",
        symptom_zh="遇到缺少 `{field}` 的记录就会崩溃",
        decision_en=lambda r: (
            f"treat a missing key as absent and skip the record, logging it at WARNING "
            f"(at most {r.choice((10, 20, 50))} log lines per batch)"
        ),
        decision_zh=lambda r: f"缺少字段时跳过该记录并记录 WARNING 日志（每批最多 {r.choice((10, 20, 50))} 条）",
    ),
    _Bug(
        error=lambda r, f: f"TimeoutError: upstream did not answer within {r.choice((10, 30, 60))} s",
        symptom_en="times out intermittently when the upstream API is slow",
        symptom_zh="上游接口变慢时会间歇性超时",
        decision_en=lambda r: (
            f"retry at most {r.choice((3, 4, 5))} times with exponential backoff starting at "
            f"{r.choice((200, 250, 500))} ms"
        ),
        decision_zh=lambda r: f"最多重试 {r.choice((3, 4, 5))} 次，指数退避，初始间隔 {r.choice((200, 250, 500))} 毫秒",
    ),
    _Bug(
        error=lambda r, f: (
            f"ValueError: invalid literal for int() with base 10: '{r.choice(('N/A', '', '12.5', 'null'))}'"
        ),
        symptom_en="fails to parse `{field}` values exported by the legacy system",
        symptom_zh="解析旧系统导出的 `{field}` 字段时失败",
        decision_en=lambda r: (
            f"parse through a tolerant helper that maps placeholders to None and rejects rows "
            f"after {r.choice((3, 5, 10))} consecutive failures"
        ),
        decision_zh=lambda r: f"用容错的解析函数把占位符映射为 None，连续失败 {r.choice((3, 5, 10))} 行后拒绝整批",
    ),
    _Bug(
        error=lambda r, f: "AttributeError: 'NoneType' object has no attribute 'items'",
        symptom_en="blows up when the cache returns nothing for `{field}`",
        symptom_zh="缓存里查不到 `{field}` 时直接报错",
        decision_en=lambda r: (
            f"return an empty mapping on a cache miss and refresh it in the background every "
            f"{r.choice((30, 60, 120))} s"
        ),
        decision_zh=lambda r: f"缓存未命中时返回空映射，并每 {r.choice((30, 60, 120))} 秒在后台刷新",
    ),
    _Bug(
        error=lambda r, f: "sqlite3.OperationalError: database is locked",
        symptom_en="hits `database is locked` under concurrent writes",
        symptom_zh="并发写入时出现 `database is locked`",
        decision_en=lambda r: (
            f"serialize writes through one connection with WAL mode and a busy timeout of "
            f"{r.choice((2000, 5000, 10000))} ms"
        ),
        decision_zh=lambda r: (
            f"启用 WAL 模式，所有写入走同一个连接，busy timeout 设为 {r.choice((2000, 5000, 10000))} 毫秒"
        ),
    ),
    _Bug(
        error=lambda r, f: f"AssertionError: assert {r.randint(2, 9)} == {r.randint(10, 40)}",
        symptom_en="returns too few items when `{field}` repeats across pages",
        symptom_zh="当 `{field}` 在分页之间重复时返回的条目太少",
        decision_en=lambda r: (
            f"deduplicate by `(tenant, id)` instead of `id` and raise the page size to {r.choice((100, 200, 500))}"
        ),
        decision_zh=lambda r: f"改为按 `(tenant, id)` 去重，并把分页大小提高到 {r.choice((100, 200, 500))}",
    ),
)

_CONSTRAINTS_EN = (
    "Please keep the public API of `{module}` unchanged; other teams import it.",
    "Don't add new dependencies, we can only use the standard library here.",
    "Keep the fix compatible with Python 3.9, production still runs it.",
    "Stay under {n} ms p95 latency for this endpoint, that is our SLO.",
    "Don't touch the database schema in this change.",
)
_CONSTRAINTS_ZH = (
    "请不要改动 `{module}` 的公开接口，其他团队在用。",
    "不要引入新的依赖，这里只能用标准库。",
    "修复要兼容 Python 3.9，生产环境还在用它。",
    "这个接口的 p95 延迟必须低于 {n} 毫秒，这是我们的 SLO。",
    "这次改动不要碰数据库表结构。",
)


# -- the writer -------------------------------------------------------------------------------------------------


@dataclass
class _Episode:
    """One user request and the agent's work on it."""

    package: str
    module: str
    path: str
    test_path: str
    function: str
    field_name: str
    bug: _Bug
    error_line: str
    decision: str
    phases: list[str]
    line_no: int
    caller_module: str


@dataclass
class _Writer:
    seed: int
    language: Language
    output_scale: float
    rng: random.Random
    prefix: str
    clock: float
    messages: list[Message] = field(default_factory=list)
    facts: list[Fact] = field(default_factory=list)
    step: int = 0
    episode: _Episode | None = None
    modified: list[str] = field(default_factory=list)

    # ---- primitives

    @property
    def zh(self) -> bool:
        return self.language == "zh"

    def _next_id(self) -> str:
        return f"{self.prefix}-{len(self.messages):06d}"

    def _tick(self, low: float, high: float) -> float:
        self.clock = round(self.clock + self.rng.uniform(low, high), 3)
        return self.clock

    def _emit(self, role: Any, content: list[ContentBlock], **fields: Any) -> Message:
        message = Message(message_id=self._next_id(), role=role, content=content, timestamp=self.clock, **fields)
        self.messages.append(message)
        return message

    def _fact(self, text: str, kind: FactKind, message: Message) -> None:
        self.facts.append(Fact(text=text, kind=kind, message_id=str(message.message_id), step=self.step))

    def _lines(self, base: int) -> int:
        return max(4, int(base * self.output_scale))

    # ---- episodes

    def new_episode(self) -> _Episode:
        rng = self.rng
        package, modules = _PROJECTS[rng.randrange(len(_PROJECTS))]
        module = _choice(rng, modules)
        bug = _BUGS[rng.randrange(len(_BUGS))]
        field_name = _choice(rng, _FIELDS)
        function = f"{_choice(rng, _VERBS)}_{_choice(rng, _NOUNS)}s"
        phases = ["explore"]
        if rng.random() < 0.35:
            phases.append("missing_file")
        phases += ["reproduce", "inspect", "edit", "verify"]
        if rng.random() < 0.6:
            phases.append("measure")
        phases.append("report")
        return _Episode(
            package=package,
            module=module,
            path=f"src/{package}/{module}.py",
            test_path=f"tests/{package}/test_{module}.py",
            function=function,
            field_name=field_name,
            bug=bug,
            error_line=bug.error(rng, field_name),
            decision=(bug.decision_zh if self.zh else bug.decision_en)(rng),
            phases=phases,
            line_no=rng.randint(40, 180),
            caller_module=_choice(rng, ("api", "service", "jobs", "handlers")),
        )

    def user_request(self, first: bool) -> None:
        ep = self.episode = self.new_episode()
        symptom = (ep.bug.symptom_zh if self.zh else ep.bug.symptom_en).format(field=ep.field_name)
        if self.zh:
            goal = f"修复 `{ep.path}` 里的 `{ep.function}`：它{symptom}"
            opener = "你好！" if first else self.rng.choice(("谢谢，下一个问题。", "好的，继续。", "很好。接下来："))
            text = f"{opener}{goal}。日志里看到的是 `{ep.error_line}`。请先复现再修改。"
        else:
            goal = f"fix `{ep.function}` in `{ep.path}`: it {symptom}"
            opener = "Hi!" if first else self.rng.choice(("Thanks, next one.", "Great, moving on.", "Nice. Next:"))
            text = f"{opener} Please {goal}. The logs show `{ep.error_line}`. Reproduce it before changing anything."
        self._tick(20, 240)
        message = self._emit("user", [TextBlock(text=text)])
        self._fact(goal, "goal", message)

    def user_constraint(self) -> None:
        ep = self.episode
        assert ep is not None
        pool = _CONSTRAINTS_ZH if self.zh else _CONSTRAINTS_EN
        text = pool[self.rng.randrange(len(pool))].format(
            module=f"{ep.package}.{ep.module}", n=self.rng.choice((150, 200, 250, 300))
        )
        self._tick(5, 90)
        message = self._emit("user", [TextBlock(text=text)])
        self._fact(text, "constraint", message)

    # ---- one model call

    def add_step(self) -> None:
        self.step += 1
        if self.episode is None or not self.episode.phases:
            self.user_request(first=False)
        ep = self.episode
        assert ep is not None
        phase = ep.phases.pop(0)
        getattr(self, f"_phase_{phase}")(ep)
        if phase == "report":
            self.episode = None
            self.user_request(first=False)
        elif phase in ("reproduce", "inspect") and self.rng.random() < 0.15:
            self.user_constraint()

    def _call_id(self, k: int) -> str:
        digest = hashlib.blake2b(f"{self.prefix}:{len(self.messages)}:{k}".encode(), digest_size=9).hexdigest()
        return f"call_{digest}"

    def _assistant(
        self,
        reasoning: str,
        text: str | None,
        calls: list[tuple[str, dict[str, Any]]],
    ) -> tuple[Message, list[str]]:
        self._tick(2, 25)
        content: list[ContentBlock] = []
        fields: dict[str, Any] = {}
        if self.rng.random() < 0.5:
            content.append(ReasoningBlock(text=reasoning))
        else:
            fields["reasoning"] = reasoning
        if text:
            content.append(TextBlock(text=text))
        ids = [self._call_id(k) for k in range(len(calls))]
        for call_id, (name, args) in zip(ids, calls, strict=True):
            content.append(ToolCallBlock(id=call_id, name=name, args=args))
        if calls:
            fields["tools_calls"] = [
                {"id": i, "type": "function", "function": {"name": n, "arguments": json.dumps(a, ensure_ascii=False)}}
                for i, (n, a) in zip(ids, calls, strict=True)
            ]
        return self._emit("assistant", content, **fields), ids

    def _result(
        self, call_id: str, name: str, output: str, status: Literal["completed", "error"] = "completed"
    ) -> Message:
        self._tick(0.2, 12)
        return self._emit("tool", [ToolResultBlock(call_id=call_id, output=output, status=status, name=name)])

    # ---- phases

    def _phase_explore(self, ep: _Episode) -> None:
        if self.zh:
            reasoning = (
                f"用户说 `{ep.function}` 出错，报错是 `{ep.error_line}`。先读 `{ep.path}`，"
                f"同时在代码库里搜索 `{ep.field_name}` 的用法，看看调用方怎么传参。"
            )
        else:
            reasoning = (
                f"The user reports `{ep.error_line}` from `{ep.function}`. I'll read `{ep.path}` and, in "
                f"parallel, grep for `{ep.field_name}` to see how callers pass it."
            )
        calls: list[tuple[str, dict[str, Any]]] = [
            ("read_file", {"path": ep.path}),
            ("grep", {"pattern": ep.field_name, "path": f"src/{ep.package}"}),
        ]
        if self.rng.random() < 0.5:
            calls.append(("read_file", {"path": ep.test_path}))
        _, ids = self._assistant(reasoning, None, calls)
        self._result(ids[0], "read_file", _python_file(self.rng, ep, self.zh, self._lines(110)))
        self._result(ids[1], "grep", _grep_output(self.rng, ep, self._lines(14)))
        if len(calls) == 3:
            self._result(ids[2], "read_file", _test_file(self.rng, ep, self._lines(60)))

    def _phase_missing_file(self, ep: _Episode) -> None:
        wrong = f"src/{ep.package}/{ep.module}_utils.py"
        if self.zh:
            reasoning = f"`{ep.function}` 调用了一个辅助函数，可能在 `{wrong}` 里，读一下确认。"
        else:
            reasoning = f"`{ep.function}` calls a helper that probably lives in `{wrong}`; reading it to confirm."
        _, ids = self._assistant(reasoning, None, [("read_file", {"path": wrong})])
        error = f"FileNotFoundError: [Errno 2] No such file or directory: '{wrong}'"
        message = self._result(ids[0], "read_file", error, status="error")
        self._fact(error, "error", message)

    def _phase_reproduce(self, ep: _Episode) -> None:
        if self.zh:
            reasoning = f"先跑 `{ep.test_path}` 复现问题，确认失败的断言和回溯。"
        else:
            reasoning = f"Running `{ep.test_path}` first to reproduce the failure and see the traceback."
        timeout = self.rng.random() < 0.12
        calls: list[tuple[str, dict[str, Any]]] = [("run_tests", {"path": ep.test_path, "args": ["-x", "-q"]})]
        if timeout:
            calls.insert(0, ("shell", {"command": f"python -m {ep.package}.loadtest --requests 20000", "timeout": 120}))
        _, ids = self._assistant(reasoning, None, calls)
        if timeout:
            error = "CommandTimeout: command exceeded the 120 s limit and was killed"
            message = self._result(ids[0], "shell", error, status="error")
            self._fact(error, "error", message)
        log = _pytest_log(self.rng, ep, failing=True, lines=self._lines(70))
        message = self._result(ids[-1], "run_tests", log)
        self._fact(ep.error_line, "error", message)

    def _phase_inspect(self, ep: _Episode) -> None:
        caller = f"src/{ep.package}/{ep.caller_module}.py"
        if self.zh:
            reasoning = (
                f"回溯指向 `{ep.path}` 第 {ep.line_no} 行。还要看调用方 `{caller}` 和最近的提交，"
                "确认这是不是新引入的回归。"
            )
        else:
            reasoning = (
                f"The traceback points at line {ep.line_no} of `{ep.path}`. Checking the caller "
                f"`{caller}` and recent commits to see whether this is a regression."
            )
        calls: list[tuple[str, dict[str, Any]]] = [
            ("read_file", {"path": caller, "start_line": 1, "end_line": 120}),
            ("shell", {"command": f"git log --oneline -n 8 -- {ep.path}"}),
        ]
        _, ids = self._assistant(reasoning, None, calls)
        self._result(ids[0], "read_file", _python_file(self.rng, ep, self.zh, self._lines(80), caller=caller))
        self._result(ids[1], "shell", _git_log(self.rng, ep))

    def _phase_edit(self, ep: _Episode) -> None:
        if self.zh:
            reasoning = "问题清楚了：代码默认字段总是存在、上游总是及时返回。改动要小，并补一个回归测试。"
            text = f"决定：{ep.decision}。修改 `{ep.path}` 和 `{ep.test_path}`。"
        else:
            reasoning = (
                "The cause is clear: the code assumes the field is always present and upstream always "
                "answers in time. Keeping the change small and adding a regression test."
            )
            text = f"Decision: {ep.decision}. Editing `{ep.path}` and `{ep.test_path}`."
        new_body = _edit_snippet(self.rng, ep, self.zh)
        calls: list[tuple[str, dict[str, Any]]] = [
            ("edit_file", {"path": ep.path, "old": f"    value = item['{ep.field_name}']\n", "new": new_body}),
            ("edit_file", {"path": ep.test_path, "old": "", "new": _regression_test(ep)}),
        ]
        message, ids = self._assistant(reasoning, text, calls)
        self._fact(ep.decision, "decision", message)
        for path in (ep.path, ep.test_path):
            self._fact(path, "file_path", message)
            if path not in self.modified:
                self.modified.append(path)
        added = new_body.count("\n")
        self._result(ids[0], "edit_file", f"Applied edit to {ep.path}: +{added} -1 lines")
        test_added = _regression_test(ep).count("\n")
        self._result(ids[1], "edit_file", f"Applied edit to {ep.test_path}: +{test_added} -0 lines")

    def _phase_verify(self, ep: _Episode) -> None:
        reasoning = "重新运行测试，确认修复有效且没有回归。" if self.zh else "Re-running the tests to confirm the fix."
        _, ids = self._assistant(reasoning, None, [("run_tests", {"path": f"tests/{ep.package}", "args": ["-q"]})])
        self._result(ids[0], "run_tests", _pytest_log(self.rng, ep, failing=False, lines=self._lines(40)))

    def _phase_measure(self, ep: _Episode) -> None:
        if self.zh:
            reasoning = "跑一下基准测试，对比修改前后的延迟和内存。"
        else:
            reasoning = "Running the benchmark to compare latency and memory before and after the change."
        command = f"python -m bench.{ep.module} --requests 5000"
        _, ids = self._assistant(reasoning, None, [("shell", {"command": command})])
        p95 = self.rng.randint(80, 900)
        rps = self.rng.randint(300, 9000)
        mem = self.rng.randint(90, 2048)
        metric = f"p95 latency: {p95} ms"
        out = (
            f"$ {command}\nwarming up (500 requests)...\nrequests: 5000\nerrors: 0\n"
            f"p50 latency: {max(1, p95 // 3)} ms\n{metric}\nthroughput: {rps} requests/s\n"
            f"peak memory: {mem} MiB\n"
        )
        message = self._result(ids[0], "shell", out)
        self._fact(metric, "number", message)
        self._fact(f"peak memory: {mem} MiB", "number", message)

    def _phase_report(self, ep: _Episode) -> None:
        numbers = [f for f in self.facts[-3:] if f.kind == "number"]
        if self.zh:
            parts = [f"已修复 `{ep.function}`（`{ep.path}`），并在 `{ep.test_path}` 中增加了回归测试，全部测试通过。"]
            if numbers:
                parts.append(f"基准测试结果：{numbers[0].text}。")
            parts.append(f"采用的方案：{ep.decision}。")
            reasoning = "总结改动和验证结果给用户。"
        else:
            parts = [
                f"Fixed `{ep.function}` in `{ep.path}` and added a regression test to `{ep.test_path}`; "
                "the test suite passes."
            ]
            if numbers:
                parts.append(f"Benchmark: {numbers[0].text}.")
            parts.append(f"Approach: {ep.decision}.")
            reasoning = "Summarizing the change and the verification for the user."
        self._assistant(reasoning, " ".join(parts), [])


# -- tool output builders ---------------------------------------------------------------------------------------


def _numbered(lines: list[str], start: int = 1) -> str:
    return "\n".join(f"{i:>6}\t{line}" for i, line in enumerate(lines, start)) + "\n"


def _python_file(rng: random.Random, ep: _Episode, zh: bool, n_lines: int, caller: str | None = None) -> str:
    """A plausible module, numbered like a ``read_file`` tool prints it.

    The episode's own module ends with the buggy entry point (and records its line in ``ep.line_no`` so the
    traceback points at it); a ``caller`` module ends with the batch runner that calls it instead.
    """
    path = caller or ep.path
    stem = path.rsplit("/", 1)[-1].removesuffix(".py")
    doc = f"{stem} 模块：负责 {ep.package} 的数据处理。" if zh else f"{stem.capitalize()} handling for {ep.package}."
    helper_doc = "按租户分组并过滤无效条目。" if zh else "Group by tenant and drop entries that cannot be processed."
    entry_doc = "主入口：调用方在每个批次上调用它。" if zh else "Entry point called once per batch by the worker."
    lines = [
        f'"""{doc}"""',
        "",
        "from __future__ import annotations",
        "",
        "import logging",
        "import time",
        "from dataclasses import dataclass, field",
        "from typing import Any",
        "",
        f"from {ep.package}.config import Settings",
        "",
        "logger = logging.getLogger(__name__)",
        "",
        f"DEFAULT_TIMEOUT_S = {rng.choice((10, 30, 60))}",
        f"MAX_BATCH = {rng.choice((100, 250, 500, 1000))}",
        "",
    ]
    cls = "".join(part.capitalize() for part in f"{ep.module}_{rng.choice(_NOUNS)}".split("_"))
    lines += [
        "",
        "@dataclass",
        f"class {cls}:",
        f'    """{"一条待处理的记录。" if zh else "One unit of work as it moves through the pipeline."}"""',
        "",
        "    id: str",
        "    tenant: str",
        f"    {ep.field_name}: str | None = None",
        "    attempts: int = 0",
        "    tags: list[str] = field(default_factory=list)",
        "",
    ]
    while len(lines) < n_lines - 16:
        verb, noun = rng.choice(_VERBS), rng.choice(_NOUNS)
        comment = "# 保持原有顺序，调用方依赖它" if zh else "# keep the original order: callers rely on it"
        lines += [
            "",
            f"def _{verb}_{noun}(items: list[dict[str, Any]], settings: Settings) -> list[dict[str, Any]]:",
            f'    """{helper_doc}"""',
            "    out: list[dict[str, Any]] = []",
            "    for item in items[:MAX_BATCH]:",
            f"        if item.get('tenant') not in settings.{rng.choice(('tenants', 'enabled_tenants'))}:",
            "            continue",
            f"        {comment}",
            f"        item['{rng.choice(_FIELDS)}'] = item.get('{rng.choice(_FIELDS)}')",
            "        out.append(item)",
            f"    logger.debug('{verb} {noun}: %d of %d kept', len(out), len(items))",
            "    return out",
            "",
        ]
    if caller is not None:
        lines += [
            "",
            f"from {ep.package}.{ep.module} import {ep.function}",
            "",
            "",
            "def run_batch(batch: list[dict[str, Any]], settings: Settings) -> int:",
            f"    done = {ep.function}(batch, settings)",
            "    logger.info('batch of %d: %d processed', len(batch), len(done))",
            "    return len(done)",
        ]
        return f"# {path}\n" + _numbered(lines)
    lines += [
        "",
        f"def {ep.function}(items: list[dict[str, Any]], settings: Settings) -> list[{cls}]:",
        f'    """{entry_doc}"""',
        "    started = time.monotonic()",
        f"    result: list[{cls}] = []",
        "    for item in items:",
    ]
    ep.line_no = len(lines) + 1
    lines += [
        f"        value = item['{ep.field_name}']",
        f"        result.append({cls}(id=str(item['id']), tenant=item['tenant'], {ep.field_name}=value))",
        "        if time.monotonic() - started > DEFAULT_TIMEOUT_S:",
        f"            raise TimeoutError('{ep.function} exceeded %s s' % DEFAULT_TIMEOUT_S)",
        "    return result",
    ]
    return f"# {path}\n" + _numbered(lines)


def _test_file(rng: random.Random, ep: _Episode, n_lines: int) -> str:
    lines = ["import pytest", "", f"from {ep.package}.{ep.module} import {ep.function}", ""]
    k = 0
    while len(lines) < n_lines:
        k += 1
        tenant = rng.choice(("acme", "globex", "initech", "umbrella"))
        lines += [
            "",
            f"def test_{ep.function}_case_{k}(settings):",
            f"    items = [{{'id': {rng.randint(1, 9999)}, 'tenant': '{tenant}', '{ep.field_name}': "
            f"'{rng.randint(100, 999)}'}}]",
            f"    result = {ep.function}(items, settings)",
            f"    assert len(result) == {1}",
            f"    assert result[0].tenant == '{tenant}'",
        ]
    return f"# {ep.test_path}\n" + _numbered(lines)


def _grep_output(rng: random.Random, ep: _Episode, n_hits: int) -> str:
    out = []
    for _ in range(n_hits):
        module = rng.choice([m for p, ms in _PROJECTS if p == ep.package for m in ms])
        line = rng.randint(5, 400)
        snippet = rng.choice(
            (
                f"value = item['{ep.field_name}']",
                f"payload.get('{ep.field_name}')",
                f"{ep.field_name}=row.{ep.field_name},",
                f"if not record.{ep.field_name}:",
                f"logger.info('missing {ep.field_name} for %s', record.id)",
            )
        )
        out.append(f"src/{ep.package}/{module}.py:{line}:    {snippet}")
    return "\n".join(out) + "\n"


def _pytest_log(rng: random.Random, ep: _Episode, *, failing: bool, lines: int) -> str:
    total = max(3, lines // 2)
    failed = 1 if failing else 0
    out = [
        "============================= test session starts ==============================",
        "platform linux -- Python 3.11.7, pytest-8.2.1, pluggy-1.5.0",
        "rootdir: /workspace",
        "configfile: pyproject.toml",
        "plugins: asyncio-0.23.7, timeout-2.3.1",
        f"collected {total} items",
        "",
    ]
    for k in range(total):
        name = f"test_{ep.function}_case_{k + 1}"
        verdict = "FAILED" if failing and k == total // 2 else "PASSED"
        out.append(f"{ep.test_path}::{name} {verdict} [{(k + 1) * 100 // total:>3}%]")
    if failing:
        caller = f"src/{ep.package}/{ep.caller_module}.py"
        out += [
            "",
            "=================================== FAILURES ===================================",
            f"_______________________ test_{ep.function}_case_{total // 2 + 1} ________________________",
            "",
            "Traceback (most recent call last):",
            f'  File "{ep.test_path}", line {rng.randint(10, 80)}, in test_{ep.function}_case_{total // 2 + 1}',
            f"    result = {ep.function}(items, settings)",
            f'  File "{caller}", line {rng.randint(20, 300)}, in run_batch',
            f"    done = {ep.function}(batch, settings)",
            f'  File "{ep.path}", line {ep.line_no}, in {ep.function}',
            f"    value = item['{ep.field_name}']",
            ep.error_line,
            "",
            "=========================== short test summary info ============================",
            f"FAILED {ep.test_path}::test_{ep.function}_case_{total // 2 + 1} - {ep.error_line}",
        ]
    seconds = rng.randint(80, 2400) / 100
    summary = f"{failed} failed, {total - failed} passed" if failing else f"{total} passed"
    out.append(f"========================= {summary} in {seconds:.2f}s =========================")
    return "\n".join(out) + "\n"


def _git_log(rng: random.Random, ep: _Episode) -> str:
    subjects = (
        f"{ep.module}: batch {ep.function} calls",
        f"{ep.package}: read {ep.field_name} from the new export format",
        "bump dependencies",
        f"{ep.module}: add metrics for slow batches",
        "ci: run tests on Python 3.12",
        f"{ep.package}: tidy logging",
    )
    return "".join(f"{rng.getrandbits(28):07x} {rng.choice(subjects)}\n" for _ in range(rng.randint(4, 8)))


def _edit_snippet(rng: random.Random, ep: _Episode, zh: bool) -> str:
    comment = "# 缺少字段时跳过，避免整批失败" if zh else "# skip incomplete records instead of failing the batch"
    return (
        f"    {comment}\n"
        f"    value = item.get('{ep.field_name}')\n"
        "    if value is None:\n"
        f"        logger.warning('skipping %s without {ep.field_name}', item.get('id'))\n"
        "        continue\n"
    )


def _regression_test(ep: _Episode) -> str:
    return (
        f"\n\ndef test_{ep.function}_skips_records_without_{ep.field_name}(settings):\n"
        "    items = [{'id': 1, 'tenant': 'acme'}]\n"
        f"    assert {ep.function}(items, settings) == []\n"
    )


# -- public API -------------------------------------------------------------------------------------------------

_SYSTEM_EN = (
    "You are a senior software engineer working as a coding agent in the repository at /workspace. "
    "Use the tools to read files, search the code, run tests and shell commands, and edit files. "
    "Reproduce a bug before fixing it, keep changes minimal, add a regression test for every fix, and report "
    "what you changed, why, and how you verified it. Tools: read_file(path, start_line?, end_line?), "
    "grep(pattern, path), run_tests(path, args?), edit_file(path, old, new), shell(command, timeout?)."
)
_SYSTEM_ZH = (
    "你是一名资深软件工程师，作为编码智能体在 /workspace 仓库中工作。使用工具读取文件、搜索代码、运行测试和命令、"
    "编辑文件。修复缺陷前先复现，改动保持最小，每个修复都要补回归测试，最后说明改了什么、为什么改、如何验证。"
    "工具：read_file(path, start_line?, end_line?)、grep(pattern, path)、run_tests(path, args?)、"
    "edit_file(path, old, new)、shell(command, timeout?)。"
)


def _start(seed: int, language: Language, output_scale: float, start_time: float | None) -> _Writer:
    if language not in ("en", "zh"):
        raise ConfigurationError(f"language must be 'en' or 'zh', got {language!r}")
    if not output_scale > 0:
        raise ConfigurationError(f"output_scale must be positive, got {output_scale!r}")
    rng = random.Random(f"windowkeeper-session:{seed}:{language}")
    prefix = hashlib.blake2b(f"{seed}:{language}".encode(), digest_size=4).hexdigest()
    clock = float(start_time) if start_time is not None else DEFAULT_START_TIME + rng.randrange(0, 86_400 * 30)
    writer = _Writer(seed=seed, language=language, output_scale=output_scale, rng=rng, prefix=f"s{prefix}", clock=clock)
    writer._emit("system", [TextBlock(text=_SYSTEM_ZH if language == "zh" else _SYSTEM_EN)])
    writer.user_request(first=True)
    return writer


def _session(writer: _Writer) -> GeneratedSession:
    return GeneratedSession(
        messages=writer.messages,
        facts=writer.facts,
        seed=writer.seed,
        language=writer.language,
        steps=writer.step,
    )


def iter_steps(
    *, seed: int = 0, language: Language = "en", output_scale: float = 1.0, start_time: float | None = None
) -> Iterator[GeneratedSession]:
    """An endless session growing one step at a time; each yield shares (and extends) the same lists."""
    writer = _start(seed, language, output_scale, start_time)
    yield _session(writer)
    while True:
        writer.add_step()
        yield _session(writer)


def generate_session(
    steps: int,
    *,
    seed: int = 0,
    language: Language = "en",
    output_scale: float = 1.0,
    start_time: float | None = None,
) -> GeneratedSession:
    """A session of ``steps`` model calls after the system prompt and first request.

    A step is one assistant message with its tool results (and, at the end of a task, the user's next request).
    ``output_scale`` shrinks or grows tool outputs (file reads, logs) for cheaper or heavier histories.
    """
    if steps < 0:
        raise ConfigurationError(f"steps must be >= 0, got {steps!r}")
    writer = _start(seed, language, output_scale, start_time)
    for _ in range(steps):
        writer.add_step()
    return _session(writer)


def generate_session_for_tokens(
    target_tokens: int,
    *,
    counter: TokenCounter | None = None,
    seed: int = 0,
    language: Language = "en",
    output_scale: float = 1.0,
    start_time: float | None = None,
    max_steps: int = 1_000_000,
) -> GeneratedSession:
    """The shortest session (in steps) whose ``counter.count_messages`` reaches ``target_tokens``.

    ``counter`` defaults to the shared exact ``o200k_base`` counter; its per-message memo makes the repeated
    counting linear overall.
    """
    if target_tokens <= 0:
        raise ConfigurationError(f"target_tokens must be positive, got {target_tokens!r}")
    if counter is None:
        from ..tokens import default_counter

        counter = default_counter()
    writer = _start(seed, language, output_scale, start_time)
    total = counter.count_messages(writer.messages)
    counted = len(writer.messages)
    while total < target_tokens:
        if writer.step >= max_steps:
            raise ConfigurationError(
                f"{max_steps} steps did not reach {target_tokens} tokens; raise max_steps or output_scale",
            )
        writer.add_step()
        for message in writer.messages[counted:]:
            total += counter.count_message(message)
        counted = len(writer.messages)
    return _session(writer)


__all__ = [
    "DEFAULT_START_TIME",
    "Fact",
    "FactKind",
    "GeneratedSession",
    "Language",
    "generate_session",
    "generate_session_for_tokens",
    "iter_steps",
]
