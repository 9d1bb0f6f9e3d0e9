"""The LangChain middleware and hook write what they send once per message, not the whole view on every call.

When the agent's state holds system messages of the host's (a thread that began with a ``SystemMessage``, an
instruction given mid-conversation), `_lc.managed` used to write the whole view as new LangChain messages on every
call (`FitResult.messages`) and then throw away every written message but the system ones: 70 ms a call at a
100k-token budget (~870 messages). It now writes the messages the view is laid out from one by one, each once per
message object (`written_alone`), and sends the same messages as before.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

pytest.importorskip("langchain_core")

from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage

from windowkeeper import Window
from windowkeeper.context.budget import TokenBudgetContextManager
from windowkeeper.integrations import _lc
from windowkeeper.llm.formats import langchain as lc_format
from windowkeeper.llm.formats.registry import get_format


def _history(turns: int, *, mid_system_at: int | None = None) -> list[Any]:
    out: list[Any] = [SystemMessage("You run tests.", id="sys-0")]
    for t in range(turns):
        if t == mid_system_at:
            out.append(SystemMessage(f"From now on, answer in French (turn {t}).", id=f"sys-{t}"))
        out.append(HumanMessage(f"Turn {t}: run tests/t_{t}.py", id=f"h{t}"))
        call = {"name": "run", "args": {"t": t}, "id": f"c{t}", "type": "tool_call"}
        out.append(AIMessage("", tool_calls=[call], id=f"a{t}"))
        out.append(ToolMessage("\n".join(f"test_{t}_{n} PASSED" for n in range(60)), tool_call_id=f"c{t}", id=f"r{t}"))
        out.append(AIMessage(f"Turn {t}: all pass.", id=f"b{t}"))
    return out


def _dump(messages: list[Any]) -> list[Any]:
    return [(type(m).__name__, m.model_dump()) for m in messages]


def _as_before(result: Any, originals: list[Any], own: Any, in_place: bool) -> tuple[Any, list[Any]]:
    """`managed` as it was: the whole view written (`FitResult.messages`), the system messages kept from it."""
    return _lc.managed(dataclasses.replace(result, _laid_out=None), originals, own, in_place=in_place)


@pytest.mark.parametrize("mid_system_at", [None, 3])
@pytest.mark.parametrize("in_place", [False, True])
def test_managed_sends_what_the_whole_write_gave(mid_system_at: int | None, in_place: bool) -> None:
    window: Window[Any, Any] = Window(TokenBudgetContextManager(1500, 300, recall=False), format="langchain")
    history = _history(12, mid_system_at=mid_system_at)
    for end in range(5, len(history) + 1, 2):
        result = window._fit_unwritten(history[:end])
        assert result._laid_out is not None
        for own in (None, SystemMessage("Be brief.", id="own")):
            system, sent = _lc.managed(result, history[:end], own, in_place=in_place)
            system_before, sent_before = _as_before(result, history[:end], own, in_place)
            assert _dump(sent) == _dump(sent_before)
            assert (system is None) == (system_before is None)
            if system is not None:
                assert _dump([system]) == _dump([system_before])


def test_a_call_writes_only_what_it_did_not_write_before(monkeypatch: pytest.MonkeyPatch) -> None:
    window: Window[Any, Any] = Window(TokenBudgetContextManager(100_000, 2000, recall=False), format="langchain")
    history = _history(30)
    result = window._fit_unwritten(history[:-2])
    _lc.managed(result, history[:-2])
    written: list[Any] = []
    made = lc_format._from_dicts

    def counting(items: Any) -> Any:
        written.extend(items)
        return made(items)

    monkeypatch.setattr(lc_format, "_from_dicts", counting)
    result = window._fit_unwritten(history)
    _system, sent = _lc.managed(result, history)
    # every message the host's own object but its system message, which goes out as an equal copy (as before)
    assert _dump(sent) == _dump(history) and all(a is b for a, b in zip(sent[1:], history[1:], strict=True))
    # the host's system message is the one message of the view written (once, on the call before); the whole
    # view (121 messages) was written again on every call
    assert len(written) <= 2


def test_the_format_writes_what_writing_its_laid_out_messages_one_by_one_gives() -> None:
    window: Window[Any, Any] = Window(TokenBudgetContextManager(1500, 300, recall=False), format="langchain")
    history = _history(10, mid_system_at=4)
    result = window._fit_unwritten(history)
    laid = result._laid_out()
    assert laid is not None
    one_by_one = [item for m in laid for item in lc_format.to_langchain([m])]
    assert _dump(result.messages) == _dump(one_by_one)
    assert get_format("openai_chat").laid_out(None, [], {}) is None  # a format that lays out otherwise says so
