"""Fixtures for the gateway tests: fake upstreams and a gateway under uvicorn in front of them."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("starlette")
pytest.importorskip("uvicorn")

from windowkeeper.serve import ServeConfig
from windowkeeper.testing.fake_servers import FakeAnthropicServer, FakeOpenAIServer

from .harness import Gateway, running


@pytest.fixture
def openai_server() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer() as srv:
        yield srv  # type: ignore[misc]


@pytest.fixture
def anthropic_server() -> Iterator[FakeAnthropicServer]:
    with FakeAnthropicServer() as srv:
        yield srv  # type: ignore[misc]


GatewayFactory = Callable[..., Gateway]


@pytest.fixture
def make_gateway(
    tmp_path: Path, openai_server: FakeOpenAIServer, anthropic_server: FakeAnthropicServer
) -> Iterator[GatewayFactory]:
    """``make_gateway(budget=..., **settings)``: a running gateway on the fake upstreams and a fresh SQLite store."""
    started: list[Any] = []

    def make(**settings: Any) -> Gateway:
        settings.setdefault("store", f"sqlite:///{tmp_path / f'gw{len(started)}.sqlite3'}")
        settings.setdefault("openai_base_url", openai_server.base_url)
        settings.setdefault("anthropic_base_url", anthropic_server.url)
        ctx = running(ServeConfig(**settings))
        gw = ctx.__enter__()
        started.append(ctx)
        return gw

    yield make
    for ctx in reversed(started):
        ctx.__exit__(None, None, None)


@pytest.fixture
def gateway(make_gateway: GatewayFactory) -> Gateway:
    return make_gateway(budget=128_000)


@pytest.fixture
def closing() -> Iterator[ExitStack]:
    """SDK clients a test opens (``closing.enter_context(openai.OpenAI(...))``), closed when the test ends.

    A client left open keeps its pooled socket until the garbage collector reaches the client; when that happens
    in a collection of a later test, the socket's ResourceWarning fails whichever test is running then."""
    with ExitStack() as stack:
        yield stack
