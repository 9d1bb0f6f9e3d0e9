"""Encrypted content is priced as the hidden tokens it carries, not as its visible summary nor as base64 text.

A Responses reasoning item with ``encrypted_content`` was priced by its summary alone (an empty summary: nothing),
an Anthropic ``redacted_thinking`` block not at all, and a ``web_search_tool_result``'s ``encrypted_content`` as
the characters of its base64 (o200k spends a token on ~1.5 of them). The provider puts the hidden text back into
the context and bills it by its tokens, so the first two made a long reasoning session look far under the budget
and go out over it, and the third made a searched page cost three times what it does. Each is estimated now from
the payload's length (`ENCRYPTED_CHARS_PER_TOKEN` base64 characters per token).
"""

from __future__ import annotations

import base64
import json
import math
import random
from typing import Any

import pytest

from windowkeeper import Window
from windowkeeper.llm.formats import from_anthropic, from_responses_input
from windowkeeper.tokenizing.media import ENCRYPTED_CHARS_PER_TOKEN, encrypted_tokens
from windowkeeper.tokens import default_counter

from .sdk_types import sdk_problems


def _sealed(size: int, seed: int, *, urlsafe: bool = False) -> str:
    """An encrypted payload: ``size`` random bytes in base64 (Fernet's ``gAAAAA`` prefix for OpenAI's)."""
    raw = random.Random(seed).randbytes(size)
    return "gAAAAAB" + base64.urlsafe_b64encode(raw).decode() if urlsafe else base64.b64encode(raw).decode()


def _estimate(payload: str) -> int:
    return math.ceil(len(payload) / ENCRYPTED_CHARS_PER_TOKEN)


def _responses_session(turns: int) -> list[dict[str, Any]]:
    """A reasoning model's tool loop: each step a reasoning item (no summary, ~3,000 hidden tokens), a call and
    its short output; a new question every fourth step."""
    items: list[dict[str, Any]] = [{"type": "message", "role": "user", "content": "Audit the billing service."}]
    for t in range(turns):
        if t and t % 4 == 0:
            items.append({"type": "message", "role": "user", "content": f"Now check module {t}."})
        items.append({"type": "reasoning", "id": f"rs_{t}", "summary": [],
                      "encrypted_content": _sealed(11_000, t, urlsafe=True)})  # fmt: skip
        items.append({"type": "function_call", "call_id": f"fc{t}", "name": "read_file",
                      "arguments": json.dumps({"path": f"src/m{t}.py"})})  # fmt: skip
        items.append({"type": "function_call_output", "call_id": f"fc{t}", "output": f"def f{t}(): return {t}\n"})
    return items


def test_a_reasoning_item_is_priced_by_its_encrypted_reasoning() -> None:
    counter = default_counter()
    sealed = _sealed(11_000, 0, urlsafe=True)
    bare = {"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": sealed}
    summarized = {**bare, "summary": [{"type": "summary_text", "text": "Looked at the billing module."}]}
    for item in (bare, summarized):
        turn = from_responses_input([{"role": "user", "content": "hi"}, item])[1]
        # before: 9 tokens (its framing and summary only), whatever the hidden reasoning held
        assert _estimate(sealed) <= counter.count_message(turn) < _estimate(sealed) + 30
    # a summary longer than what its encrypted reasoning can hold counts as the text it is
    long_summary = {**bare, "summary": [{"type": "summary_text", "text": "word " * 8_000}], "encrypted_content": "x"}
    turn = from_responses_input([long_summary])[0]
    assert counter.count_message(turn) >= counter.count_text("word " * 8_000)
    assert encrypted_tokens("") == 0 and encrypted_tokens("abcde") == 1


