"""The ``windowkeeper`` command line: demo, inspect, compact, simulate.

Scriptable by contract (docs/cli.md): ``--json`` prints one JSON document on stdout, human status goes to stderr,
``-o -`` writes to stdout, and the exit code is 0 ok, 1 the check found problems, 2 usage or input error.
Commands import their machinery lazily so ``windowkeeper --help`` stays instant.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.markup import escape
from typer.core import TyperGroup

from ..errors import MissingDependencyError, WindowkeeperError
from ..io import DEFAULT_MAX_BYTES, DEFAULT_TIMEOUT, InputFormat
from ..io.writer import OutFormat
from . import serve_cmd
from .compact_cmd import Cut, Strategy
from .files import check_target, write_bytes
from .output import EXIT_OK, EXIT_PROBLEMS, EXIT_USAGE, CliError, Output
from .store_cmd import store_app

logger = logging.getLogger(__name__)


def _wants_json(argv: list[str]) -> bool:
    args = argv[: argv.index("--")] if "--" in argv else argv
    return any(a == "--json" or a.startswith("--json=") for a in args)


def _command_of(argv: list[str]) -> str | None:
    return next((a for a in argv if a in COMMANDS), None)


def _given_value(exc: Exception, argv: list[str]) -> str | None:
    """The value the user gave the option a parser error is about (typer's messages do not always repeat it)."""
    param = getattr(exc, "param", None)
    for opt in getattr(param, "opts", ()):
        for i, token in enumerate(argv):
            if token == opt and i + 1 < len(argv):
                return argv[i + 1]
            if token.startswith(f"{opt}="):
                return token.split("=", 1)[1]
    return None


COMMANDS = ("demo", "inspect", "compact", "simulate", "serve", "store")
"""Every command name, for naming the JSON schema of an error the parser found before a command ran."""


_CLICK_ERROR: Any = next(c for c in typer.BadParameter.__mro__ if c.__name__ == "ClickException")
"""click's error base, wherever this typer takes click from (recent typers vendor their own copy)."""


class _Group(TyperGroup):
    """The command group, with parser errors (a bad value, an unknown option, ``--json true``) reported like
    every other error: one line on stderr, a JSON document on stdout under ``--json``, exit code 2."""

    def main(  # type: ignore[override]
        self,
        args: list[str] | None = None,
        prog_name: str | None = None,
        complete_var: str | None = None,
        standalone_mode: bool = True,
        **extra: Any,
    ) -> Any:
        argv = list(sys.argv[1:] if args is None else args)
        try:
            with _run_logging():
                code = super().main(argv, prog_name, complete_var, standalone_mode=False, **extra)
        except _CLICK_ERROR as exc:
            if type(exc).__name__ == "NoArgsIsHelpError":  # bare `windowkeeper`: the help, as click shows it
                sys.stdout.write(exc.format_message() + "\n")
                if standalone_mode:
                    sys.exit(EXIT_USAGE)
                return EXIT_USAGE
            command = _command_of(argv)
            hint = f"see windowkeeper {command} -h" if command else "see windowkeeper -h"
            # pydantic's prefix on a validator's message (an Enum option's unknown value) is its internals
            message = exc.format_message().replace("Value error, ", "", 1)
            value = _given_value(exc, argv)
            if value is not None and repr(value) not in message and f" {value} " not in message:
                message += f" (got {value!r})"
            output = Output(json_mode=_wants_json(argv), command=command or "cli")
            if "unexpected extra argument" in message and "--json" in argv:
                message += "; --json is a flag and takes no value"
            output.error(CliError(f"{message} ({hint})"))
            code = EXIT_USAGE
        except typer.Abort:
            code = EXIT_USAGE
        code = code if isinstance(code, int) else EXIT_OK
        if standalone_mode:
            sys.exit(code)
        return code


app = typer.Typer(
    cls=_Group,
    name="windowkeeper",
    help="Keep an LLM agent's conversation inside its context window: measure, trim, compact, summarize.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
    context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100},
)


