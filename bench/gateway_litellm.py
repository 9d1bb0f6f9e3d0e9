"""The gateway's added latency beside LiteLLM's proxy doing plain pass-through of the same requests.

One fake OpenAI upstream; in front of it a ``windowkeeper serve`` process (budget 128k, so these conversations
pass through unchanged) and a LiteLLM proxy process (one model routed to the same upstream, no callbacks, no
database). Each round sends the same Chat Completions body directly, through the gateway and through LiteLLM, in
turn, and the added latency is each proxy's time minus the direct call's. The conversations continue one thread
each (a reply and a new user message per round), as an agent's do.

LiteLLM comes with the ``bench-litellm`` extra (or any install that provides the ``litellm`` command; pass
``--litellm PATH`` for one in its own virtualenv):

    PYTHONPATH=src python bench/gateway_litellm.py [--requests 40] [--litellm /path/to/bin/litellm]
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import httpx  # noqa: E402
from bench.gateway_latency import conversation, percentile  # noqa: E402
from tests.serve.harness import free_port, served  # noqa: E402

from windowkeeper.testing.fake_servers import FakeOpenAIServer  # noqa: E402

SIZES = (1_000, 10_000, 100_000)


@contextmanager
def litellm_proxy(executable: str, upstream: str, workdir: str) -> Iterator[tuple[str, str]]:
    """A LiteLLM proxy routing model ``m`` to ``upstream``; yields ``(url, master key)``."""
    port = free_port()
    key = f"sk-{secrets.token_hex(32)}"
    config = Path(workdir) / "litellm.yaml"
    config.write_text(
        "model_list:\n"
        "  - model_name: m\n"
        "    litellm_params:\n"
        "      model: openai/m\n"
        f"      api_base: {upstream}\n"
        "      api_key: sk-upstream\n"
        "litellm_settings:\n"
        "  telemetry: false\n"
    )
    env = {**os.environ, "LITELLM_MASTER_KEY": key, "LITELLM_LOCAL_MODEL_COST_MAP": "True", "LITELLM_LOG": "ERROR"}
    log = open(Path(workdir) / "litellm.log", "wb")  # noqa: SIM115 - closed in the finally below
    cmd = [executable, "--config", str(config), "--host", "127.0.0.1", "--port", str(port)]
    proc = subprocess.Popen(cmd, env=env, stdout=log, stderr=subprocess.STDOUT, cwd=workdir)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 300
        while True:
            try:
                if httpx.get(url + "/health/liveliness", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if proc.poll() is not None or time.monotonic() > deadline:
                log.flush()
                tail = (Path(workdir) / "litellm.log").read_text(errors="replace")[-2000:]
                raise RuntimeError(f"the LiteLLM proxy ({executable}) did not start:\n{tail}")
            time.sleep(0.5)
        yield url, key
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()


def measure(
    size: int, requests: int, direct: str, gateway: str, litellm: tuple[str, str], http: httpx.Client
) -> dict[str, Any]:
    items = conversation(size)
    ours: list[float] = []
    theirs: list[float] = []
    own_key = {"authorization": f"Bearer sk-litellm-bench-{size}"}
    ll_url, ll_key = litellm
    targets = [
        ("direct", direct + "/chat/completions", own_key),
        ("gateway", gateway + "/v1/chat/completions", own_key),
        ("litellm", ll_url + "/v1/chat/completions", {"authorization": f"Bearer {ll_key}"}),
    ]
    for n in range(requests + 3):
        raw = json.dumps({"model": "m", "messages": items}).encode()
        took: dict[str, float] = {}
        for name, url, headers in targets[n % 3 :] + targets[: n % 3]:  # each order in turn
            started = time.perf_counter()
            http.post(url, content=raw, headers={**headers, "content-type": "application/json"}).raise_for_status()
            took[name] = time.perf_counter() - started
        if n >= 3:  # warm-up: each proxy's first calls on the thread
            ours.append(took["gateway"] - took["direct"])
            theirs.append(took["litellm"] - took["direct"])
        items = [*items, {"role": "assistant", "content": f"reply {n}"}, {"role": "user", "content": f"and {n}?"}]
    return {
        "size": size,
        "ours_p50": percentile(ours, 0.5) * 1000,
        "ours_p99": percentile(ours, 0.99) * 1000,
        "theirs_p50": percentile(theirs, 0.5) * 1000,
        "theirs_p99": percentile(theirs, 0.99) * 1000,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=40)
    parser.add_argument("--litellm", default=shutil.which("litellm"), help="the litellm command (default: on PATH)")
    args = parser.parse_args(argv)
    if not args.litellm:
        print("no litellm command: pip install 'windowkeeper[bench-litellm]' or pass --litellm PATH", file=sys.stderr)
        return 2
    with FakeOpenAIServer() as upstream, tempfile.TemporaryDirectory() as tmp:
        flags = ["--budget", "128000", "--store", f"sqlite:///{tmp}/g.sqlite3", "--openai-base-url", upstream.base_url]
        with (
            served(*flags) as (url, _),
            litellm_proxy(args.litellm, upstream.base_url, tmp) as litellm,
            httpx.Client(timeout=120) as http,
        ):
            rows = [measure(size, args.requests, upstream.base_url, url, litellm, http) for size in SIZES]
    print("| conversation | windowkeeper added p50 | p99 | LiteLLM added p50 | p99 | LiteLLM / windowkeeper (p50) |")
    print("|---|---|---|---|---|---|")
    for row in rows:
        ratio = row["theirs_p50"] / row["ours_p50"] if row["ours_p50"] > 0 else float("inf")
        print(
            f"| {row['size']:,} | {row['ours_p50']:.2f} ms | {row['ours_p99']:.2f} ms | {row['theirs_p50']:.2f} ms | "
            f"{row['theirs_p99']:.2f} ms | {ratio:.2f}x |"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
