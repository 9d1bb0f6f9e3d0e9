"""A conversation keeps its thread when the gateway has cut it and pushed it out of memory between calls.

Written while chasing the concurrency bench's split sessions (recognition by content, no header or session id):
eviction by size or idleness after a cut does not split a thread here, so the cause lies elsewhere; this keeps
that path covered."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from windowkeeper.testing.fake_servers import FakeOpenAIServer

from .conftest import GatewayFactory
from .test_memory import _turns


@pytest.mark.parametrize("settings", [{"max_thread_bytes": 1}, {"idle_seconds": 1e-9}, {}])
def test_a_cut_conversation_pushed_out_of_memory_keeps_one_thread(
    make_gateway: GatewayFactory, openai_server: FakeOpenAIServer, settings: dict[str, Any]
) -> None:
    gw = make_gateway(budget=800, **settings)
    lists = {s: _turns(s, 10) for s in range(3)}
    names: dict[int, set[str]] = {s: set() for s in lists}
    for n in range(10):
        for session, calls in lists.items():
            response = httpx.post(
                gw.url + "/v1/chat/completions",
                json={"model": "m", "messages": calls[n]},
                headers={"authorization": "Bearer sk-rec"},
            )
            assert response.status_code == 200, response.text
            names[session].add(response.headers["x-windowkeeper-thread"])
    assert all(len(v) == 1 for v in names.values()), names
    assert len(set.union(*names.values())) == 3
