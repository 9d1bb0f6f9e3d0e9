"""The public surface: every exported name resolves, and the reference documentation's import paths work."""

from __future__ import annotations

import importlib

import windowkeeper

SUBPACKAGES = ("context", "graph", "memory", "storage", "summarize", "llm", "tokens", "units")


def test_every_exported_name_resolves() -> None:
    missing = [name for name in windowkeeper.__all__ if not hasattr(windowkeeper, name)]
    assert missing == []
    assert sorted(set(windowkeeper.__all__)) == sorted(windowkeeper.__all__)


def test_main_classes_of_each_layer_are_exported_at_the_top() -> None:
    expected = {
        "context": {
            "BaseContextManager",
            "MessageContextManager",
            "SummaryContextManager",
            "TokenBudgetContextManager",
        },
        "graph": {"StateGraph", "Agent", "ToolNode", "SQLiteCheckpointer", "PostgresCheckpointer", "RedisCheckpointer"},
        "memory": {
            "BaseMemory",
            "InMemoryMemory",
            "SQLiteMemory",
            "PostgresMemory",
            "RedisMemory",
            "StructuredSummary",
        },
        "storage": {"SessionStore", "SQLiteStore", "PostgresStore", "RedisStore", "open_store"},
        "summarize": {"ExtractiveSummarizer", "LLMSummarizer", "as_summarizer"},
        "tokens": {"TiktokenCounter", "ApproxCounter", "CalibratedCounter", "default_counter"},
        "units": {"group_units", "validate"},
    }
    for module_name, names in expected.items():
        module = importlib.import_module(f"windowkeeper.{module_name}")
        for name in names:
            assert getattr(windowkeeper, name) is getattr(module, name), (module_name, name)


def test_reference_import_paths() -> None:
    from windowkeeper.core.graph import END as graph_end
    from windowkeeper.core.graph import Agent, StateGraph
    from windowkeeper.core.state import (
        AgentState,
        BaseContextManager,
        ErrorBlock,
        ImageBlock,
        MediaRef,
        Message,
        MessageContextManager,
        SummaryContextManager,
        TokenBudgetContextManager,
        ToolResultBlock,
    )
    from windowkeeper.core.state.message_block import AnnotationBlock, ReasoningBlock
    from windowkeeper.core.state.tool_result import ToolResult
    from windowkeeper.utils.constants import END, START

    assert END == graph_end == windowkeeper.END and START == windowkeeper.START
    assert Agent is windowkeeper.Agent and StateGraph is windowkeeper.StateGraph
    assert ToolResult is windowkeeper.ToolResult and AnnotationBlock is windowkeeper.AnnotationBlock
    for obj in (
        AgentState,
        BaseContextManager,
        ErrorBlock,
        ImageBlock,
        MediaRef,
        Message,
        MessageContextManager,
        SummaryContextManager,
        TokenBudgetContextManager,
        ToolResultBlock,
        ReasoningBlock,
    ):
        assert getattr(windowkeeper, obj.__name__) is obj
