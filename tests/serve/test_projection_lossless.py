"""The gateway's projection, in process (`project`, the window the gateway runs, `restore_originals`): what goes
upstream of an item windowkeeper changed in part is the client's own where windowkeeper did not change it.

Two losses are pinned here. An Anthropic user turn holding only tool results went upstream without its top-level
keys once a result was cleared (a proxy's ``x_meta``): no part of it was the client's any more, so nothing named
the turn it came from, although windowkeeper changed its content only. And a Chat tool message (or a Responses
function output) whose content is a list holding a part the reader does not model went upstream, once cut to fit,
with that part as ``[unknown x_blob] {...}`` text in place of the part.
"""

from __future__ import annotations

import json
import warnings
from typing import Any

import pytest

from windowkeeper.integrations import Window
from windowkeeper.serve.projection import ItemCache, project, restore_originals


def _output(n: int) -> str:
    return "\n".join(f"[{n}.{i}] line of output checksum {(n * 31 + i) % 997}" for i in range(60))


class _Gateway:
    """What the gateway does with one thread's requests, without the HTTP around it."""

    def __init__(self, fmt: str, budget: int) -> None:
        self.fmt = fmt
        self.window = Window(budget=budget, format=fmt, prompt_cache=False)
        self.cache: ItemCache | None = None

    def send(self, items: list[dict[str, Any]]) -> list[Any]:
        self.cache = project(self.fmt, items, self.cache)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            fit = self.window.fit(self.cache.plains)
        out, _ = restore_originals(list(fit.messages), items, self.cache)
        return out


def _names(turn: dict[str, Any]) -> set[str]:
    """What names the blocks of a user turn: its results' call ids and its texts."""
    return {b.get("tool_use_id") or b.get("text") or "" for b in turn["content"]} - {""}


def test_an_anthropic_turn_of_tool_results_keeps_its_keys_when_a_result_is_cleared() -> None:
    gateway = _Gateway("anthropic", 2_500)
    items: list[dict[str, Any]] = [{"role": "user", "content": "Audit everything."}]
    changed: list[tuple[dict[str, Any], dict[str, Any]]] = []
    for n in range(1, 9):
        call = {"type": "tool_use", "id": f"toolu_{n}", "name": "run", "input": {"n": n}}
        items.append({"role": "assistant", "content": [{"type": "text", "text": f"step {n}"}, call]})
        blocks: list[dict[str, Any]] = [{"type": "tool_result", "tool_use_id": f"toolu_{n}", "content": _output(n)}]
        if n % 2:
            blocks.append({"type": "text", "text": f"note {n}"})
        items.append({"role": "user", "content": blocks, "x_meta": {"n": n}})
        for sent in gateway.send(items):
            if sent in items or sent["role"] != "user" or not isinstance(sent["content"], list):
                continue
            turns = [i for i in items if i["role"] == "user" and isinstance(i["content"], list)]
            client = next(i for i in turns if _names(i) & _names(sent))
            changed.append((client, sent))
    assert any(len(client["content"]) == 1 for client, _ in changed)  # a turn of one result was cleared
    for client, sent in changed:
        assert sent.get("x_meta") == client["x_meta"], sent


def _tool_turn(fmt: str, n: int) -> list[dict[str, Any]]:
    text = _output(n) * (8 if n == 4 else 1)
    blob = {"type": "x_blob", "payload": {"k": n}}
    if fmt == "openai_chat":
        call = {"id": f"call_{n}", "type": "function", "function": {"name": "run", "arguments": "{}"}}
        output = {"role": "tool", "tool_call_id": f"call_{n}", "content": [{"type": "text", "text": text}, blob]}
        return [{"role": "assistant", "content": None, "tool_calls": [call]}, {**output, "x_tool": n}]
    image = {"type": "input_image", "file_id": f"file-{n}", "detail": "low"}
    output = {
        "type": "function_call_output",
        "call_id": f"call_{n}",
        "output": [{"type": "input_text", "text": text}, blob, image],
    }
    return [
        {"type": "function_call", "call_id": f"call_{n}", "name": "run", "arguments": "{}"},
        {**output, "id": f"fco_{n}", "status": "completed", "x_tool": n},
    ]


