"""The LangChain middleware and hook answer a call for what changed since the thread's last call.

`_lc.view_messages` and `_lc.managed` made four passes over the whole view on every call (each message's written
form looked up, its original searched, the lists merged and the system messages moved): ~4 us a view message, 4.9
ms a call at a 100k-token budget. They now carry the last call's answer per thread and patch it when the view and
the host's list only grew at the end. These tests hold the answer to the one the passes over the whole view give
(`_reference`, the code as it was) through growth, a history read back as new objects (a LangGraph checkpoint),
ids that repeat in a plain list, messages without ids, a message replaced in the middle and system messages of the
host's, and check that a call looks up only its new messages.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any

import pytest

pytest.importorskip("langchain_core")

from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage

from windowkeeper import Window
from windowkeeper.context.budget import TokenBudgetContextManager
from windowkeeper.context.pointers import offloaded
from windowkeeper.integrations import _lc
from windowkeeper.prompt.sections import join_sections, scratchpad_section, summary_section


def _reference_view(result: Any, originals: Sequence[Any]) -> list[Any]:
    """`view_messages` as it was: every message of the view looked up on every call."""
    messages = result.prompt.messages
    pointers = {id(m) for m in offloaded(messages)}
    wanted = {m.message_id for m in messages if id(m) not in pointers}
    by_id: dict[Any, Any] = {}
    if wanted:
        for original in reversed(originals):
            lc_id = getattr(original, "id", None)
            if lc_id and lc_id in wanted and lc_id not in by_id:
                by_id[lc_id] = original
                if len(by_id) == len(wanted):
                    break
    out: list[Any] = []
    for message in messages:
        original = by_id.get(message.message_id) if id(message) not in pointers else None
        if original is not None:
            out.append(original)
            continue
        out.extend(_lc.written_alone(message))
    return out


def _reference(result: Any, originals: Sequence[Any], own: Any, in_place: bool) -> tuple[Any, list[Any]]:
    """`managed` as it was (four passes over the written view)."""
    prompt = result.prompt
    own_text = bool(own is not None and _lc.system_text("langchain", own))
    if len(prompt.system_parts) <= int(own_text):
        return _lc.system_message(result, own), _reference_view(result, originals)
    laid = result._laid_out()
    written = [item for m in laid for item in _lc.written_alone(m)]
    plain = _reference_view(result, originals)
    if len(plain) == sum(1 for m in written if not _lc._is_system(m)):
        rest = iter(plain)
        written = [m if _lc._is_system(m) else next(rest) for m in written]
    if own_text and written and _lc._is_system(written[0]) and written[0].content == prompt.system_parts[0]:
        written[0] = own
    if not in_place:
        tail = join_sections([summary_section(prompt.summary), scratchpad_section(prompt.scratchpad)])
        systems = [m for m in written if _lc._is_system(m)]
        mine = [m for m in systems if tail and m is not own and m.content == tail]
        hosts = [m for m in systems if not any(m is x for x in mine)]
        written = [*hosts, *mine, *(m for m in written if not _lc._is_system(m))]
    if own_text and written and _lc._is_system(written[0]):
        return written[0], written[1:]
    return None, written


def _turn(t: int, rng: random.Random, *, ids: bool = True) -> list[Any]:
    def name(prefix: str) -> str | None:
        return f"{prefix}{t}" if ids else None

    call = {"name": "run", "args": {"t": t}, "id": f"c{t}", "type": "tool_call"}
    lines = rng.randint(1, 80)
    return [
        HumanMessage(f"Turn {t}: run tests/t_{t}.py", id=name("h")),
        AIMessage("", tool_calls=[call], id=name("a")),
        ToolMessage("\n".join(f"test_{t}_{n} PASSED" for n in range(lines)), tool_call_id=f"c{t}", id=name("r")),
        AIMessage(f"Turn {t}: all pass.", id=name("b")),
    ]


def _same(a: Any, b: Any) -> bool:
    """The same object, or (a system message copied with the summary) an equal one of the same class."""
    return a is b or (type(a) is type(b) and a.model_dump() == b.model_dump())


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("budget", [1500, 100_000])
def test_carried_answers_as_every_message_looked_up_again(seed: int, budget: int) -> None:
    rng = random.Random(seed)
    window: Window[Any, Any] = Window(TokenBudgetContextManager(budget, 300, recall=False), format="langchain")
    thread = f"t{seed}-{budget}"
    history: list[Any] = [SystemMessage("You run tests.", id="sys-0")] if seed % 2 else []
    t = 0
    for step in range(40):
        op = rng.random()
        if op < 0.45 or not history:
            history += _turn(t, rng, ids=rng.random() > 0.15)
            t += 1
        elif op < 0.6:  # the checkpoint read back: new objects, the same ids
            history = [m.model_copy(deep=True) for m in history]
        elif op < 0.68:  # a plain list repeats an id: the last of the id answers
            history.append(history[rng.randrange(len(history))].model_copy(deep=True))
        elif op < 0.76:  # a message of the history replaced (same id, another text)
            k = rng.randrange(len(history))
            if isinstance(history[k], HumanMessage):
                history[k] = history[k].model_copy(update={"content": f"edited at step {step}"})
        elif op < 0.82:  # the host's instruction mid-conversation
            history.append(SystemMessage(f"Step {step}: answer briefly.", id=f"sys-{step}"))
        elif op < 0.88:  # a message's id changed in place of the list
            k = rng.randrange(len(history))
            history[k] = history[k].model_copy(update={"id": f"moved-{step}"})
        else:  # a call on the same lists again
            pass
        result = window._fit_unwritten(list(history), thread_id=thread)
        for own in (None, SystemMessage("Be brief.", id="own")):
            for in_place in (False, True):
                system, sent = _lc.managed(result, history, own, in_place=in_place)
                system_then, sent_then = _reference(result, history, own, in_place)
                assert len(sent) == len(sent_then), (step, own, in_place)
                assert all(_same(a, b) for a, b in zip(sent, sent_then, strict=True)), (step, own, in_place)
                assert (system is None) == (system_then is None)
                if system is not None:
                    assert _same(system, system_then)
        assert all(
            a is b for a, b in zip(_lc.view_messages(result, history), _reference_view(result, history), strict=True)
        )


@pytest.mark.parametrize("leading_system", [False, True])
def test_a_call_looks_up_only_its_new_messages(monkeypatch: pytest.MonkeyPatch, leading_system: bool) -> None:
    window: Window[Any, Any] = Window(TokenBudgetContextManager(100_000, 2000, recall=False), format="langchain")
    rng = random.Random(1)
    history: list[Any] = [SystemMessage("You run tests.", id="sys-0")] if leading_system else []
    for t in range(30):
        history += _turn(t, rng)
    result = window._fit_unwritten(history[:-2], thread_id="looked-up")
    _lc.managed(result, history[:-2])
    result = window._fit_unwritten(history, thread_id="looked-up")
    looked: list[Any] = []
    scanned: list[int] = []
    alone, pointers = _lc.written_alone, _lc.offloaded

    def counting(message: Any) -> list[Any]:
        looked.append(message)
        return alone(message)

    def scanning(messages: Sequence[Any]) -> Any:
        scanned.append(len(messages))
        return pointers(messages)

    monkeypatch.setattr(_lc, "written_alone", counting)
    monkeypatch.setattr(_lc, "offloaded", scanning)
    checkpoint = [m.model_copy() for m in history]  # read back as new objects, as LangGraph does between turns
    _system, sent = _lc.managed(result, checkpoint)
    # every message the host's own object of this call but its system message, which goes out as an equal copy
    skip = int(leading_system)
    assert all(a is b for a, b in zip(sent[skip:], checkpoint[skip:], strict=True))
    assert [m.model_dump() for m in sent] == [m.model_dump() for m in checkpoint]
    # only the two new messages are looked at (tested for a pointer; written, to count the system zone's items);
    # every one of the ~120 was, on every call
    assert sum(scanned) <= 2 and len(looked) <= 2 * int(leading_system)