class Provider(StrEnum):
    """Whose structural rules ``inspect`` checks (``auto``: the file's own provider, or all three)."""

    AUTO = "auto"
    ALL = "all"
    OPENAI = "openai"
    ANTHROPIC = "anthropic"
    GEMINI = "gemini"


def at_least(minimum: int) -> Callable[[int | None], int | None]:
    """A range check whose message names the rejected value and the bound (click's own omits the value)."""

    def check(value: int | None) -> int | None:
        if value is not None and value < minimum:
            raise typer.BadParameter(f"{value} is out of range; use a value >= {minimum:,}")
        return value

    return check


def at_most(maximum: int, minimum: int) -> Callable[[int | None], int | None]:
    low = at_least(minimum)

    def check(value: int | None) -> int | None:
        if value is not None and value > maximum:
            raise typer.BadParameter(f"{value} is out of range; use a value <= {maximum:,}")
        return low(value)

    return check


JsonOption = Annotated[
    bool, typer.Option("--json", help="Print one JSON document on stdout (its fields are listed below).")
]
MaxBytesOption = Annotated[
    int,
    typer.Option(
        "--max-bytes", callback=at_least(1), help="Refuse inputs larger than this many bytes.", show_default=True
    ),
]
ForceOption = Annotated[bool, typer.Option("--force", help="Overwrite an existing output file.")]
ChartForceOption = Annotated[
    bool,
    typer.Option("--force", help="Write the chart over an existing file (an earlier chart is replaced without it)."),
]
FormatOption = Annotated[
    InputFormat, typer.Option("--format", case_sensitive=False, help="Input format; auto detects it.")
]


def _version(value: bool) -> None:
    if value:
        from importlib.metadata import PackageNotFoundError, version

        try:
            number = version("windowkeeper")
        except PackageNotFoundError:
            from .. import __version__ as number
        typer.echo(f"windowkeeper {number}")
        raise typer.Exit(EXIT_OK)


class _StderrHandler(logging.StreamHandler):  # type: ignore[type-arg]
    """Log records go to whatever ``sys.stderr`` is when they are written: a handler bound to the stream of one
    run (a test runner swaps and closes it) would fail on every later record."""

    @property  # type: ignore[override]
    def stream(self) -> Any:
        return sys.stderr

    @stream.setter
    def stream(self, value: Any) -> None:
        pass


@contextmanager
def _run_logging() -> Iterator[None]:
    """Give one CLI run a stderr handler on the root logger and take it away (with the root level the run set)
    when the run ends, so that a program or test suite invoking the CLI in-process keeps its logging as it was."""
    root = logging.getLogger()
    handler = _StderrHandler()
    handler.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
    level = root.level
    root.addHandler(handler)
    try:
        yield
    finally:
        root.removeHandler(handler)
        root.setLevel(level)


@app.callback()
def _root(
    verbose: Annotated[bool, typer.Option("--verbose", "-v", help="Log what the managers do.")] = False,
    _show_version: Annotated[
        bool, typer.Option("--version", is_eager=True, callback=_version, help="Print the version and exit.")
    ] = False,
) -> None:
    logging.getLogger().setLevel(logging.INFO if verbose else logging.WARNING)


def _guarded(output: Output, body: Callable[[], int]) -> None:
    """Run a command body; map input errors to one line and exit 2, and use the body's exit code otherwise."""
    try:
        code = body()
    except CliError as exc:
        output.error(exc)
        raise typer.Exit(EXIT_USAGE) from None
    except MissingDependencyError as exc:
        output.error(CliError(str(exc)))
        raise typer.Exit(EXIT_USAGE) from None
    except WindowkeeperError as exc:
        output.error(CliError(str(exc), getattr(exc, "problems", None)))
        raise typer.Exit(EXIT_USAGE) from None
    except (OSError, UnicodeError, RecursionError, MemoryError) as exc:
        output.error(CliError(f"{type(exc).__name__}: {exc}"))
        raise typer.Exit(EXIT_USAGE) from None
    raise typer.Exit(code)


