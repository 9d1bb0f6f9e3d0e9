"""The public surface: exactly the documented names, every exported name resolves, the reference paths work.

The privacy line: a module is public when the docs name its import path; its ``__all__`` is its public names.
Every other module is internal and declares no ``__all__`` (a module whose path has a ``_x`` part is private by
its name). `PUBLIC_SURFACE` lists every public module and name; adding a public name is a change of this list and
of the docs, never a side effect of a refactor.
"""

from __future__ import annotations

import ast
import importlib
import re
from pathlib import Path

import windowkeeper
from ast_parse import parse

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src"
SUBPACKAGES = ("context", "graph", "memory", "storage", "summarize", "llm", "tokens", "units")

PUBLIC_SURFACE: dict[str, frozenset[str]] = {
    "windowkeeper": frozenset(
        {
            "Agent",
            "AgentState",
            "AnnotationBlock",
            "AnnotationRef",
            "ApproxCounter",
            "AssembledPrompt",
            "AudioBlock",
            "BaseCheckpointer",
            "BaseContextManager",
            "BaseMemory",
            "CalibratedCounter",
            "Checkpointer",
            "CompiledGraph",
            "ConfigurationError",
            "ConflictError",
            "ContentBlock",
            "ContextReport",
            "ContextZones",
            "DataBlock",
            "DocumentBlock",
            "END",
            "ErrorBlock",
            "ExecMeta",
            "ExecutionStatus",
            "ExtractiveSummarizer",
            "FitResult",
            "FormatError",
            "GraphCompileError",
            "GraphError",
            "GraphEvent",
            "ImageBlock",
            "InMemoryCheckpointer",
            "InMemoryMemory",
            "InMemoryStore",
            "LLMClient",
            "LLMRequest",
            "LLMResponse",
            "LLMSummarizer",
            "MediaRef",
            "MemoryContextManager",
            "Message",
            "MessageContextManager",
            "MetricsTotals",
            "MissingDependencyError",
            "OffloadStore",
            "PostgresCheckpointer",
            "PostgresMemory",
            "PostgresStore",
            "Problem",
            "ProviderError",
            "ReasoningBlock",
            "Record",
            "RecordNotFoundError",
            "RecursionLimitError",
            "RedisCheckpointer",
            "RedisMemory",
            "RedisStore",
            "SCRATCHPAD_HEADER",
            "SQLiteCheckpointer",
            "SQLiteMemory",
            "SQLiteStore",
            "START",
            "SUMMARY_HEADER",
            "ScriptedClient",
            "SessionStore",
            "StateGraph",
            "StorageError",
            "StructuredLLMSummarizer",
            "StructuredSummary",
            "Summarizer",
            "SummaryContextManager",
            "SummaryRequest",
            "TDAIMemory",
            "TextBlock",
            "Thresholds",
            "TiktokenCounter",
            "TokenBudgetContextManager",
            "TokenCounter",
            "TokenUsages",
            "TokenizerDataError",
            "ToolCallBlock",
            "ToolNode",
            "ToolResult",
            "ToolResultBlock",
            "TrimMetrics",
            "Unit",
            "VideoBlock",
            "Window",
            "WindowkeeperError",
            "__version__",
            "add_messages",
            "as_summarizer",
            "assemble",
            "build_zones",
            "count_request",
            "counter_for_model",
            "create_client",
            "default_counter",
            "detect_provider",
            "flatten",
            "from_anthropic",
            "from_gemini",
            "from_langchain",
            "from_openai_chat",
            "from_responses_input",
            "get_summarizer",
            "group_units",
            "is_recall",
            "is_valid",
            "open_store",
            "render_transcript",
            "render_zones",
            "scratchpad_tool",
            "sliding_window",
            "to_anthropic",
            "to_gemini",
            "to_langchain",
            "to_openai_chat",
            "to_responses_input",
            "validate",
        }
    ),
    "windowkeeper.boundary": frozenset(
        {
            "MAX_DOC_DEPTH",
            "MAX_JSON_DEPTH",
            "REPLACEMENT_CHARACTER",
            "clean_id",
            "clean_json",
            "clean_text",
            "has_lone_surrogate",
            "json_depth",
            "json_problem",
        }
    ),
    "windowkeeper.cli": frozenset({"CLI_HINT", "main"}),
    "windowkeeper.context": frozenset(
        {
            "BaseContextManager",
            "ContextZones",
            "MessageContextManager",
            "MetricsTotals",
            "OffloadStore",
            "SummaryContextManager",
            "SummaryRequest",
            "TokenBudgetContextManager",
            "TrimMetrics",
            "build_zones",
            "estimate_tokens",
            "render_zones",
            "sliding_window",
        }
    ),
    "windowkeeper.core.graph": frozenset(
        {
            "Agent",
            "BaseCheckpointer",
            "Checkpointer",
            "CompiledGraph",
            "END",
            "GraphEvent",
            "InMemoryCheckpointer",
            "PostgresCheckpointer",
            "RedisCheckpointer",
            "SQLiteCheckpointer",
            "START",
            "StateGraph",
            "ToolNode",
        }
    ),
    "windowkeeper.core.state": frozenset(
        {
            "AgentState",
            "AnnotationBlock",
            "AnnotationRef",
            "AudioBlock",
            "BaseContextManager",
            "ContentBlock",
            "DataBlock",
            "DocumentBlock",
            "ErrorBlock",
            "ExecMeta",
            "ExecutionStatus",
            "ImageBlock",
            "MEDIA_BLOCK_TYPES",
            "MediaRef",
            "Message",
            "MessageContextManager",
            "ReasoningBlock",
            "SummaryContextManager",
            "TextBlock",
            "TokenBudgetContextManager",
            "TokenUsages",
            "ToolCallBlock",
            "ToolResult",
            "ToolResultBlock",
            "VideoBlock",
            "add_messages",
            "block_from_stored",
            "make_block",
            "tool_output_text",
        }
    ),
    "windowkeeper.core.state.message_block": frozenset(
        {
            "AnnotationBlock",
            "AnnotationRef",
            "AudioBlock",
            "ContentBlock",
            "DataBlock",
            "DocumentBlock",
            "ErrorBlock",
            "ImageBlock",
            "MEDIA_BLOCK_TYPES",
            "MediaRef",
            "ReasoningBlock",
            "TextBlock",
            "ToolCallBlock",
            "ToolResultBlock",
            "VideoBlock",
            "block_from_stored",
            "make_block",
            "tool_output_text",
        }
    ),
    "windowkeeper.core.state.tool_result": frozenset({"ToolResult"}),
    "windowkeeper.errors": frozenset(
        {
            "ConfigurationError",
            "FormatError",
            "GraphCompileError",
            "GraphError",
            "MissingDependencyError",
            "ProviderError",
            "RecursionLimitError",
            "StorageError",
            "WindowkeeperError",
        }
    ),
    "windowkeeper.graph": frozenset(
        {
            "Agent",
            "BaseCheckpointer",
            "Checkpointer",
            "CompiledGraph",
            "DEFAULT_RECURSION_LIMIT",
            "END",
            "GraphEvent",
            "InMemoryCheckpointer",
            "NO_MANAGER_WARNING",
            "PostgresCheckpointer",
            "RedisCheckpointer",
            "SQLiteCheckpointer",
            "START",
            "StateGraph",
            "ToolNode",
            "parse_docstring",
            "tool_signature",
        }
    ),
    "windowkeeper.integrations": frozenset({"FitResult", "Window"}),
    "windowkeeper.integrations.langchain": frozenset({"WindowkeeperMiddleware"}),
    "windowkeeper.integrations.langgraph": frozenset({"WindowkeeperHook", "pre_model_hook"}),
    "windowkeeper.integrations.openai_agents": frozenset(
        {
            "ITEMS_NAMESPACE",
            "POPS_NAMESPACE",
            "WindowkeeperInputFilter",
            "WindowkeeperSession",
            "agent_tool_schemas",
            "input_filter",
            "latest_items",
        }
    ),
    "windowkeeper.io": frozenset(
        {
            "Conversation",
            "ConversationFileError",
            "DEFAULT_MAX_BYTES",
            "DEFAULT_TIMEOUT",
            "InputFormat",
            "MAX_DEPTH",
            "detect_format",
            "parse_conversations",
            "read_collection",
            "read_conversation",
            "read_conversations",
            "read_text",
        }
    ),
    "windowkeeper.llm": frozenset(
        {
            "LLMClient",
            "LLMRequest",
            "LLMResponse",
            "PROVIDERS",
            "ScriptedClient",
            "ScriptedReply",
            "complete",
            "create_client",
            "detect_provider",
            "normalize_provider",
        }
    ),
    "windowkeeper.llm.formats": frozenset(
        {
            "AnthropicMessage",
            "AnthropicSystem",
            "AnthropicTranscriptMessage",
            "FORMATS",
            "Format",
            "GeminiContent",
            "GeminiSDKContent",
            "GeminiSystemInstruction",
            "OpenAIChatMessage",
            "ResponsesItem",
            "anthropic_blocks_to_message",
            "anthropic_message_to_messages",
            "canonical",
            "equivalent",
            "first_difference",
            "from_anthropic",
            "from_gemini",
            "from_langchain",
            "from_openai_chat",
            "from_responses_input",
            "gemini_content_to_messages",
            "langchain_message_to_message",
            "message_to_openai_chat",
            "message_to_responses_items",
            "openai_chat_message_to_message",
            "to_anthropic",
            "to_gemini",
            "to_langchain",
            "to_openai_chat",
            "to_responses_input",
        }
    ),
    "windowkeeper.llm.formats.registry": frozenset(
        {"ProviderFormat", "content_part_types", "convert", "formats", "get_format", "guess_format", "register_format"}
    ),
    "windowkeeper.llm.formats.wire": frozenset(
        {
            "AnthropicBlock",
            "AnthropicImageType",
            "AnthropicMessage",
            "AnthropicSystem",
            "AnthropicTextBlock",
            "AnthropicTranscriptMessage",
            "AnthropicUnsignedThinkingBlock",
            "AudioFormat",
            "GeminiBlob",
            "GeminiContent",
            "GeminiFileData",
            "GeminiFunctionCall",
            "GeminiFunctionResponse",
            "GeminiPart",
            "GeminiSDKContent",
            "GeminiSDKPart",
            "GeminiSystemInstruction",
            "OpenAIChatAssistantMessage",
            "OpenAIChatDeveloperMessage",
            "OpenAIChatFunctionMessage",
            "OpenAIChatMessage",
            "OpenAIChatSystemMessage",
            "OpenAIChatTextPart",
            "OpenAIChatToolMessage",
            "OpenAIChatUserMessage",
            "OpenAIChatUserPart",
            "ResponsesAssistantMessage",
            "ResponsesApplyPatchCallOutput",
            "ResponsesAudio",
            "ResponsesComputerCallOutput",
            "ResponsesCustomToolCall",
            "ResponsesCustomToolCallOutput",
            "ResponsesFunctionCall",
            "ResponsesFunctionCallOutput",
            "ResponsesInputAudio",
            "ResponsesInputFile",
            "ResponsesInputImage",
            "ResponsesInputMessage",
            "ResponsesInputPart",
            "ResponsesInputText",
            "ResponsesItem",
            "ResponsesLocalShellCallOutput",
            "ResponsesOutputText",
            "ResponsesScreenshot",
            "ResponsesReasoning",
            "ResponsesReasoningText",
            "ResponsesShellCallOutput",
            "ResponsesShellOutput",
            "ResponsesSummaryText",
        }
    ),
    "windowkeeper.memory": frozenset(
        {
            "BaseMemory",
            "COMPACTED_PREFIX",
            "COMPACTION_KEY",
            "ContextReport",
            "DEFAULT_COMPACTION_TARGET",
            "DEFAULT_THRESHOLDS",
            "EventDict",
            "EventList",
            "IMemoryEvent",
            "InMemoryMemory",
            "MemoryContextManager",
            "PostgresMemory",
            "RedisMemory",
            "SQLiteMemory",
            "SUMMARY_MARK",
            "StructuredLLMSummarizer",
            "StructuredSummary",
            "TDAIMemory",
            "Thresholds",
            "TimeRange",
            "make_gist",
            "resolve_thresholds",
        }
    ),
    "windowkeeper.memory.stored": frozenset({"StoredDocs", "check_doc", "doc_problem"}),
    "windowkeeper.prompt": frozenset(
        {
            "AssembledPrompt",
            "MARK_KEY",
            "RECALL_MARK",
            "SCRATCHPAD_HEADER",
            "SECTION_SEPARATOR",
            "SUMMARY_HEADER",
            "SystemCost",
            "ZONES",
            "assemble",
            "assemble_messages",
            "count_request",
            "is_recall",
            "join_sections",
            "scratchpad_section",
            "stable_id",
            "summary_section",
            "summary_tokens",
            "system_costs",
            "system_message",
            "system_message_text",
            "system_text_tokens",
            "tool_schema_tokens",
        }
    ),
    "windowkeeper.providers": frozenset(
        {"CanonicalProvider", "PROVIDERS", "PROVIDER_ALIASES", "ProviderName", "normalize_provider"}
    ),
    "windowkeeper.serve": frozenset({"ServeConfig", "create_app", "load_config", "run"}),
    "windowkeeper.storage": frozenset(
        {
            "ConflictError",
            "DEFAULT_POSTGRES_URL",
            "DEFAULT_REDIS_URL",
            "InMemoryStore",
            "PostgresStore",
            "Record",
            "RecordNotFoundError",
            "RecordUpdate",
            "RedisStore",
            "SQLiteStore",
            "SessionStore",
            "open_store",
            "postgres_url",
            "redis_url",
        }
    ),
    "windowkeeper.storage.check": frozenset({"Finding", "check_store", "row_problem"}),
    "windowkeeper.storage.url": frozenset(
        {
            "DEFAULT_POSTGRES_URL",
            "DEFAULT_REDIS_URL",
            "POSTGRES_ENV",
            "REDIS_ENV",
            "connection_string_problem",
            "is_libpq_dsn",
            "mask_url",
            "open_store",
            "postgres_target",
            "postgres_url",
            "redis_target",
            "redis_url",
            "resolve_prefix",
            "safe_url",
            "split_prefix",
            "sqlite_target",
            "store_kind",
            "with_prefix",
        }
    ),
    "windowkeeper.summarize": frozenset(
        {
            "Attempt",
            "CallableSummarizer",
            "DEFAULT_SUMMARY_PROMPT",
            "ExtractiveSummarizer",
            "FAILURE_LOG",
            "LLMSummarizer",
            "MethodSummarizer",
            "OFFLINE_NAMES",
            "Summarizer",
            "as_summarizer",
            "build_summary_prompt",
            "call_summarizer",
            "get_summarizer",
            "guarded_call",
            "render_message",
            "render_transcript",
        }
    ),
    "windowkeeper.summarize.failsafe": frozenset(
        {
            "Attempt",
            "CONDENSE_DOCUMENT_ID",
            "FAILURE_LOG",
            "SummarizerTimeoutError",
            "call_summarizer",
            "check_timeout",
            "condense_input",
            "guarded_call",
        }
    ),
    "windowkeeper.testing.conformance": frozenset(
        {
            "Backend",
            "BackendFactory",
            "BackendInfo",
            "all_block_messages",
            "backends",
            "cases",
            "conformance_spec",
            "full_media_ref",
            "make_backend",
            "register_backend",
            "run_all",
            "run_spec",
            "specs",
        }
    ),
    "windowkeeper.testing.fake_servers": frozenset(
        {
            "FakeAnthropicServer",
            "FakeGeminiServer",
            "FakeOpenAIServer",
            "FakeProviderServer",
            "FakeReply",
            "FakeToolCall",
            "FakeUsage",
            "RecordedRequest",
        }
    ),
    "windowkeeper.testing.sessiongen": frozenset(
        {
            "DEFAULT_START_TIME",
            "Fact",
            "FactKind",
            "GeneratedSession",
            "Language",
            "generate_session",
            "generate_session_for_tokens",
            "iter_steps",
        }
    ),
    "windowkeeper.tokenizing.media": frozenset(
        {
            "AUDIO_TOKENS_PER_SECOND",
            "DOCUMENT_TOKENS_PER_PAGE",
            "ENCRYPTED_CHARS_PER_TOKEN",
            "IMAGE_DEFAULT_TOKENS",
            "MediaBlock",
            "VIDEO_TOKENS_PER_SECOND",
            "audio_tokens",
            "base64_decoded_size",
            "data_tokens",
            "document_tokens",
            "encrypted_tokens",
            "image_tokens",
            "image_tokens_for_size",
            "inline_image_size",
            "media_size_bytes",
            "media_tokens",
            "video_tokens",
        }
    ),
    "windowkeeper.tokens": frozenset(
        {
            "ApproxCounter",
            "CachingCounter",
            "CalibratedCounter",
            "MEMO_ENTRY_BYTES",
            "MESSAGE_OVERHEAD",
            "OFFLINE_ENCODINGS",
            "REPLY_PRIMING",
            "ROLE_TOKENS",
            "RunningCount",
            "TOOL_CALL_OVERHEAD",
            "TiktokenCounter",
            "TokenCounter",
            "TokenizerDataError",
            "base64_decoded_size",
            "counter_for_model",
            "counting_once",
            "default_counter",
            "encoding_name_for_model",
            "exact_counter",
            "get_offline_encoding",
            "image_tokens_for_size",
            "media_tokens",
            "message_cache_key",
            "tool_arguments_json",
        }
    ),
    "windowkeeper.tools": frozenset(
        {"DEFAULT_SCRATCHPAD_TOKENS", "RecallTool", "ScratchpadFullError", "recall_tool", "scratchpad_tool"}
    ),
    "windowkeeper.units": frozenset(
        {"PROVIDERS", "Problem", "Provider", "Unit", "UnitKind", "flatten", "group_units", "is_valid", "validate"}
    ),
    "windowkeeper.utils.constants": frozenset({"END", "START"}),
}


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


