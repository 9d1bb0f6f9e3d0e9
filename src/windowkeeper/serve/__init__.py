"""`windowkeeper serve`: an HTTP gateway that keeps any agent's conversation inside its context window.

An agent points its provider base URL at the gateway; the gateway forwards every request to the real provider,
changing the message list only when the conversation is over budget (through `Window`, with the same strategies and
guarantees), and relays the reply, streamed or not, as the provider sent it. Install with
``pip install "windowkeeper[serve]"``; see docs/gateway.md.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .config import ServeConfig, load_config

if TYPE_CHECKING:
    from starlette.applications import Starlette

__all__ = ["ServeConfig", "create_app", "load_config", "run"]

KEEP_ALIVE_SECONDS = 75
"""How long an idle client connection stays open. Longer than the idle timeout of the common load balancers (60 s),
so the balancer, not the gateway, closes a pooled connection; and uvicorn's default of 5 s, with the httptools
parser, closed connections that an agent's SDK reused right after a call of more than 5 s (a cold 100k-token
thread under load), which the SDK reported as a connection error."""

SERVER_OPTIONS: dict[str, Any] = {"date_header": False, "server_header": False}
"""uvicorn options of every gateway server: no ``date`` or ``server`` header of uvicorn's own. A relayed response
carries the upstream's (a proxy forwards the origin's ``Date``), and uvicorn's beside them gave the client two of
each; the gateway's own responses get a ``date`` from the app (`app.build_app`)."""


def create_app(config: ServeConfig) -> Starlette:
    """The ASGI application for ``config`` (imports the ``serve`` extra's packages)."""
    from .app import build_app

    return build_app(config)


def run(config: ServeConfig, **uvicorn_options: Any) -> None:
    """Serve ``config`` under uvicorn until interrupted.

    uvicorn's access log is off: it prints each request's query string, where some clients put their key. The
    HTTP parser and event loop are the C ones (httptools, uvloop) when installed, as the ``serve`` extra does:
    the pure-Python h11 parser costs a large request (a 100k-token conversation is ~400 KB) several milliseconds.
    Idle client connections stay open `KEEP_ALIVE_SECONDS` (see there); `SERVER_OPTIONS` leave ``date`` and
    ``server`` to the upstream.
    """
    import uvicorn

    options: dict[str, Any] = {
        "log_level": "info",
        "access_log": False,
        "timeout_keep_alive": KEEP_ALIVE_SECONDS,
        **_fast_stack(),
        **SERVER_OPTIONS,
        **uvicorn_options,
    }
    uvicorn.run(create_app(config), host=config.host, port=config.port, **options)


def _fast_stack() -> dict[str, str]:
    """uvicorn's ``http``/``loop`` options for the C implementations that are importable (none: uvicorn's own)."""
    import importlib.util

    options: dict[str, str] = {}
    if importlib.util.find_spec("httptools") is not None:
        options["http"] = "httptools"
    if importlib.util.find_spec("uvloop") is not None:
        options["loop"] = "uvloop"
    return options
