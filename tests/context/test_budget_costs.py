"""Costs of the budget manager that must not grow with the history: its originals, its summarizer requests,
and what a checkpointer reload makes it redo."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from windowkeeper.blocks import ToolCallBlock, ToolResultBlock
from windowkeeper.context import pointers
from windowkeeper.context.budget import TokenBudgetContextManager
from windowkeeper.context.pointers import OffloadStore, approx_bytes, is_offloaded, offload_info
from windowkeeper.errors import ConfigurationError
from windowkeeper.graph import InMemoryCheckpointer
from windowkeeper.llm import create_client
from windowkeeper.messages import Message
from windowkeeper.state import AgentState, ExecMeta
from windowkeeper.summarize import ExtractiveSummarizer, LLMSummarizer
from windowkeeper.summarize.limits import input_limit_of, newest_within
from windowkeeper.testing.fake_servers import FakeOpenAIServer
from windowkeeper.tokens import default_counter

COUNTER = default_counter()


def tool_turn(i: int, lines: int = 40, tag: str = "") -> list[Message]:
    output = "\n".join(f"row {k} of result {i}{tag}: value_{i}_{k}" for k in range(lines))
    return [
        Message.text_message(f"look at item {i}", message_id=f"u{i}", timestamp=0.0),
        Message(
            role="assistant",
            message_id=f"c{i}",
            content=[ToolCallBlock(id=f"call_{i}", name="read", args={"item": i})],
            timestamp=0.0,
        ),
        Message.tool_message(
            [ToolResultBlock(call_id=f"call_{i}", name="read", output=output)], message_id=f"r{i}", timestamp=0.0
        ),
    ]


def history(turns: int, tag: str = "") -> list[Message]:
    out: list[Message] = []
    for i in range(turns):
        out.extend(tool_turn(i, tag=tag))
    return out


def test_originals_cache_is_bounded_and_older_originals_come_back_from_the_log() -> None:
    messages = history(60)
    manager: TokenBudgetContextManager[AgentState] = TokenBudgetContextManager(
        4000, 500, keep_tool_results=1, offload_cache_bytes=5_000
    )
    state = AgentState(context=[])
    for i in range(0, len(messages), 3):
        state.context = [*state.context, *messages[i : i + 3]]
        state = manager.trim_context(state)
    store = manager.offloaded
    assert 0 < store.cached_bytes <= 5_000
    pointers = [m for m in state.context if is_offloaded(m)]
    assert pointers
    evicted = [m for m in pointers if m not in store]
    assert evicted, "a 5 kB cache cannot hold every cleared result"
    assert all(manager.restore(m) is m for m in evicted)  # nothing to restore from without the log
    by_id = {m.message_id: m for m in messages}
    restored = manager.restore_context(state, log=messages)
    assert [m.model_dump_json() for m in restored] == [by_id[m.message_id].model_dump_json() for m in restored]
    # a log holding a different message under the same id is not taken for the original
    forged = [m.model_copy(update={"content": [ToolResultBlock(call_id="x", output="forged")]}) for m in messages]
    assert all(is_offloaded(m) for m in manager.restore_context(state, log=forged) if m in evicted)


def test_forget_clears_a_threads_originals_only() -> None:
    manager: TokenBudgetContextManager[AgentState] = TokenBudgetContextManager(3000, 500, keep_tool_results=1)
    states = {}
    for thread in ("a", "b"):
        state = AgentState(context=history(20, tag=thread), execution_meta=ExecMeta(thread_id=thread))
        states[thread] = manager.trim_context(state)
    assert any(is_offloaded(m) for m in states["a"].context)
    before = len(manager.offloaded)
    manager.forget("a")
    assert 0 < len(manager.offloaded) < before
    assert all(manager.restore(m) is m for m in states["a"].context)
    assert any(manager.restore(m) is not m for m in states["b"].context)
    manager.forget()
    assert len(manager.offloaded) == 0 and manager.offloaded.cached_bytes == 0


def test_forget_drops_a_threads_recall_state_and_passages() -> None:
    """A forgotten (deleted) thread is not searchable any more and holds no recall memory; other threads keep theirs."""
    manager: TokenBudgetContextManager[AgentState] = TokenBudgetContextManager(3000, 500, keep_tool_results=1)
    assert manager.recall is not None
    for thread in ("a", "b"):
        state = AgentState(context=history(20, tag=thread), execution_meta=ExecMeta(thread_id=thread))
        manager.trim_context(state)
        assert manager.recall.search(thread, f"row 1 of result 1{thread}")
    manager.forget("a")
    assert "a" not in manager.recall._threads and not manager.recall.search("a", "row 1 of result 1a")
    assert manager.recall.search("b", "row 1 of result 1b")
    manager.forget()
    assert not manager.recall._threads and not manager.recall.search("b", "row 1 of result 1b")


def test_offload_store_rejects_a_bad_bound_and_skips_what_cannot_fit() -> None:
    with pytest.raises(ConfigurationError, match="max_bytes"):
        OffloadStore(-1)
    with pytest.raises(ConfigurationError, match="offload_cache_bytes"):
        TokenBudgetContextManager(3000, 500, offload_cache_bytes=-5)
    store = OffloadStore(100)
    original = tool_turn(1)[2]
    assert approx_bytes(original) > 100
    replacement = original.with_content([ToolResultBlock(call_id="call_1", output="[cleared]")])
    store.keep(original, replacement)
    assert len(store) == 0 and store.cached_bytes == 0


RESTART = textwrap.dedent(
    """
    import sys
    from windowkeeper import Message
    from windowkeeper.context import TokenBudgetContextManager
    from windowkeeper.context.pointers import is_offloaded
    from windowkeeper.graph import END, SQLiteCheckpointer, StateGraph

    path, mode = sys.argv[1], sys.argv[2]
    manager = TokenBudgetContextManager(2500, 500, keep_tool_results=1)
    saver = SQLiteCheckpointer(path)
    if mode == "run":
        graph = StateGraph(context_manager=manager)

        def tool_step(state):
            i = len(state.context)
            out = "\\n".join(f"line {k} of output {i}" for k in range(60))
            return {"messages": [
                Message.model_validate({"role": "assistant", "message_id": f"c{i}", "content": [
                    {"type": "tool_call", "id": f"k{i}", "name": "read", "args": {"n": i}}]}),
                Message.model_validate({"role": "tool", "message_id": f"r{i}", "content": [
                    {"type": "tool_result", "call_id": f"k{i}", "output": out}]}),
            ]}

        graph.add_node("MAIN", tool_step)
        graph.add_edge("MAIN", END)
        graph.set_entry_point("MAIN")
        app = graph.compile(checkpointer=saver)
        for turn in range(12):
            app.invoke({"messages": [Message.text_message(f"turn {turn}", message_id=f"u{turn}")]},
                       {"thread_id": "t"})
        print(sum(is_offloaded(m) for m in saver.get_state("t").context))
    else:
        state = saver.get_state("t")
        pointers = [m for m in state.context if is_offloaded(m)]
        assert pointers and all(manager.restore(m) is m for m in pointers)  # a new process caches nothing
        restored = manager.restore_context(state, log=saver.get_messages("t"))
        print(sum(is_offloaded(m) for m in restored), len(pointers), restored[2].text().count("line "))
    saver.close()
    """,
)


def test_pointers_are_restored_in_a_new_process_from_the_sqlite_log(tmp_path: Path) -> None:
    path = tmp_path / "threads.db"

    def run(mode: str) -> str:
        proc = subprocess.run(
            [sys.executable, "-c", RESTART, str(path), mode], capture_output=True, text=True, timeout=120, check=False
        )
        assert proc.returncode == 0, proc.stderr
        return proc.stdout.strip()

    assert int(run("run")) > 0
    left, pointers, _ = map(int, run("restore").split())
    assert pointers > 0 and left == 0


async def test_a_reloaded_checkpoint_is_recognised_without_recounting() -> None:
    saver = InMemoryCheckpointer()
    manager: TokenBudgetContextManager[AgentState] = TokenBudgetContextManager(3000, 500, keep_tool_results=1)
    state = AgentState(context=[], execution_meta=ExecMeta(thread_id="t"))
    for i in range(30):
        state = await saver.aget_state("t") or state
        new = tool_turn(i)
        state.context = [*state.context, *new]
        state = await manager.atrim_context(state)
        await saver.aput("t", state, new)
        assert manager.last_metrics is not None
    reloaded = await saver.aget_state("t")
    assert reloaded is not None
    # the same objects come back, so the manager's next call only looks at what is appended
    assert all(a is b for a, b in zip(reloaded.context, state.context, strict=True))
    reloaded.context[-1].content = [ToolResultBlock(call_id="call_29", output="edited in place")]
    again = await saver.aget_state("t")
    assert again is not None and again.context[-1] is not reloaded.context[-1]
    assert "row 0 of result 29" in again.context[-1].text()


def test_newest_within_reads_from_the_newest_end_only() -> None:
    seen: list[int] = []

    def cost(x: int) -> int:
        seen.append(x)
        return x

    assert newest_within(list(range(1, 101)), 300, cost) == [98, 99, 100]
    assert seen == [100, 99, 98, 97]
    assert newest_within([5, 500], 100, lambda x: x) == []


def test_summarizers_state_their_input_limit() -> None:
    assert ExtractiveSummarizer(input_limit=1234).input_limit == 1234
    assert input_limit_of(ExtractiveSummarizer(input_limit=77)) == 77

    def plain(messages: list[Message]) -> str:
        return "x"

    assert input_limit_of(plain) == input_limit_of(object())
    manager = TokenBudgetContextManager(3000, 500, summarizer=ExtractiveSummarizer(input_limit=999))
    assert manager.summary_input_limit == 999
    with pytest.raises(ConfigurationError, match="input_limit"):
        ExtractiveSummarizer(input_limit=0)


def test_extractive_summarizer_reads_only_the_newest_messages_within_its_limit() -> None:
    summarizer = ExtractiveSummarizer(input_limit=300)
    old = Message.text_message("The deploy key is KEY-OLD-1234 for billing-api.", message_id="old", timestamp=0.0)
    filler = [Message.text_message(f"note {i}: the build took {i} s.", message_id=f"n{i}") for i in range(40)]
    summary = summarizer.extract([old, *filler], max_tokens=200)
    assert "KEY-OLD-1234" not in summary and "note 39" in summary


async def test_no_llm_summary_request_exceeds_its_input_limit_on_a_long_first_call() -> None:
    limit = 2_000
    with FakeOpenAIServer(default_text="summary of the earlier turns") as server:
        client = create_client("gpt-4o-mini", base_url=server.base_url, api_key="test", max_retries=0)
        summarizer = LLMSummarizer(client, input_limit=limit)
        manager: TokenBudgetContextManager[AgentState] = TokenBudgetContextManager(
            3500, 500, summarizer=summarizer, keep_tool_results=1
        )
        messages = history(700)  # about 2,100 messages: a cold plan drops almost all of them at once
        huge = Message.text_message("word " * 5000, message_id="huge", timestamp=0.0)
        state = AgentState(context=[*messages[:-3], huge, *messages[-3:]])
        state = await manager.atrim_context(state)
        await manager.atrim_context(AgentState(context=[*state.context, *history(800)[-3:]]))
        await summarizer.aclose() if hasattr(summarizer, "aclose") else None
        await client.aclose()
        assert server.requests
        for request in server.requests:
            body = request.json
            system = body.get("instructions") or ""
            text = body["input"][0]["content"][0]["text"]
            sent = summarizer.request_tokens(system, text)
            assert sent <= limit, sent
        first = server.requests[0].json["input"][0]["content"][0]["text"]
        # the newest dropped message (too big alone, so cut), none of the oldest
        assert "word word" in first and "cut: over the summarizer's input limit" in first
        assert "look at item 10 " not in first
    assert state.context_summary and "summary of the earlier turns" in state.context_summary


async def test_an_oversized_message_and_previous_summary_are_cut_to_fit() -> None:
    limit = 800
    with FakeOpenAIServer(default_text="ok") as server:
        client = create_client("gpt-4o-mini", base_url=server.base_url, api_key="test", max_retries=0)
        summarizer = LLMSummarizer(client, input_limit=limit)
        big = Message.text_message("alpha " * 3000, message_id="big", timestamp=0.0)
        await summarizer.summarize([big], previous_summary="beta " * 3000, max_tokens=100)
        await client.aclose()
        body = server.last_request.json
    text = body["input"][0]["content"][0]["text"]
    assert summarizer.request_tokens(body["instructions"], text) <= limit
    assert "alpha" in text and "beta" in text and "cut: over the summarizer's input limit" in text
    with pytest.raises(ConfigurationError, match="input_limit"):
        LLMSummarizer(client, input_limit=10)


def test_pointer_records_its_originals_fingerprint() -> None:
    manager: TokenBudgetContextManager[AgentState] = TokenBudgetContextManager(3000, 500, keep_tool_results=1)
    messages = history(20)
    state = manager.trim_context(AgentState(context=list(messages)))
    by_id = {m.message_id: m for m in messages}
    for pointer in (m for m in state.context if is_offloaded(m)):
        info = offload_info(pointer)
        assert info is not None and info["original"] == by_id[pointer.message_id].fingerprint()


@settings(max_examples=400, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("ab \t\n\r\x0b\x0c\x1c\x85\u2028")), max_size=60), st.integers(1, 20))
def test_pointer_first_line_reads_only_a_head_and_matches_a_full_split(text: str, scan: int) -> None:
    """The pointer's first line comes from a split of the output's head when that decides it; same answer always."""
    expected = next((line.strip() for line in text.splitlines() if line.strip()), "")
    if len(expected) > pointers._FIRST_LINE_CHARS:
        expected = expected[: pointers._FIRST_LINE_CHARS - 1] + "…"
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(pointers, "_FIRST_LINE_SCAN", scan)
        assert pointers._first_line(text) == expected
    assert pointers._first_line("\n" * 100_000 + "  found  \nrest") == "found"


def test_a_system_or_recall_message_appended_to_a_continuing_thread_is_priced_in_its_zone() -> None:
    """The scan of what a call appended (two C passes when it holds neither kind) still finds a recall message (its
    own zone) and a system message (moved into the system text), each arriving alone among the new messages."""
    manager: TokenBudgetContextManager[AgentState] = TokenBudgetContextManager(100_000, 2_000, recall=False)
    state = manager.trim_context(AgentState(context=tool_turn(0)))
    plain = manager.last_metrics
    assert plain is not None and plain.zones["recall"] == 0
    note = Message.text_message(
        "earlier: the password is swordfish", message_id="r1", timestamp=0.0, metadata={"windowkeeper": "recall"}
    )
    state.context = [*state.context, *tool_turn(1), note]
    state = manager.trim_context(state)
    recalled = manager.last_metrics
    assert recalled is not None and recalled.zones["recall"] == COUNTER.count_message(note)
    assert recalled.zones["recent"] == plain.zones["recent"] + COUNTER.count_messages(tool_turn(1)) - 3
    rule = Message.text_message("answer in French", "system", message_id="s1", timestamp=0.0)
    state.context = [*state.context, *tool_turn(2), rule]
    manager.trim_context(state)
    ruled = manager.last_metrics
    assert ruled is not None and ruled.zones["system"] > recalled.zones["system"]
    assert ruled.zones["recent"] == recalled.zones["recent"] + COUNTER.count_messages(tool_turn(2)) - 3