@pytest.mark.parametrize("fmt", ["openai_chat", "openai_responses"])
def test_a_tool_output_cut_to_fit_keeps_its_unknown_part_in_its_own_shape(fmt: str) -> None:
    gateway = _Gateway(fmt, 4_000)
    items: list[dict[str, Any]] = [{"role": "user", "content": "Audit everything."}]
    key = "content" if fmt == "openai_chat" else "output"
    cuts = 0
    for n in range(1, 7):
        items += _tool_turn(fmt, n)
        for sent in gateway.send(items):
            if "[truncated " not in json.dumps(sent):
                continue
            cuts += 1
            client = next(
                i
                for i in items
                if i.get(key) is not None
                and i.get("tool_call_id", i.get("call_id")) == sent.get("tool_call_id", sent.get("call_id"))
                and i.get("type") != "function_call"
            )
            assert "[unknown " not in json.dumps(sent)
            assert {k: v for k, v in sent.items() if k != key} == {k: v for k, v in client.items() if k != key}
            assert [p for p in sent[key] if "text" not in p] == [p for p in client[key] if "text" not in p]
        items.append({"role": "assistant", "content": f"done {n}"})
    assert cuts > 0


def test_an_anthropic_tool_result_cut_to_fit_keeps_its_keys_and_parts() -> None:
    """The gateway's twin of a ``tool_result`` holds a ``search_result`` as text and no ``cache_control``: a result
    cut to fit went upstream with that text, without the block's marks and with its image unmarked."""
    search = {
        "type": "search_result",
        "source": "https://kb.test/1",
        "title": "kb",
        "content": [{"type": "text", "text": "kb"}],
    }
    shot = {
        "type": "image",
        "source": {"type": "url", "url": "https://x.test/s.png"},
        "cache_control": {"type": "ephemeral"},
    }
    log = "\n".join(f"line {i} of the audit log" for i in range(3000))
    result = {
        "type": "tool_result",
        "tool_use_id": "toolu_1",
        "content": [{"type": "text", "text": log}, search, shot],
        "is_error": False,
        "cache_control": {"type": "ephemeral"},
        "x_b": 1,
    }
    items: list[dict[str, Any]] = [
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_1", "name": "f", "input": {}}]},
        {"role": "user", "content": [result], "x_r": 1},
    ]
    turn = _Gateway("anthropic", 4_000).send(items)[-1]
    assert turn["x_r"] == 1
    (block,) = turn["content"]
    assert "[truncated " in block["content"][0]["text"]
    assert "[unknown " not in json.dumps(block)
    assert {k: v for k, v in block.items() if k != "content"} == {k: v for k, v in result.items() if k != "content"}
    assert block["content"][1:] == [search, shot]


@pytest.mark.parametrize("budget", [6_000, 14_000])
@pytest.mark.parametrize("fmt", ["openai_chat", "openai_responses", "anthropic"])
def test_documented_shapes_through_the_gateway(fmt: str, budget: int) -> None:
    """The managed runs of `tests/llm/test_formats_lossless_runs.py` through the gateway's projection: every item
    sent upstream is the client's, windowkeeper's, or a client's item cut to fit that keeps its keys and parts."""
    from llm.test_formats_lossless_runs import ROUNDS, _check, _is_result  # tests/ is on the path (rootdir)

    gateway = _Gateway(fmt, budget)
    items: list[dict[str, Any]] = []
    cut = 0
    for n in range(1, 9):
        rounds = ROUNDS[fmt](n)
        at = next(k for k, item in enumerate(rounds) if _is_result(item)) + 1
        for part in (rounds[:at], rounds[at:]):
            items += part
            cut += sum(_check(fmt, n, item, items) == "cut" for item in gateway.send(items) if item not in items)
    assert cut > 0
