"""The upstream side: where each request goes, which headers cross, and the shared keep-alive connection pool.

Headers cross unchanged in both directions except the hop-by-hop ones (they describe one connection, not the
message), ``host``/``content-length`` (recomputed for the body actually sent), the gateway's own ``x-windowkeeper``
controls, the client's ``accept-encoding`` on the way up and ``content-encoding`` on the way back: the gateway reads
every reply (usage, recall calls) and hands the client decoded bytes, so it asks upstream only for the encodings its
httpx can decode (httpx's own ``accept-encoding``). A client's ``br`` forwarded as sent made the upstream answer in
brotli, which httpx without the ``brotli`` package relays still compressed, as if it were plain JSON.

The upstream's ``date`` and ``server`` come back as it sent them (a proxy forwards the origin's ``Date``, RFC 9110
6.6.1); `windowkeeper.serve.run` turns uvicorn's own off so that a response carries one of each.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

import httpx

from .config import ServeConfig
from .protocols import Family

HOP_BY_HOP = frozenset(
    {
        "connection",
        "keep-alive",
        "proxy-authenticate",
        "proxy-authorization",
        "proxy-connection",
        "te",
        "trailer",
        "transfer-encoding",
        "upgrade",
    }
)
NOT_FORWARDED = HOP_BY_HOP | {"host", "content-length", "accept-encoding"}
NOT_RETURNED = HOP_BY_HOP | {"content-length", "content-encoding"}


_GOOGLE_METHOD = re.compile(
    r":(?:streamGenerateContent|generateContent|countTokens|embedContent|batchEmbedContents|batchGenerateContent)$"
)
"""A Gemini method on a model path (``/v1/models/gemini-2.5-flash:generateContent``); an OpenAI fine-tuned model
id holds colons too (``ft:gpt-4o-mini:org::id``), so a colon alone says nothing."""

_GOOGLE_PATHS = ("/v1beta/", "/v1alpha/", "/upload/v1beta/", "/upload/v1alpha/", "/download/v1beta/")


def is_google_request(path: str, header_names: Iterable[str], query: str = "") -> bool:
    """Whether a request is for Google's Gemini API: its ``/v1beta`` paths, a ``:generateContent``-style method,
    its key header ``x-goog-api-key`` or its ``key`` query parameter. Such a request goes to the Gemini upstream
    and nowhere else, so its key never reaches another host (OpenAI's and Anthropic's APIs have neither)."""
    if path.startswith(_GOOGLE_PATHS) or _GOOGLE_METHOD.search(path):
        return True
    if any(name.lower() == "x-goog-api-key" for name in header_names):
        return True
    return any(pair.partition("=")[0] == "key" for pair in query.split("&"))


def family_of(path: str, headers: Iterable[tuple[str, str]], query: str = "") -> Family:
    """Whose API a relayed path belongs to: Google's (`is_google_request`), Anthropic's for ``/v1/messages...`` or
    a request carrying ``anthropic-version`` (the families share ``/v1/models``), else OpenAI's."""
    pairs = list(headers)
    if is_google_request(path, (name for name, _ in pairs), query):
        return "google"
    if path.startswith("/v1/messages") or path.startswith("/v1/complete"):
        return "anthropic"
    if any(name.lower() == "anthropic-version" for name, _ in pairs):
        return "anthropic"
    return "openai"


def base_url(config: ServeConfig, family: Family) -> str:
    if family == "google":
        return config.gemini_base_url
    return config.anthropic_base_url if family == "anthropic" else config.openai_base_url


def upstream_url(config: ServeConfig, family: Family, path: str, query: str) -> str:
    """The upstream URL for ``path``: a base URL given with or without its version (``/v1``, Gemini's
    ``/v1beta``), as the SDKs take it, works."""
    base = base_url(config, family).rstrip("/")
    version = "/" + base.rsplit("/", 1)[-1]
    if version in ("/v1", "/v1beta", "/v1alpha") and (path == version or path.startswith(version + "/")):
        path = path[len(version) :]
    return f"{base}{path}{'?' + query if query else ''}"


def request_headers(headers: Iterable[tuple[str, str]]) -> list[tuple[str, str]]:
    return [(k, v) for k, v in headers if k.lower() not in NOT_FORWARDED and not k.lower().startswith("x-windowkeeper")]


def response_headers(headers: httpx.Headers) -> list[tuple[bytes, bytes]]:
    return [
        (k.lower().encode("latin-1"), v.encode("latin-1"))
        for k, v in headers.multi_items()
        if k.lower() not in NOT_RETURNED
    ]


def make_client(config: ServeConfig) -> httpx.AsyncClient:
    """One pool for the process: keep-alive connections to each upstream, no retries (the client's SDK retries)."""
    timeout = httpx.Timeout(config.timeout, connect=config.connect_timeout)
    limits = httpx.Limits(max_connections=512, max_keepalive_connections=128, keepalive_expiry=60.0)
    return httpx.AsyncClient(timeout=timeout, limits=limits, follow_redirects=False, trust_env=False)
