"""Where the CLI writes: results on stdout (a table, or one JSON document with ``--json``), status on stderr.

Exit codes are part of the contract: 0 ok, 1 the check found problems, 2 usage or input error. `CliError` carries
a one-line message (and optionally every problem found) to the single place that prints it and exits 2.
"""

from __future__ import annotations

import json
import sys
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

EXIT_OK = 0
EXIT_PROBLEMS = 1
EXIT_USAGE = 2

SCHEMA_VERSION = 1


class CliError(Exception):
    """An input or usage error: printed as ``error: <message>`` (plus each problem indented), exit code 2."""

    def __init__(self, message: str, problems: list[str] | None = None) -> None:
        super().__init__(message)
        found = list(problems or [])
        # a single problem is already the message; several are listed below it, one per line
        self.problems = found if len(found) > 1 else []


class Output:
    """The streams of one command run. With ``json_mode`` stdout receives exactly one JSON document."""

    def __init__(self, *, json_mode: bool, command: str) -> None:
        self.json_mode = json_mode
        self.command = command
        width = None if Console().is_terminal else 150
        self.out = Console(width=width, highlight=False)
        self.err = Console(stderr=True, width=None if Console(stderr=True).is_terminal else 150, highlight=False)

    def status(self, text: str, *, markup: bool = True) -> None:
        """A human status line (progress, files written): stderr, so stdout stays parseable. Callers escape
        interpolated names (`rich.markup.escape`) when ``markup`` is on."""
        self.err.print(text, soft_wrap=True, markup=markup, highlight=False, emoji=False)

    def table(self, table: Table) -> None:
        """A table on stdout. Piped, its title and caption are lines of their own: rich wraps them at the table's
        width and pads each line with spaces, which a script reading or diffing the output would trip over."""
        if self.out.is_terminal:
            self.out.print(table)
            return
        title, caption = table.title, table.caption
        table.title = table.caption = None
        if title:
            self.out.print(title, soft_wrap=True, highlight=False)
        self.out.print(table)
        if caption:
            self.out.print(caption, soft_wrap=True, highlight=False)

    def document(self, payload: dict[str, Any]) -> None:
        """The command's one JSON document on stdout, tagged with its schema name and version."""
        doc = {"schema": f"windowkeeper.{self.command}", "version": SCHEMA_VERSION, **payload}
        sys.stdout.write(json.dumps(doc, ensure_ascii=False, indent=1, allow_nan=False) + "\n")
        sys.stdout.flush()

    def error(self, exc: CliError) -> None:
        """Print an input/usage error: one line on stderr (problems indented below it); JSON on stdout too."""
        self.err.print(f"[bold red]error:[/] {escape(str(exc))}", soft_wrap=True, highlight=False, emoji=False)
        for problem in exc.problems:
            self.err.print(f"  {problem}", soft_wrap=True, markup=False, highlight=False, emoji=False)
        if self.json_mode:
            self.document({"ok": False, "error": str(exc), "problems": exc.problems or [str(exc)]})
