"""``windowkeeper store check URL [--remove]``: list the stored rows a store cannot give back, and remove them.

A hand-edited, truncated or foreign row makes the reads of its thread or session raise `StorageError` (naming
it); this command is the documented way back: it lists every such row (exit 1 when any is found) and, with
``--remove``, deletes exactly those rows (exit 0 once all are gone). Memory records are also checked for the
shape the memory reads (`windowkeeper.memory.stored`). The URL is printed with its secrets masked.

``windowkeeper store prune URL [--remove]``: list the gateway threads (``windowkeeper serve --store``) whose data no
recognition index record leads to any more, with their sizes, and delete them (`windowkeeper.serve.prune`). A
gateway deletes such data itself as it evicts index records; this is for stores that grew before it did.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Annotated, Any, TypeVar

import typer
from rich.markup import escape

from ..errors import WindowkeeperError
from .output import EXIT_OK, EXIT_PROBLEMS, EXIT_USAGE, CliError, Output

store_app = typer.Typer(
    name="store",
    help="Maintain a store (SQLite file, PostgreSQL, Redis): find and remove unreadable rows and orphaned gateway "
    "threads.",
    short_help="Find and remove a store's unreadable rows and orphaned threads.",
    no_args_is_help=True,
)


async def _check(url: str, prefix: str | None, remove: bool) -> tuple[str, list[Any]]:
    from ..memory.stored import check_doc
    from ..storage.check import check_store
    from ..storage.url import open_store

    store = open_store(url, prefix=prefix)
    try:
        return store.describe(), await check_store(store, doc_check=check_doc, remove=remove)
    finally:
        await store.close()


_T = TypeVar("_T")


def _run_job(output: Output, url: str, job: Callable[[], Coroutine[Any, Any, _T]]) -> _T:
    """Run a store command's ``job`` after refusing a missing SQLite file; a usage error or a store's own error
    is reported through ``output`` and exits with `EXIT_USAGE` (every store command says them the same way)."""
    try:
        _refuse_missing_file(url)
        return asyncio.run(job())
    except CliError as exc:
        output.error(exc)
        raise typer.Exit(EXIT_USAGE) from None
    except WindowkeeperError as exc:
        output.error(CliError(str(exc)))
        raise typer.Exit(EXIT_USAGE) from None


def _refuse_missing_file(url: str) -> None:
    """A SQLite store whose file does not exist is an error, before anything opens it: opening creates an empty
    database, so a mistyped path was reported sound ("0 unreadable row(s)", exit 0) and left a new file behind.
    ``sqlite:///`` before an absolute path is the usual slip (three slashes make it relative): the error spells
    the URL of the absolute path."""
    from ..storage.url import mask_url, sqlite_target, store_kind

    try:
        if store_kind(url) != "sqlite":
            return
        database, _prefix, is_uri = sqlite_target(url)
    except WindowkeeperError:
        return  # open_store names what is wrong with the URL
    if is_uri or database == ":memory:" or Path(database).exists():
        return
    message = f"{mask_url(url)}: no such database file {database}"
    absolute = Path("/" + database)
    if url.lower().startswith("sqlite:///") and not Path(database).is_absolute():
        message += (
            f" (relative to the current directory: sqlite:/// and a path is relative); for {absolute} write "
            f"sqlite:///{absolute}"
        )
    raise CliError(f"{message}; check the path (store commands read an existing store and create none)")


CHECK_EPILOG = (
    "\b\nExample:\n  windowkeeper store check agent.db\n"
    "  windowkeeper store check redis://localhost:6379/0 --remove\n\n"
    '\b\n--json prints {"schema": "windowkeeper.store.check", "version": 1, "ok", "store",\n'
    '  "bad": [{"kind", "scope", "key", "position", "problem", "removed"}]}'
)


@store_app.command("check", epilog=CHECK_EPILOG, short_help="List unreadable rows; --remove deletes them.")
def check(
    url: Annotated[
        str, typer.Argument(metavar="URL", help="The store: sqlite:///path or a path, postgresql://..., redis://...")
    ],
    prefix: Annotated[str | None, typer.Option(help="Table/key prefix (default: the URL's ?prefix=, else wk).")] = None,
    remove: Annotated[bool, typer.Option("--remove", help="Delete every unreadable row found.")] = False,
    json_out: Annotated[bool, typer.Option("--json", help="Print one JSON document on stdout.")] = False,
) -> None:
    """List rows a read would refuse (edited counters, truncated JSON, wrong shapes); --remove deletes them.

    Exit 0: nothing unreadable (or everything found was removed); 1: unreadable rows remain; 2: usage error.
    """
    output = Output(json_mode=json_out, command="store.check")
    described, findings = _run_job(output, url, lambda: _check(url, prefix, remove))
    remaining = [f for f in findings if not f.removed]
    if json_out:
        output.document(
            {
                "ok": not remaining,
                "store": described,
                "bad": [
                    {
                        "kind": f.kind,
                        "scope": list(f.scope),
                        "key": f.key,
                        "position": f.position,
                        "problem": f.problem,
                        "removed": f.removed,
                    }
                    for f in findings
                ],
            }
        )
    else:
        for finding in findings:
            state = "removed" if finding.removed else "bad"
            output.out.print(f"{state}: {finding.problem}", markup=False, soft_wrap=True)
        removed = len(findings) - len(remaining)
        output.status(
            f"{escape(described)}: {len(findings)} unreadable row(s), {removed} removed",
            markup=True,
        )
    raise typer.Exit(EXIT_PROBLEMS if remaining else EXIT_OK)


async def _prune(url: str, prefix: str | None, remove: bool, named: bool) -> tuple[str, list[Any], list[Any]]:
    from ..serve.prune import find_orphans, prune
    from ..storage.url import open_store

    store = open_store(url, prefix=prefix)
    try:
        orphans = await find_orphans(store, named=named)
        deleted = await prune(store, orphans) if remove else []
        return store.describe(), orphans, deleted
    finally:
        await store.close()


def _size(count: int) -> str:
    """``512 B``, ``3.4 KiB``, ``12.0 MiB``."""
    if count < 1024:
        return f"{count} B"
    if count < 1024 * 1024:
        return f"{count / 1024:.1f} KiB"
    return f"{count / (1024 * 1024):.1f} MiB"


PRUNE_EPILOG = (
    "\b\nExample:\n  windowkeeper store prune gateway.sqlite3\n  windowkeeper store prune "
    '"postgresql://gw@db/gateway?prefix=prod" --remove\n\n'
    '\b\n--json prints {"schema": "windowkeeper.store.prune", "version": 1, "ok", "store", "bytes",\n'
    '  "threads": [{"thread", "name", "rows", "bytes", "named", "deleted"}]}'
)


@store_app.command(
    "prune", epilog=PRUNE_EPILOG, short_help="List gateway threads no index record leads to; --remove deletes them."
)
def prune_cmd(
    url: Annotated[
        str, typer.Argument(metavar="URL", help="The store: sqlite:///path or a path, postgresql://..., redis://...")
    ],
    prefix: Annotated[str | None, typer.Option(help="Table/key prefix (default: the URL's ?prefix=, else wk).")] = None,
    remove: Annotated[bool, typer.Option("--remove", help="Delete the threads listed (default: only list).")] = False,
    named: Annotated[
        bool,
        typer.Option(
            "--named",
            help="Also threads a client named itself (X-Windowkeeper-Thread): they never have an index record.",
        ),
    ] = False,
    json_out: Annotated[bool, typer.Option("--json", help="Print one JSON document on stdout.")] = False,
) -> None:
    """List the `windowkeeper serve` threads whose stored data (message log, window state, view records,
    originals) no recognition index record leads to, with their sizes; --remove deletes them.

    Such a thread cannot be recognized again: its conversation, if it comes back, starts a new thread. A thread
    a client pins with X-Windowkeeper-Thread and a name of its own is kept unless --named is given; a pinned
    thread whose data is deleted starts anew. Other applications' threads in the store are never touched.
    Exit 0: nothing to prune (or everything listed was deleted); 1: orphaned threads remain; 2: usage error.
    """
    output = Output(json_mode=json_out, command="store.prune")
    described, orphans, deleted = _run_job(output, url, lambda: _prune(url, prefix, remove, named))
    gone = {o.thread for o in deleted}
    remaining = [o for o in orphans if o.thread not in gone]
    total = sum(o.bytes for o in orphans)
    if json_out:
        output.document(
            {
                "ok": not remaining,
                "store": described,
                "bytes": total,
                "threads": [
                    {
                        "thread": o.thread,
                        "name": o.name,
                        "rows": o.rows,
                        "bytes": o.bytes,
                        "named": o.named,
                        "deleted": o.thread in gone,
                    }
                    for o in orphans
                ],
            }
        )
    else:
        for orphan in orphans:
            state = "deleted" if orphan.thread in gone else "orphan"
            output.out.print(
                f"{state}: {orphan.thread} ({orphan.rows} rows, {_size(orphan.bytes)})", markup=False, soft_wrap=True
            )
        hint = "; run again with --remove to delete them" if remaining and not remove else ""
        output.status(
            f"{escape(described)}: {len(orphans)} orphaned thread(s), {_size(total)}, {len(gone)} deleted{hint}",
            markup=True,
        )
    raise typer.Exit(EXIT_PROBLEMS if remaining else EXIT_OK)