def _load_one(file: str, fmt: InputFormat, index: int | None, max_bytes: int, timeout: float) -> Any:
    from ..io import read_conversation

    return read_conversation(file, fmt=fmt.value, index=index, max_bytes=max_bytes, timeout=timeout)


TimeoutOption = Annotated[
    float,
    typer.Option(
        "--timeout",
        callback=lambda v: v if v is None or v > 0 else _bad(f"{v} is out of range; use a number of seconds > 0"),
        help="Give up on a pipe or device that sends nothing for this many seconds.",
        show_default=True,
    ),
]


def _bad(message: str) -> Any:
    raise typer.BadParameter(message)


ERRORS_HELP = (
    "Exit codes: 0 ok, 1 the check found problems, 2 usage or input error. Under --json an error is "
    '{"schema", "version": 1, "ok": false, "error": "...", "problems": ["...", ...]}.'
)

INSPECT_EPILOG = (
    "\b\nExample:\n  windowkeeper inspect session.jsonl --provider anthropic --json\n\n"
    '\b\n--json prints {"schema": "windowkeeper.inspect", "version": 1, "ok", "file", "encoding",\n'
    '  "conversations": [{"name", "format", "messages", "tool_calls", "tool_schemas", "skipped_events", "warnings",\n'
    '     "tokens": {"input", "total", "tool_schemas", "zones"}, "roles", "largest",\n'
    '     "problems": {provider: [{"index", "code", "message"}]}}],\n'
    '  "totals": {"conversations", "messages", "input_tokens", "problems"}}\n\n' + ERRORS_HELP
)


@app.command(epilog=INSPECT_EPILOG, short_help="Token breakdown by zone and role, and structural problems.")
def inspect(
    file: Annotated[
        str,
        typer.Argument(
            metavar="FILE", help="A conversation file (any supported format), a folder of them, or - for stdin."
        ),
    ],
    fmt: FormatOption = InputFormat.AUTO,
    index: Annotated[
        int | None, typer.Option(callback=at_least(0), help="Only this conversation of a collection (0-based).")
    ] = None,
    reserve: Annotated[int, typer.Option(callback=at_least(0), help="Response reserve shown as its own zone.")] = 2000,
    provider: Annotated[
        Provider, typer.Option(case_sensitive=False, help="Check the structural rules of this provider.")
    ] = Provider.AUTO,
    max_bytes: MaxBytesOption = DEFAULT_MAX_BYTES,
    timeout: TimeoutOption = DEFAULT_TIMEOUT,
    json_out: JsonOption = False,
) -> None:
    """Token breakdown by zone and role (exact o200k counts) and every structural problem.

    Exit 1 when a provider would reject the conversation (each problem is listed with its message index).
    """
    output = Output(json_mode=json_out, command="inspect")

    def body() -> int:
        from .inspect_cmd import inspect_reports, print_collection, print_conversation, print_warnings, problem_count

        reports = inspect_reports(
            file,
            fmt=fmt.value,
            index=index,
            reserve=reserve,
            provider=provider.value,
            max_bytes=max_bytes,
            timeout=timeout,
        )
        problems = sum(problem_count(r) for r in reports)
        print_warnings(output, reports)
        if json_out:
            output.document(
                {
                    "ok": problems == 0,
                    "file": file,
                    "encoding": "o200k_base",
                    "conversations": reports,
                    "totals": {
                        "conversations": len(reports),
                        "messages": sum(r["messages"] for r in reports),
                        "input_tokens": sum(r["tokens"]["input"] for r in reports),
                        "problems": problems,
                    },
                }
            )
        elif len(reports) == 1:
            print_conversation(output, reports[0])
        else:
            print_collection(output, reports, source=file)
        return EXIT_PROBLEMS if problems else EXIT_OK

    _guarded(output, body)