def _module_name(path: Path) -> str:
    parts = path.relative_to(SRC).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _declares_all(path: Path) -> bool:
    """Whether the module assigns ``__all__`` at its top level (read from the source: no import, no extras)."""
    tree = parse(path)
    for node in tree.body:
        if isinstance(node, ast.Assign):
            targets = node.targets
        elif isinstance(node, ast.AnnAssign):
            targets = [node.target]
        else:
            continue
        if any(isinstance(t, ast.Name) and t.id == "__all__" for t in targets):
            return True
    return False


def _is_private(module: str) -> bool:
    return any(part.startswith("_") for part in module.split(".")[1:])


def test_only_documented_modules_declare_public_names() -> None:
    declaring = {
        _module_name(path)
        for path in (SRC / "windowkeeper").rglob("*.py")
        if not _is_private(_module_name(path)) and _declares_all(path)
    }
    assert sorted(declaring - PUBLIC_SURFACE.keys()) == [], "internal modules must not declare __all__"
    assert sorted(PUBLIC_SURFACE.keys() - declaring) == [], "a public module lost its __all__"


def test_public_modules_export_exactly_the_listed_names() -> None:
    for module_name, names in PUBLIC_SURFACE.items():
        module = importlib.import_module(module_name)
        exported = list(module.__all__)
        assert len(exported) == len(set(exported)), (module_name, "duplicate names in __all__")
        assert sorted(set(exported) - names) == [], (module_name, "names not in the public surface")
        assert sorted(names - set(exported)) == [], (module_name, "public names missing from __all__")
        assert [name for name in exported if not hasattr(module, name)] == [], module_name


def test_every_public_module_path_is_named_in_the_docs() -> None:
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    # architecture.md is generated from the package tree and names every package, public or not
    text = "\n".join(page.read_text(encoding="utf-8") for page in pages if page.name != "architecture.md")
    unnamed = [m for m in PUBLIC_SURFACE if not re.search(re.escape(m) + r"(?!\w)", text)]
    assert unnamed == [], "document these import paths or make them internal"
