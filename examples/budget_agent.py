"""A ReAct agent whose context is kept under a token budget, persisted in SQLite, with no network at all.

The model is a `ScriptedClient`: for each user task it calls two tools in parallel (one returns a long file), then
answers once the results are in. The agent trims with a `TokenBudgetContextManager` before every model call, so you
can watch the watermarks work: most calls only append to the previous prompt (``prefix stable``), and once the view
reaches the high watermark one call frees a large chunk at once (old tool outputs become pointers, the oldest turns
are summarized). The SQLite checkpointer keeps the full message log, so nothing the agent saw is lost.

Run: python examples/budget_agent.py [--turns 12] [--db path/to/agent.db]
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

from windowkeeper import (
    END,
    Agent,
    AgentState,
    ExtractiveSummarizer,
    Message,
    SQLiteCheckpointer,
    StateGraph,
    TokenBudgetContextManager,
    ToolCallBlock,
    ToolNode,
    TrimMetrics,
    validate,
)
from windowkeeper.context.pointers import is_offloaded
from windowkeeper.llm import LLMRequest, ScriptedClient

SYSTEM_PROMPT = "You are a careful coding assistant. Read the code before you change it."


def read_file(path: str) -> str:
    """Return the contents of a source file.

    Args:
        path: Repository-relative path of the file.
    """
    return "\n".join(f"{n:4d}  value_{n} = compute({path!r}, step={n})  # keeps the pipeline stable" for n in range(24))


def run_tests(path: str) -> str:
    """Run the test file that belongs to a module and return a short report.

    Args:
        path: Repository-relative path of the module under test.
    """
    return f"tests for {path}: 12 passed in 0.41s"


def task_number(request: LLMRequest) -> int:
    """The task the newest user message asks for ("task 7: ..." -> 7)."""
    user = next(m for m in reversed(request.messages) if m.role == "user")
    return int(user.text().split()[1].rstrip(":"))


def scripted_model(request: LLMRequest) -> Message:
    """Call both tools for a fresh task; answer once their results are the newest messages."""
    task = task_number(request)
    module = f"src/pipeline/stage_{task}.py"
    if request.messages[-1].role == "user":
        return Message(
            role="assistant",
            content=[
                ToolCallBlock(id=f"read-{task}", name="read_file", args={"path": module}),
                ToolCallBlock(id=f"test-{task}", name="run_tests", args={"path": module}),
            ],
        )
    return Message.text_message(f"task {task} done: {module} reviewed, its tests pass.", role="assistant")


def build(model: ScriptedClient) -> tuple[StateGraph, TokenBudgetContextManager[AgentState]]:
    tools = ToolNode([read_file, run_tests])
    manager: TokenBudgetContextManager[AgentState] = TokenBudgetContextManager(
        max_tokens=6000,
        reserve_tokens=1000,
        high_watermark=0.9,
        low_watermark=0.6,
        summarizer=ExtractiveSummarizer(),
        # the agent adds these to every request, so the budget must count them too
        system_prompt=SYSTEM_PROMPT,
        tools=tools.tool_specs(),
        keep_tool_results=1,
    )
    graph = StateGraph(context_manager=manager)
    graph.add_node("MAIN", Agent(client=model, system_prompt=SYSTEM_PROMPT, tool_node=tools, trim_context=True))
    graph.add_node("TOOL", tools)
    graph.add_conditional_edges(
        "MAIN", lambda s: "TOOL" if s.context[-1].tool_call_blocks() else END, {"TOOL": "TOOL", END: END}
    )
    graph.add_edge("TOOL", "MAIN")
    graph.set_entry_point("MAIN")
    return graph, manager


def metrics_row(label: str, m: TrimMetrics) -> str:
    stable = "-" if m.prefix_stable is None else ("yes" if m.prefix_stable else "NO")
    return (
        f"{label:>8}  {m.messages_before:3d} -> {m.messages_after:3d} msgs  "
        f"{m.tokens_before:5d} -> {m.tokens_after:5d} tokens  cleared {m.tool_results_cleared}  "
        f"summarized {m.summaries_made}  prefix stable {stable}"
    )


def main(turns: int, db: Path) -> None:
    model_calls: list[TrimMetrics] = []
    pointers: list[Message] = []
    manager_ref: list[TokenBudgetContextManager[AgentState]] = []

    def model_with_metrics(request: LLMRequest) -> Message:
        # the Agent trims right before it calls the model, so last_metrics describes this very prompt
        last = manager_ref[0].last_metrics
        assert last is not None
        model_calls.append(last)
        print(metrics_row(f"call {len(model_calls)}", last))
        problems = validate(request.messages, "anthropic")
        assert not problems, problems
        pointers.extend(m for m in request.messages if is_offloaded(m))
        return scripted_model(request)

    model = ScriptedClient(default=model_with_metrics)
    graph, manager = build(model)
    manager_ref.append(manager)
    checkpointer = SQLiteCheckpointer(db)
    app = graph.compile(checkpointer=checkpointer)
    print(f"budget {manager.budget} tokens: high watermark {manager.high_limit}, low watermark {manager.low_limit}")
    for task in range(turns):
        user = Message.text_message(f"task {task}: review src/pipeline/stage_{task}.py", message_id=f"user-{task}")
        result = app.invoke({"messages": [user]}, config={"thread_id": "budget-demo"})
        assert result["messages"][-1].text().startswith(f"task {task} done")
        # the graph trims once more when it persists the finished turn
        persisted = manager.last_metrics
        assert persisted is not None
        print(metrics_row("persist", persisted))

    judged = [m.prefix_stable for m in model_calls if m.prefix_stable is not None]
    totals = manager.metrics_total
    print(f"model calls: {len(model_calls)}, prefix stable: {sum(judged)}/{len(judged)}")
    print(f"largest prompt: {max(m.tokens_after for m in model_calls)} tokens (budget {manager.budget})")
    print(
        f"manager totals: {totals.calls} calls, {totals.tokens_saved} tokens freed, "
        f"{totals.tool_results_cleared} tool results cleared, {totals.summaries_made} summaries"
    )
    log = checkpointer.get_messages("budget-demo")
    stored = checkpointer.get_state("budget-demo")
    assert stored is not None
    summary = f"a {len(stored.context_summary)}-char summary" if stored.context_summary else "no summary"
    print(f"message log: {len(log)} messages; stored view: {len(stored.context)} messages and {summary}")
    if pointers:
        pointer = pointers[0]
        original = next(m for m in log if m.message_id == pointer.message_id)
        restored = manager.restore(pointer)
        print(f"pointer sent instead of a tool output: {pointer.text()[:90]}...")
        print(f"restored == logged original: {restored.model_dump() == original.model_dump()}")
    checkpointer.close()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=12, help="user tasks to run (each is two model calls)")
    parser.add_argument("--db", type=Path, default=None, help="SQLite file (default: a temporary one)")
    args = parser.parse_args()
    if args.db is not None:
        main(args.turns, args.db)
    else:
        with tempfile.TemporaryDirectory() as tmp:
            main(args.turns, Path(tmp) / "agent.db")
