"""Regenerate the numbers shown in README.md and docs/*.md from the code, so the docs cannot drift.

A page marks a generated region with ``<!-- generated: NAME -->`` ... ``<!-- end generated -->``; this script
replaces each region's body with what generator ``NAME`` produces now. ``--check`` changes nothing and exits 1
(listing the stale regions) when a page differs; the test suite runs it (tests/docs/test_docs.py).

    python docs/generate.py            # rewrite the regions
    python docs/generate.py --check    # fail if any region is stale
    python docs/generate.py --outputs  # also rewrite each python block's output block with what it prints now

Needs the ``cli`` extra (the CLI renders some of the output). Everything runs offline, with ``PYTHONHASHSEED=0``
(the script re-executes itself with it), so every run prints the same numbers.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
REGION = re.compile(r"(<!-- generated: ([\w-]+) -->\n)(.*?)(<!-- end generated -->)", re.S)


def _demo(steps: int, budget: int) -> dict[str, Any]:
    """The ``windowkeeper demo --json`` document for a run (seed 0)."""
    from windowkeeper.cli.report import report_json
    from windowkeeper.evaluation.lineup import standard_lineup
    from windowkeeper.evaluation.replay import replay
    from windowkeeper.testing.sessiongen import generate_session

    session = generate_session(steps, seed=0)
    report = asyncio.run(replay(session.messages, standard_lineup(budget), facts=[f.text for f in session.facts]))
    return {"calls": report.calls, "budget": budget, "strategies": report_json(report, budget=budget)}


def _millions(tokens: int) -> str:
    return f"{tokens / 1e6:.1f}M" if tokens >= 1e6 else f"{tokens:,}"


def _facts(s: dict[str, Any]) -> str:
    return f"{100 * s['facts_retained'] / s['facts_total']:.0f}%" if s["facts_total"] else "-"


def readme_demo() -> str:
    doc = _demo(400, 32_000)
    rows = [
        "| strategy | tokens sent | prefix-stable calls | input cost with caching | facts retained "
        "| calls over budget |",
        "|---|---|---|---|---|---|",
    ]
    for s in doc["strategies"]:
        rows.append(
            f"| {s['name']} | {_millions(s['tokens_sent'])} | {100 * s['prefix_stable_share']:.0f}% | "
            f"${s['cost_with_cache_usd']:.2f} | {_facts(s)} | {s['calls_over_budget']} |"
        )
    by_name = {s["name"]: s for s in doc["strategies"]}
    full, window = by_name["no management"], by_name["sliding window"]
    cheapest = min(doc["strategies"][1:], key=lambda s: s["cost_with_cache_usd"])
    invalid = sum(s["invalid_calls"] for s in doc["strategies"])
    rows.append("")
    rows.append(
        f"{doc['calls']} model calls, budget {doc['budget']:,} tokens. "
        f"{'Every prompt every strategy produced passes' if not invalid else f'{invalid} prompts fail'} the OpenAI "
        f"and Anthropic structural checks. The sliding window sends {_millions(window['tokens_sent'])} tokens "
        f"against {_millions(full['tokens_sent'])} but keeps its prefix on only "
        f"{100 * window['prefix_stable_share']:.0f}% of calls, so with caching it costs "
        f"${window['cost_with_cache_usd']:.2f} against ${full['cost_with_cache_usd']:.2f} for sending everything; "
        f"the cheapest with caching is {cheapest['name']} (${cheapest['cost_with_cache_usd']:.2f})."
    )
    return "\n".join(rows) + "\n"


def cli_demo() -> str:
    doc = _demo(120, 8_000)
    rows = [
        "| strategy | tokens sent | % saved | prefix-stable calls | cost, no cache | cost, with cache "
        "| invalid sequences | facts retained | calls over budget |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for s in doc["strategies"]:
        rows.append(
            f"| {s['name']} | {s['tokens_sent']:,} | {100 * s['saved_share']:.1f}% | "
            f"{100 * s['prefix_stable_share']:.1f}% | ${s['cost_no_cache_usd']:.2f} | "
            f"${s['cost_with_cache_usd']:.2f} | "
            f"{s['invalid_calls']} | {s['facts_retained']}/{s['facts_total']} | {s['calls_over_budget']} |"
        )
    return "\n".join(rows) + "\n"


def _cli(args: list[str]) -> tuple[int, str, str]:
    from typer.testing import CliRunner

    from windowkeeper.cli.app import app

    result = CliRunner().invoke(app, args)
    return result.exit_code, result.stdout, result.stderr


def _shown(args: list[str], lines: list[str]) -> None:
    """Run a command and append it, its status lines and its exit code to a console block."""
    code, _, err = _cli(args)
    lines.append("$ windowkeeper " + " ".join(args))
    lines.extend(err.strip().splitlines())
    lines.append(f"$ echo $?\n{code}")


def _session_file() -> None:
    from windowkeeper.llm.formats import to_openai_chat
    from windowkeeper.testing.sessiongen import generate_session

    Path("session.json").write_text(json.dumps(to_openai_chat(generate_session(60, seed=1).messages)))


def _in_temp_dir(fn: Callable[[], str]) -> str:
    cwd = Path.cwd()
    with tempfile.TemporaryDirectory() as tmp:
        os.chdir(tmp)
        try:
            _session_file()
            return fn()
        finally:
            os.chdir(cwd)


def cli_inspect() -> str:
    def run() -> str:
        code, out, _ = _cli(["inspect", "session.json", "--json"])
        assert code == 0, out
        doc = json.loads(out)
        return "```console\n$ windowkeeper inspect session.json --json\n" + json.dumps(doc, indent=1) + "\n```\n"

    return _in_temp_dir(run)


def cli_compact() -> str:
    def run() -> str:
        lines = ["```console"]
        for args in (
            ["compact", "session.json", "--strategy", "budget", "--budget", "8000", "-o", "compacted.json"],
            [
                "compact",
                "session.json",
                "--strategy",
                "summary",
                "--budget",
                "8000",
                "--out-format",
                "anthropic",
                "-o",
                "for_claude.json",
            ],
            [
                "compact",
                "session.json",
                "--strategy",
                "window",
                "--budget",
                "8000",
                "--out-format",
                "openai",
                "-o",
                "window.json",
            ],
        ):
            _shown(args, lines)
        lines.append("```")
        return "\n".join(lines) + "\n"

    return _in_temp_dir(run)


def cli_session_log() -> str:
    """A coding agent's session log (the shape of ``windowkeeper.testing.conversation_files``) inspected and
    compacted back into a log."""

    def run() -> str:
        from windowkeeper.testing.conversation_files import write_sample
        from windowkeeper.testing.sessiongen import generate_session

        write_sample(Path("."), "claude-code", generate_session(60, seed=1).messages)
        lines = ["```console"]
        code, out, _ = _cli(["inspect", "session.jsonl", "--json"])
        assert code == 0, out
        report = json.loads(out)["conversations"][0]
        brief = {k: report[k] for k in ("format", "messages", "tool_calls", "skipped_events")}
        lines.append(
            "$ windowkeeper inspect session.jsonl --json | jq '.conversations[0] | {format, messages, "
            "tool_calls, skipped_events}'"
        )
        lines.append(json.dumps(brief, indent=1))
        args = ["compact", "session.jsonl", "--budget", "8000", "-o", "compacted.jsonl"]
        _shown(args, lines)
        lines.append("```")
        return "\n".join(lines) + "\n"

    return _in_temp_dir(run)


PACKAGE = ROOT / "src" / "windowkeeper"


def package_parts(package: Path = PACKAGE) -> list[str]:
    """The parts of the package the architecture page maps: every subpackage (``"cli/"``) and every top-level
    module (``"tokens.py"``, the package's own ``"__init__.py"`` included), sorted."""
    parts = [f"{d.name}/" for d in package.iterdir() if (d / "__init__.py").is_file()]
    parts += [f.name for f in package.glob("*.py")]
    return sorted(parts)


def _part_of(module: str, package: Path) -> str | None:
    """The part (as `package_parts` names it) of ``package`` that dotted ``module`` (``windowkeeper.x.y``) is in."""
    names = module.split(".")
    if names[0] != package.name:
        return None
    if len(names) == 1:
        return "__init__.py"
    if (package / names[1] / "__init__.py").is_file():
        return f"{names[1]}/"
    if (package / f"{names[1]}.py").is_file():
        return f"{names[1]}.py"
    return "__init__.py"  # a name defined in windowkeeper/__init__.py, e.g. ``from .. import __version__``


def parse_module(path: Path) -> Any:
    """``ast.parse`` of a module. CPython 3.11's AST validator can raise ``SystemError: AST constructor recursion
    depth mismatch`` after earlier work left a thread's recursion bookkeeping off (a caught RecursionError, a changed
    recursion limit; seen in the full test suite after the property tests). A new thread starts with its own
    counter, so the parse is redone there; a full run has shown it there too, so a new interpreter, which has no such
    history, is the last resort (AST nodes pickle). The tests that read the package's source use this too."""
    import ast
    import pickle
    import subprocess
    from concurrent.futures import ThreadPoolExecutor

    source = path.read_text(encoding="utf-8")
    try:
        return ast.parse(source, str(path))
    except SystemError:
        pass
    try:
        with ThreadPoolExecutor(max_workers=1) as pool:
            return pool.submit(ast.parse, source, str(path)).result()
    except SystemError:
        pass
    child = (
        "import ast, pickle, sys; p = sys.argv[1]; "
        "sys.stdout.buffer.write(pickle.dumps(ast.parse(open(p, encoding='utf-8').read(), p)))"
    )
    done = subprocess.run([sys.executable, "-c", child, str(path)], capture_output=True, check=True)
    return pickle.loads(done.stdout)


def package_imports(package: Path = PACKAGE) -> dict[str, set[str]]:
    """For each part, the other parts its modules import, read with `ast` from every ``import`` statement
    (function-level and ``TYPE_CHECKING`` imports included: they are dependencies too)."""
    import ast

    found: dict[str, set[str]] = {part: set() for part in package_parts(package)}
    for path in sorted(package.rglob("*.py")):
        dotted = list(path.relative_to(package.parent).with_suffix("").parts)
        here = dotted[:-1]  # the package a relative import starts from
        if dotted[-1] == "__init__":
            dotted = dotted[:-1]
        part = _part_of(".".join(dotted), package) or "__init__.py"
        for node in ast.walk(parse_module(path)):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    anchor = here[: len(here) - node.level + 1]
                    base = ".".join([*anchor, *([node.module] if node.module else [])])
                # ``from . import storage`` imports a module; ``from .x import name`` imports from module x
                targets = [f"{base}.{alias.name}" for alias in node.names] if node.module is None else [base]
            for target in targets:
                other = _part_of(target, package)
                if other is not None and other != part:
                    found[part].add(other)
    return found


def package_summary(part: str, package: Path = PACKAGE) -> str:
    """The first paragraph of the part's docstring (its ``__init__.py``'s for a subpackage), on one line."""
    import ast

    path = package / part.rstrip("/") / "__init__.py" if part.endswith("/") else package / part
    doc = ast.get_docstring(parse_module(path))
    if not doc:
        raise SystemExit(f"{path} has no docstring; the architecture page shows its first paragraph")
    first = " ".join(doc.split("\n\n")[0].split())
    return first.rstrip(".")


def package_layers(imports: dict[str, set[str]]) -> dict[str, int]:
    """Each part's layer: 0 when it imports no other part, else one above the highest part it imports. Raises
    on an import cycle between parts (imports point downward only)."""
    layers: dict[str, int] = {}
    visiting: list[str] = []

    def layer(part: str) -> int:
        if part in layers:
            return layers[part]
        if part in visiting:
            cycle = [*visiting[visiting.index(part) :], part]
            raise SystemExit("import cycle between parts of the package: " + " -> ".join(cycle))
        visiting.append(part)
        layers[part] = 1 + max((layer(other) for other in imports[part]), default=-1)
        visiting.pop()
        return layers[part]

    for part in imports:
        layer(part)
    return layers


def architecture_layers() -> str:
    """The package map of docs/architecture.md: every part, top layer first, with what it imports."""
    imports = package_imports()
    layers = package_layers(imports)
    rows = ["| layer | part | what it is | imports (windowkeeper parts) |", "|---|---|---|---|"]
    for part in sorted(imports, key=lambda p: (-layers[p], p)):
        uses = ", ".join(f"`{other}`" for other in sorted(imports[part])) or "-"
        rows.append(f"| {layers[part]} | `{part}` | {package_summary(part)} | {uses} |")
    return "\n".join(rows) + "\n"


GENERATORS: dict[str, Callable[[], str]] = {
    "readme-demo": readme_demo,
    "cli-demo": cli_demo,
    "cli-inspect": cli_inspect,
    "cli-compact": cli_compact,
    "cli-session-log": cli_session_log,
    "architecture-layers": architecture_layers,
}


FENCE = re.compile(r"^```([^\n`]*)\n(.*?)^```[ \t]*$", re.M | re.S)


def run_blocks(text: str) -> list[tuple[int, str | None, str]]:
    """Run the page's python blocks as the docs test does: in page order, one namespace, a temporary directory,
    top-level ``await`` allowed, ``python no-run`` blocks only compiled. For each runnable block: its line, the
    output block shown after it (or None) and what it printed."""
    import ast
    import contextlib
    import inspect
    import io

    namespace: dict[str, Any] = {"__name__": "__docs__"}
    fences = list(FENCE.finditer(text))
    results: list[tuple[int, str | None, str]] = []
    cwd = Path.cwd()
    with tempfile.TemporaryDirectory() as tmp:
        os.chdir(tmp)
        try:
            for i, match in enumerate(fences):
                info = match.group(1).split()
                if info[:1] != ["python"]:
                    continue
                line = text.count("\n", 0, match.start()) + 1
                code = compile(match.group(2), f"<docs:{line}>", "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
                if "no-run" in info:
                    continue
                captured = io.StringIO()
                with contextlib.redirect_stdout(captured):
                    if code.co_flags & inspect.CO_COROUTINE:
                        asyncio.run(eval(code, namespace))
                    else:
                        exec(code, namespace)
                following = fences[i + 1] if i + 1 < len(fences) else None
                shown = None
                if (
                    following is not None
                    and following.group(1).strip() in ("text", "output")
                    and not text[match.end() : following.start()].strip()
                ):
                    shown = following.group(2)
                results.append((line, shown, captured.getvalue()))
        finally:
            os.chdir(cwd)
    return results


def refresh_outputs(text: str) -> str:
    """``text`` with the output block after each runnable python block replaced by what the block prints now."""
    printed = {line: output for line, _, output in run_blocks(text)}
    fences = list(FENCE.finditer(text))
    edits: list[tuple[int, int, str]] = []
    for i, match in enumerate(fences[:-1]):
        line = text.count("\n", 0, match.start()) + 1
        following = fences[i + 1]
        if (
            line in printed
            and following.group(1).strip() in ("text", "output")
            and not text[match.end() : following.start()].strip()
        ):
            edits.append((following.start(2), following.end(2), printed[line].rstrip("\n") + "\n"))
    for start, end, new in reversed(edits):
        text = text[:start] + new + text[end:]
    return text


def regenerate(text: str, cache: dict[str, str]) -> str:
    def replace(match: re.Match[str]) -> str:
        name = match.group(2)
        if name not in GENERATORS:
            raise SystemExit(f"unknown generated region {name!r}; known: {', '.join(GENERATORS)}")
        if name not in cache:
            cache[name] = GENERATORS[name]()
        return match.group(1) + cache[name] + match.group(4)

    return REGION.sub(replace, text)


def main(argv: list[str] | None = None) -> int:
    if os.environ.get("PYTHONHASHSEED") != "0":
        # some results depend on set iteration order; one hash seed makes every run print the same numbers
        os.environ["PYTHONHASHSEED"] = "0"
        os.execv(sys.executable, [sys.executable, str(Path(__file__).resolve()), *(argv or sys.argv[1:])])
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="report stale regions, change nothing")
    parser.add_argument("--outputs", action="store_true", help="also refresh the output block of every python block")
    parser.add_argument("--run-page", metavar="PAGE", help="run PAGE's python blocks, print [line, shown, printed]")
    args = parser.parse_args(argv)
    if args.run_page:
        print(json.dumps(run_blocks(Path(args.run_page).read_text(encoding="utf-8"))))
        return 0
    cache: dict[str, str] = {}
    stale = []
    for page in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        text = page.read_text(encoding="utf-8")
        new = refresh_outputs(text) if args.outputs and not args.check else text
        if REGION.search(new):
            new = regenerate(new, cache)
        if new != text:
            stale.append(page.relative_to(ROOT))
            if not args.check:
                page.write_text(new, encoding="utf-8")
    if args.check and stale:
        print(f"stale generated regions in {', '.join(map(str, stale))}; run: python docs/generate.py")
        return 1
    print("regenerated: " + (", ".join(map(str, stale)) or "nothing changed"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