COMPACT_EPILOG = (
    "\b\nExample:\n  windowkeeper compact request.json --budget 4000 -o small.json\n\n"
    '\b\n--json prints {"schema": "windowkeeper.compact", "version": 1, "ok", "file", "output",\n'
    '  "conversation", "strategy", "budget", "cut", "out_format", "messages_before", "messages_after",\n'
    '  "tokens_before", "tokens_before_exact", "tokens_after", "saved_share", "summary", "over_budget",\n'
    '  "problems", "warnings"}\n\n' + ERRORS_HELP
)


@app.command(epilog=COMPACT_EPILOG, short_help="Write a conversation cut down to a token budget.")
def compact(
    file: Annotated[
        str,
        typer.Argument(metavar="FILE", help="The conversation to compact (any supported format), or - for stdin."),
    ],
    out: Annotated[
        str | None,
        typer.Option(
            "-o", "--out", help="Where to write the result; - for stdout. [default: compacted.json; .jsonl for logs]"
        ),
    ] = None,
    strategy: Annotated[
        Strategy,
        typer.Option(
            case_sensitive=False,
            help="budget: the token budget manager (summarizes what it drops); summary: the summary manager; "
            "message: the newest budget // 1000 user turns, whole; window: a sliding window.",
        ),
    ] = Strategy.BUDGET,
    budget: Annotated[int, typer.Option(callback=at_least(500), help="Target token budget of the result.")] = 8000,
    cut: Annotated[
        Cut,
        typer.Option(
            case_sensitive=False,
            help="budget: cut to just under the budget; watermark: to the low watermark, as a running agent would.",
        ),
    ] = Cut.BUDGET,
    fmt: FormatOption = InputFormat.AUTO,
    out_format: Annotated[
        OutFormat, typer.Option(case_sensitive=False, help="Output format; input writes the input's own format.")
    ] = OutFormat.INPUT,
    index: Annotated[
        int | None, typer.Option(callback=at_least(0), help="Which conversation of a collection to compact (0-based).")
    ] = None,
    force: ForceOption = False,
    max_bytes: MaxBytesOption = DEFAULT_MAX_BYTES,
    timeout: TimeoutOption = DEFAULT_TIMEOUT,
    json_out: JsonOption = False,
) -> None:
    """Apply one strategy to a conversation file and write the view that would be sent, in the input's format.

    Exit 1 when the result is still over the budget or not a valid sequence. Never overwrites the input, and
    an existing output only with --force.
    """
    output = Output(json_mode=json_out, command="compact")

    def body() -> int:
        from ..io.writer import JSONL_FORMATS, resolve
        from .compact_cmd import run_compact

        if json_out and out == "-":
            raise CliError("--json and -o - both write to stdout; write the conversation to a file or drop --json")
        conversation = _load_one(file, fmt, index, max_bytes, timeout)
        fmt_out = resolve(out_format, conversation)
        lines = fmt_out in JSONL_FORMATS or (out_format is OutFormat.INPUT and conversation.container is not None)
        target_name = out or ("compacted.jsonl" if lines else "compacted.json")
        target = check_target(target_name, inputs=[file], force=force)
        result = run_compact(conversation, strategy=strategy, budget=budget, out_format=out_format, cut=cut)
        written = write_bytes(target, result.data)
        s = result.summary
        for warning in conversation.warnings:
            output.status(f"[yellow]warning:[/] {escape(warning)}")
        if json_out:
            output.document({"ok": result.ok, "file": file, "output": written, **s, "warnings": conversation.warnings})
        saved = 100 * s["saved_share"]
        output.status(
            f"{s['strategy']}: {s['messages_before']} -> {s['messages_after']} messages, "
            f"{s['tokens_before']:,} -> {s['tokens_after']:,} tokens ({saved:.1f}% saved)"
            f"{' + summary' if s['summary'] else ''}; wrote {'stdout' if written == '-' else escape(written)} "
            f"({s['out_format']})"
        )
        if s["over_budget"]:
            output.status(f"[red]still over budget: {s['tokens_after']:,} > {budget:,} tokens[/]")
        for problem in s["problems"]:
            output.status(f"[red]invalid sequence:[/] {escape(problem)}")
        return EXIT_OK if result.ok else EXIT_PROBLEMS

    _guarded(output, body)


