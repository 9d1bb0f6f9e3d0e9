"""``windowkeeper serve``: run the context-managing HTTP gateway (see docs/gateway.md).

The command only parses flags into a `ServeConfig` and starts uvicorn; the gateway itself is
``windowkeeper.serve``. Its packages (starlette, uvicorn, httpx, orjson) come with the ``serve`` extra and are
imported when the command runs, so ``windowkeeper --help`` needs none of them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from ..errors import ConfigurationError, MissingDependencyError, StorageError

SERVE_HINT = 'windowkeeper serve needs its extra; install it with: pip install "windowkeeper[serve]"'

SERVE_EPILOG = (
    "\b\nExample:\n  windowkeeper serve --budget 128000 --store gateway.sqlite3\n"
    "  OPENAI_BASE_URL=http://127.0.0.1:8787/v1 python my_agent.py\n\n"
    "Exit codes: 0 stopped (Ctrl-C), 2 a bad setting or the serve extra missing, 3 the port cannot be bound "
    "(already in use)."
)


def register(app: typer.Typer) -> None:
    """Add the ``serve`` command to the CLI."""

    @app.command("serve", epilog=SERVE_EPILOG, short_help="Run the gateway that keeps an agent inside --budget.")
    def serve(
        port: Annotated[int | None, typer.Option("--port", help="Port to listen on (default 8787).")] = None,
        budget: Annotated[
            int | None, typer.Option("--budget", help="The model's context window in tokens (default 128000).")
        ] = None,
        host: Annotated[
            str | None, typer.Option("--host", help="Address to listen on (default 127.0.0.1: this machine only).")
        ] = None,
        store: Annotated[
            str | None,
            typer.Option("--store", help="sqlite:///path, postgresql://... or redis://... (default: a SQLite file)."),
        ] = None,
        openai_base_url: Annotated[
            str | None, typer.Option("--openai-base-url", help="OpenAI upstream (default https://api.openai.com/v1).")
        ] = None,
        anthropic_base_url: Annotated[
            str | None,
            typer.Option("--anthropic-base-url", help="Anthropic upstream (default https://api.anthropic.com)."),
        ] = None,
        gemini_base_url: Annotated[
            str | None,
            typer.Option(
                "--gemini-base-url", help="Gemini upstream (default https://generativelanguage.googleapis.com)."
            ),
        ] = None,
        summarizer: Annotated[
            str | None,
            typer.Option("--summarizer", help="'extractive' (offline, the default) or a model name for LLM summaries."),
        ] = None,
        config: Annotated[
            Path | None, typer.Option("--config", help="A TOML file with any of these settings; flags win.")
        ] = None,
    ) -> None:
        """Run the gateway: point an agent's base URL at it and its conversation stays inside --budget."""
        try:
            import httpx  # noqa: F401
            import orjson  # noqa: F401
            import starlette  # noqa: F401
            import uvicorn  # noqa: F401
        except ImportError:
            typer.echo(SERVE_HINT, err=True)
            raise typer.Exit(2) from None
        from ..serve import load_config, run
        from ..storage.sqlite import check_sqlite_location
        from ..storage.url import mask_url

        try:
            settings = load_config(
                config,
                port=port,
                budget=budget,
                host=host,
                store=store,
                openai_base_url=openai_base_url,
                anthropic_base_url=anthropic_base_url,
                gemini_base_url=gemini_base_url,
                summarizer=summarizer,
            )
            check_sqlite_location(settings.store_url)  # a folder or a path under a file: said now, not per request
        except (ConfigurationError, MissingDependencyError, StorageError) as exc:
            typer.echo(f"windowkeeper serve: {exc}", err=True)
            raise typer.Exit(2) from None
        typer.echo(
            f"windowkeeper serve: http://{settings.host}:{settings.port} (budget {settings.budget:,} tokens, "
            f"store {mask_url(settings.store_url.split('?')[0])})",
            err=True,
        )
        run(settings)