def test_a_responses_fit_stays_under_the_budget_by_the_encrypted_estimate() -> None:
    """Before: 24 reasoning items (~70,000 hidden tokens) went out whole, counted as 782 tokens, at a 12,000-token
    budget."""
    from openai.types.responses import ResponseInputItemParam

    items = _responses_session(24)
    fit = Window(budget=12_000, format="openai_responses").fit(items)
    out = list(fit.messages)
    assert sdk_problems(out, ResponseInputItemParam) == []
    hidden = sum(_estimate(i["encrypted_content"]) for i in out if i.get("type") == "reasoning")
    assert hidden <= fit.input_tokens <= 12_000
    assert 0 < len([i for i in out if i.get("type") == "reasoning"]) < 24
    # what was kept is what was sent, byte for byte (every reasoning item kept whole, its ciphertext included)
    sent = {json.dumps(i) for i in items}
    kept = [i for i in out if i.get("type") in ("reasoning", "function_call")]
    assert kept and all(json.dumps(i) in sent for i in kept)
    assert out[-3:] == items[-3:]


def _anthropic_session(turns: int, *, search: bool = True) -> list[dict[str, Any]]:
    """Web research: each turn a redacted thinking block, a server-side search whose five results hold their
    pages encrypted (unless not ``search``), and an answer."""
    messages: list[dict[str, Any]] = []
    for t in range(turns):
        messages.append({"role": "user", "content": f"What changed in release {t}?"})
        results = [
            {"type": "web_search_result", "url": f"https://news.test/{t}/{k}", "title": f"Release {t} notes, part {k}",
             "encrypted_content": _sealed(3_000, 100 * t + k), "page_age": "2 days ago"}
            for k in range(5)
        ]  # fmt: skip
        query = {"query": f"release {t}"}
        searched = [
            {"type": "server_tool_use", "id": f"srvtoolu_{t}", "name": "web_search", "input": query},
            {"type": "web_search_tool_result", "tool_use_id": f"srvtoolu_{t}", "content": results},
        ]
        thinking = {"type": "redacted_thinking", "data": _sealed(6_000, 1_000 + t)}
        answer = {"type": "text", "text": f"Release {t} fixed the exporter."}
        messages.append({"role": "assistant", "content": [thinking, *(searched if search else []), answer]})
    return messages


def _hidden(message: dict[str, Any]) -> int:
    """The encrypted payloads of one Anthropic message, by the estimate."""
    total = 0
    for block in message["content"] if isinstance(message["content"], list) else []:
        if block.get("type") == "redacted_thinking":
            total += _estimate(block["data"])
        if block.get("type") == "web_search_tool_result":
            total += sum(_estimate(r["encrypted_content"]) for r in block["content"])
    return total


def test_anthropic_redacted_thinking_and_search_results_are_priced_by_the_estimate() -> None:
    counter = default_counter()
    session = _anthropic_session(1)
    turn = from_anthropic(None, session)[1]
    hidden = _hidden(session[1])
    # before: 6,000 bytes of redacted thinking counted 0, and 15,000 bytes of encrypted pages ~13,700 as text
    assert hidden <= counter.count_message(turn) < hidden + 400  # and the results' urls, titles, ids
    reasoning = from_anthropic(None, [{"role": "assistant", "content": [session[1]["content"][0]]}])[0]
    assert counter.count_message(reasoning) >= _estimate(session[1]["content"][0]["data"])


@pytest.mark.parametrize("search", [False, True])
def test_an_anthropic_fit_stays_under_the_budget_and_keeps_what_it_keeps_unchanged(search: bool) -> None:
    """Before, without searches: 12 redacted thinking blocks (~19,000 hidden tokens) went out whole at a
    15,000-token budget (with them, the results' base64 counted as text cut three times more than needed)."""
    from anthropic.types import MessageParam

    session = _anthropic_session(12, search=search)
    fit = Window(budget=15_000, format="anthropic").fit(session)
    out = list(fit.messages)
    assert sdk_problems(out, MessageParam) == []
    assert sum(_hidden(m) for m in out) <= fit.input_tokens <= 15_000
    assert 0 < sum(1 for m in out if m["role"] == "assistant") < 12
    # kept turns go out byte-identical (the newest block may only gain the cache breakpoint windowkeeper adds)
    sent = {json.dumps(m) for m in session}
    for m in out:
        if m["role"] == "assistant":
            plain = json.loads(json.dumps(m).replace(', "cache_control": {"type": "ephemeral"}', ""))
            assert json.dumps(plain) in sent