PLOT_HINT = 'the chart needs the plot extra: pip install "windowkeeper[plot]"'


def _has_plot() -> bool:
    import importlib.util

    return importlib.util.find_spec("matplotlib") is not None


_USAGE_ERROR: Any = next(c for c in typer.BadParameter.__mro__ if c.__name__ == "UsageError")
"""click's usage error, wherever this typer takes click from: what the parser raises for options given wrongly."""


def refuse_chart_conflict(chart: str | None, no_chart: bool) -> None:
    """``--chart X --no-chart`` asks for a chart and for none: obeying either would ignore the other unseen, so
    the pair is refused before anything runs, as the parser refuses any other option given wrongly."""
    if chart is not None and no_chart:
        raise _USAGE_ERROR(
            f"--chart {chart} and --no-chart contradict each other: drop --no-chart to write the chart to {chart}, "
            "or drop --chart to write none"
        )


def _chart_target(command: str, chart: str | None, no_chart: bool, inputs: list[str], force: bool) -> Path | None:
    """Where the chart goes: the given path, or a new temporary file; None for no chart (or no matplotlib)."""
    if no_chart:
        return None
    if not _has_plot():
        if chart is not None:
            raise CliError(f"--chart {chart}: {PLOT_HINT}, or pass --no-chart")
        return None
    if chart is None:  # a fresh name in the temporary folder, created only when the chart is written
        import secrets
        import tempfile

        return Path(tempfile.gettempdir()) / f"windowkeeper-{command}-{secrets.token_hex(6)}.png"
    if chart == "-":
        raise CliError("--chart -: a chart is a PNG file; give a file name or pass --no-chart")
    if Path(chart).suffix.lower() != ".png":
        # the name before "already exists": an existing results.json was told to pass --force, then refused for
        # its name; what check_target says of the input file or a directory still comes first
        check_target(chart, inputs=inputs, force=True, option="--chart")
        raise CliError(f"--chart {chart}: the chart is a PNG; use a name ending in .png")
    return check_target(chart, inputs=inputs, force=force, option="--chart", replaceable_png=True)


def _write_chart(
    output: Output, target: Path | None, report: Any, *, title: str, budget: int, no_chart: bool
) -> str | None:
    if target is None:
        if not no_chart:
            output.status(f"no chart: {PLOT_HINT}", markup=False)
        return None
    from .report import chart_png

    written = write_bytes(target, chart_png(report, title=title, budget=budget), option="--chart")
    output.status(f"chart written to {escape(written)}")
    return written


ChartOption = Annotated[
    str | None,
    typer.Option(help="Where to write the PNG chart of tokens per call. [default: a new temporary file]"),
]
NoChartOption = Annotated[bool, typer.Option("--no-chart", help="Write no chart.")]

DEMO_EPILOG = (
    "\b\nExample:\n  windowkeeper demo --steps 120 --budget 8000 --chart demo.png\n\n"
    '\b\n--json prints {"schema": "windowkeeper.demo", "version": 1, "ok", "steps", "seed", "budget",\n'
    '  "messages", "facts", "calls", "chart", "strategies": [{"name", "calls", "tokens_sent", "saved_share",\n'
    '     "prefix_stable_share", "cost_no_cache_usd", "cost_with_cache_usd", "invalid_calls",\n'
    '     "calls_over_budget", "max_call_tokens", "facts_retained", "facts_total", "seconds", "problems"}]}\n\n'
    'The chart needs the plot extra (pip install "windowkeeper[plot]"); without it the table is printed.\n\n'
    + ERRORS_HELP
)


