"""What crosses the wire besides the body: the encodings the gateway asks the upstream for, and the one ``date`` and
``server`` a response carries.

The gateway reads every reply (usage, recall calls) and relays it decoded, so it may ask the upstream only for the
encodings it can decode: a client's ``br`` forwarded as sent made the upstream answer in brotli, which reached the
client still compressed but without its ``content-encoding`` (Node's fetch and the OpenAI Node SDK send ``gzip,
deflate, br``). A response relayed by the real ``windowkeeper serve`` process carried the upstream's ``date`` and
``server`` and uvicorn's own beside them.
"""

from __future__ import annotations

import base64
import gzip
import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx
import pytest

from windowkeeper.testing.fake_servers import FakeOpenAIServer

from .conftest import GatewayFactory
from .harness import process

REPLY = {
    "id": "c1",
    "object": "chat.completion",
    "created": 0,
    "model": "m",
    "choices": [{"index": 0, "message": {"role": "assistant", "content": "hello"}, "finish_reason": "stop"}],
    "usage": {"prompt_tokens": 5, "completion_tokens": 1, "total_tokens": 6},
}
PLAIN = json.dumps(REPLY, separators=(",", ":")).encode()
BROTLI = base64.b64decode(
    "G+AAIIzDuNmaaIrrJwYjVDpB20z9QtKgrRhENGgYDObSN4tOV1/dnCFnRSyG5BBBbM9/yi/xJbweHTcZluSDgXa/4SyZGbzZtcd9CiHRuJTA2eXBv"
    "RJaoCZFCtAKWSU+JLAh9zTOlnqXNOT88PGP0p/Q8d5u/ONTgaIlkBHIYlF/"
)
"""`PLAIN` compressed with brotli (Node's ``zlib.brotliCompressSync``): the test needs no brotli package to send it."""


class _Negotiating(BaseHTTPRequestHandler):
    """An upstream that compresses as real ones do: brotli when the request accepts it, else gzip when accepted."""

    protocol_version = "HTTP/1.1"
    seen: list[str]

    def _answer(self) -> None:
        self.rfile.read(int(self.headers.get("content-length") or 0))
        accepted = self.headers.get("accept-encoding", "")
        self.seen.append(accepted)
        body, encoding = PLAIN, ""
        if "br" in accepted:
            body, encoding = BROTLI, "br"
        elif "gzip" in accepted:
            body, encoding = gzip.compress(PLAIN), "gzip"
        self.send_response(200)
        self.send_header("content-type", "application/json")
        if encoding:
            self.send_header("content-encoding", encoding)
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_GET = do_POST = _answer

    def log_message(self, format: str, *args: object) -> None:
        pass


@contextmanager
def _negotiating_upstream() -> Iterator[tuple[str, list[str]]]:
    """`_Negotiating` on a free port: ``(its /v1 base URL, the accept-encoding of each request it received)``."""
    seen: list[str] = []
    handler = type("Handler", (_Negotiating,), {"seen": seen})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1", seen
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


@pytest.mark.parametrize("path", ["/v1/chat/completions", "/v1/models"], ids=["managed", "relayed"])
def test_a_client_accepting_brotli_gets_json_it_can_read(make_gateway: GatewayFactory, path: str) -> None:
    with _negotiating_upstream() as (upstream, seen):
        gw = make_gateway(budget=128_000, openai_base_url=upstream)
        body = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
        headers = {"authorization": "Bearer k", "accept-encoding": "gzip, deflate, br"}
        with httpx.Client(headers=headers) as client:
            response = (
                client.post(gw.url + path, json=body) if path.endswith("completions") else client.get(gw.url + path)
            )
    assert response.status_code == 200
    assert "content-encoding" not in response.headers
    assert response.content == PLAIN  # decoded by the gateway (gzip on the wire), relayed as plain JSON
    assert seen and all("br" not in accepted and "gzip" in accepted for accepted in seen)


def test_the_served_process_sends_one_date_and_server_header(tmp_path: Path) -> None:
    """The upstream's ``date`` and ``server`` are relayed (a proxy forwards the origin's); the gateway's own
    responses carry a ``date`` too."""
    store = f"sqlite:///{tmp_path / 'g.sqlite3'}"
    with (
        FakeOpenAIServer() as upstream,
        process("--budget", "128000", "--store", store, "--openai-base-url", upstream.base_url) as url,
        httpx.Client(base_url=url, headers={"authorization": "Bearer k"}) as client,
    ):
        chat = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
        relayed = [client.post("/v1/chat/completions", json=chat), client.get("/v1/models")]
        own = [client.get("/healthz"), client.post("/v1/chat/completions", content=b"{not json")]
    for response in relayed:
        assert response.status_code == 200
        assert len(response.headers.get_list("date")) == 1
        assert [server.split("/")[0] for server in response.headers.get_list("server")] == ["BaseHTTP"]
    for response in own:
        assert len(response.headers.get_list("date")) == 1 and "server" not in response.headers
    assert own[1].status_code == 400