@app.command(epilog=DEMO_EPILOG, short_help="Compare every strategy on a generated agent session.")
def demo(
    steps: Annotated[
        int, typer.Option(callback=at_most(100_000, 10), help="Model calls in the generated agent session.")
    ] = 400,
    budget: Annotated[
        int, typer.Option(callback=at_least(1000), help="Token budget for the budgeted strategies.")
    ] = 32_000,
    seed: Annotated[int, typer.Option(callback=at_least(0), help="Seed of the session generator.")] = 0,
    chart: ChartOption = None,
    no_chart: NoChartOption = False,
    force: ChartForceOption = False,
    json_out: JsonOption = False,
) -> None:
    """Replay a generated coding-agent session through every strategy and compare them (offline).

    Exit 1 when a strategy produced a sequence a provider would reject.
    """
    refuse_chart_conflict(chart, no_chart)
    output = Output(json_mode=json_out, command="demo")

    def body() -> int:
        import time

        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

        from .demo import run_demo
        from .report import report_json, report_table

        target = _chart_target("demo", chart, no_chart, [], force)
        started = time.perf_counter()
        with Progress(
            TextColumn("replaying"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            console=output.err,
            transient=True,
        ) as progress:
            task = progress.add_task("calls", total=None)

            def on_call(done: int, total: int) -> None:
                progress.update(task, completed=done, total=total)

            report, n_messages, n_facts = run_demo(steps=steps, budget=budget, seed=seed, on_call=on_call)
        title = f"{report.calls} model calls of a generated coding-agent session, budget {budget:,} tokens"
        written = _write_chart(output, target, report, title=title, budget=budget, no_chart=no_chart)
        invalid = sum(r.invalid_calls for r in report.strategies)
        if json_out:
            output.document(
                {
                    "ok": invalid == 0,
                    "steps": steps,
                    "seed": seed,
                    "budget": budget,
                    "messages": n_messages,
                    "facts": n_facts,
                    "calls": report.calls,
                    "chart": written,
                    "strategies": report_json(report, budget=budget),
                }
            )
        else:
            output.status(
                f"Generated a coding-agent session: {n_messages} messages, {report.calls} model calls, "
                f"{n_facts} ground-truth facts (seed {seed})."
            )
            output.table(report_table(report, title=title, budget=budget))
        status = "every sequence valid for OpenAI and Anthropic" if not invalid else f"{invalid} invalid sequences"
        output.status(f"{status}; {time.perf_counter() - started:.1f}s")
        for r in report.strategies:
            for problem in r.problems:
                output.status(f"  {r.name}: {problem}", markup=False)
        return EXIT_PROBLEMS if invalid else EXIT_OK

    _guarded(output, body)


SIMULATE_EPILOG = (
    "\b\nExample:\n  windowkeeper simulate runs/ --budget 4000 --limit 20 --no-chart\n\n"
    '\b\n--json prints {"schema": "windowkeeper.simulate", "version": 1, "ok", "path", "trajectories",\n'
    '  "calls", "budget", "chart", "strategies": [...as in demo], "error" (only when nothing to simulate)}\n\n'
    + ERRORS_HELP
)


@app.command(epilog=SIMULATE_EPILOG, short_help="Compare every strategy on recorded trajectories.")
def simulate(
    path: Annotated[
        str,
        typer.Argument(
            metavar="PATH",
            help="Recorded conversations: a file in any format inspect reads (a tau-bench JSON or a JSONL file "
            "may hold several), a folder of them, or - for stdin.",
        ),
    ],
    budget: Annotated[
        int, typer.Option(callback=at_least(500), help="Token budget for the budgeted strategies.")
    ] = 4000,
    limit: Annotated[
        int | None, typer.Option(callback=at_least(1), help="Replay at most this many trajectories.")
    ] = None,
    chart: ChartOption = None,
    no_chart: NoChartOption = False,
    force: ChartForceOption = False,
    fmt: FormatOption = InputFormat.AUTO,
    max_bytes: MaxBytesOption = DEFAULT_MAX_BYTES,
    timeout: TimeoutOption = DEFAULT_TIMEOUT,
    json_out: JsonOption = False,
) -> None:
    """Like demo, on recorded trajectories, aggregated over all of them.

    A call is an assistant message, its prompt everything before it and the file's tool definitions (inspect's
    tools zone), as a request carries them: tokens sent count both, and the budgeted strategies manage the
    messages in what the budget leaves beside the tools.

    Exit 1 when there is nothing to simulate (no model call found) or a strategy produced an invalid sequence.
    """
    refuse_chart_conflict(chart, no_chart)
    output = Output(json_mode=json_out, command="simulate")

    def body() -> int:
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

        from ..io import read_collection
        from .report import report_json, report_table
        from .simulate_cmd import run_simulate

        target = _chart_target("simulate", chart, no_chart, [path], force)
        conversations = read_collection(path, fmt=fmt.value, limit=limit, max_bytes=max_bytes, timeout=timeout)
        output.status(f"Loaded {_trajectories(len(conversations))} from {path}.", markup=False)
        for conversation in conversations:
            for warning in conversation.warnings:
                output.status(f"[yellow]warning:[/] {escape(warning)}")
        with Progress(
            TextColumn("replaying"), BarColumn(), MofNCompleteColumn(), console=output.err, transient=True
        ) as progress:
            task = progress.add_task("trajectories", total=len(conversations))

            def on_done(done: int, total: int) -> None:
                progress.update(task, completed=done, total=total)

            report = run_simulate(conversations, budget=budget, on_done=on_done)
        if report is None:
            message = (
                f"nothing to simulate: {path} holds no trajectory with a model call (an assistant message after "
                "the first message); pass the recording of an agent's run, with its replies"
            )
            if json_out:
                output.document(
                    {
                        "ok": False,
                        "path": path,
                        "trajectories": len(conversations),
                        "calls": 0,
                        "budget": budget,
                        "chart": None,
                        "strategies": [],
                        "error": message,
                    }
                )
            output.status(f"[red]{escape(message)}[/]")
            return EXIT_PROBLEMS
        title = f"{_trajectories(len(conversations))}, {report.calls} model calls, budget {budget:,}"
        written = _write_chart(output, target, report, title=title, budget=budget, no_chart=no_chart)
        invalid = sum(r.invalid_calls for r in report.strategies)
        if json_out:
            output.document(
                {
                    "ok": invalid == 0,
                    "path": path,
                    "trajectories": len(conversations),
                    "calls": report.calls,
                    "budget": budget,
                    "chart": written,
                    "strategies": report_json(report, budget=budget),
                }
            )
        else:
            output.table(report_table(report, title=title, budget=budget))
        if invalid:
            output.status(f"[red]{invalid} invalid sequences[/]")
        return EXIT_PROBLEMS if invalid else EXIT_OK

    _guarded(output, body)


def _trajectories(count: int) -> str:
    return f"{count} trajectory" if count == 1 else f"{count} trajectories"


app.add_typer(store_app, name="store")
serve_cmd.register(app)


def run(argv: list[str] | None = None) -> None:
    """Entry point: typer with click's exit codes (usage errors are 2), and no traceback for a broken pipe."""
    try:
        app(args=argv, prog_name="windowkeeper")
    except BrokenPipeError:  # e.g. `windowkeeper inspect x --json | head -1`
        sys.stderr.close()
        raise SystemExit(EXIT_OK) from None
    except typer.Abort:
        raise SystemExit(EXIT_USAGE) from None


def main() -> None:
    run()
