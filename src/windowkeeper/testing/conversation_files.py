"""Small conversation files in every format `windowkeeper.io` reads, built from a generated session.

The reader's and the CLI's tests use them so that no test depends on ../shared/data: the tau-bench and SWE-agent
shapes are rebuilt here with the fields those tools write (SWE-agent's Python-literal ``tool_calls`` included).
The LangChain sample needs ``langchain-core``.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from windowkeeper.llm.formats import to_anthropic, to_gemini, to_openai_chat, to_responses_input
from windowkeeper.messages import Message
from windowkeeper.state import AgentState
from windowkeeper.testing.sessiongen import generate_session

TOOL_SCHEMA: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": "read_file",
        "description": "Read a file of the repository and return its text.",
        "parameters": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
    },
}


def session(steps: int = 12, seed: int = 1) -> list[Message]:
    """A short generated coding-agent session with tool calls."""
    return generate_session(steps, seed=seed).messages


def _openai_list(messages: list[Message]) -> Any:
    return to_openai_chat(messages, passthrough=False)


def _openai_body(messages: list[Message]) -> Any:
    return {"model": "gpt-4o", "messages": to_openai_chat(messages, passthrough=False), "tools": [TOOL_SCHEMA]}


def _responses(messages: list[Message]) -> Any:
    instructions, items = to_responses_input(messages, passthrough=False)
    function: dict[str, Any] = TOOL_SCHEMA["function"]
    tool = {"type": "function", **function}
    return {"model": "gpt-4o", "instructions": instructions, "input": items, "tools": [tool]}


def _anthropic_system(messages: list[Message]) -> Any:
    system, msgs = to_anthropic(messages, passthrough=False)
    return {"model": "claude-sonnet-4-5", "max_tokens": 1024, "system": system, "messages": msgs}


def _anthropic_bare(messages: list[Message]) -> Any:
    _system, msgs = to_anthropic([m for m in messages if m.role != "system"], passthrough=False)
    return {"model": "claude-sonnet-4-5", "max_tokens": 1024, "messages": msgs}


def _gemini(messages: list[Message]) -> Any:
    system, contents = to_gemini(messages, passthrough=False)
    return {"system_instruction": system, "contents": contents}


def _langchain(messages: list[Message]) -> Any:
    from langchain_core.messages import messages_to_dict

    from windowkeeper.llm.formats import to_langchain

    return messages_to_dict(to_langchain(messages, passthrough=False))


def _windowkeeper(messages: list[Message]) -> Any:
    return AgentState(context=messages, context_summary="Earlier: the user asked for a fix.").model_dump(mode="json")


def _tau_bench(messages: list[Message]) -> Any:
    traj = to_openai_chat(messages, passthrough=False)
    return [{"task_id": i, "trial": 0, "reward": 1.0, "info": {}, "traj": traj} for i in range(3)]


def swe_agent_function_calling(messages: list[Message]) -> Any:
    """SWE-agent with function calling: ``tool_calls`` and ``tool_call_ids`` stored as Python-literal strings."""
    history: list[dict[str, Any]] = []
    for entry in to_openai_chat(messages, passthrough=False):
        item: dict[str, Any] = {"role": entry["role"], "content": entry.get("content") or "", "agent": "main"}
        if entry["role"] == "assistant" and entry.get("tool_calls"):
            calls = list(entry.get("tool_calls", ()))
            item["tool_calls"] = repr(calls)
            item["thought"] = item["content"]
            item["action"] = next(c["function"]["name"] for c in calls if c["type"] == "function")
            item["message_type"] = "action"
        if entry["role"] == "tool":
            item["tool_call_ids"] = repr([entry["tool_call_id"]])
            item["message_type"] = "observation"
        history.append(item)
    return {"environment": "swe_main", "trajectory": [], "history": history, "info": {"exit_status": "submitted"}}


def swe_agent_thought_action(messages: list[Message]) -> Any:
    """SWE-agent without function calling: plain turns with 'thought' and 'action' keys, observations as user."""
    history: list[dict[str, Any]] = [
        {"role": "system", "content": "SETTING: you are an autonomous programmer.", "agent": "primary"},
        {"role": "user", "content": "ISSUE: division by zero in calc.py", "agent": "primary"},
    ]
    trajectory = []
    for step in range(3):
        thought = f"Step {step}: look at calc.py around line {10 * step}."
        action = f"open calc.py {10 * step}"
        history.append(
            {
                "role": "assistant",
                "content": f"{thought}\n```\n{action}\n```",
                "thought": thought,
                "action": action,
                "agent": "primary",
            }
        )
        observation = f"[File: calc.py (40 lines total)]\n{10 * step}: return a / b"
        history.append({"role": "user", "content": observation, "agent": "primary"})
        trajectory.append({"action": action, "observation": observation, "response": thought, "thought": thought})
    return {"environment": "swe_main", "trajectory": trajectory, "history": history, "info": {}}


SESSION_ID = "5e1b2c3d-0f4a-4b6c-9d8e-7f6a5b4c3d2e"
_PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="


def _stamp(step: int) -> str:
    return f"2025-09-01T10:{step // 60 % 60:02d}:{step % 60:02d}.{step % 1000:03d}Z"


def _jsonl(events: list[dict[str, Any]]) -> str:
    return "\n".join(json.dumps(e, ensure_ascii=False, separators=(",", ":")) for e in events) + "\n"


def claude_code_events(messages: list[Message]) -> list[dict[str, Any]]:
    """A coding agent's session log in the shape Claude Code writes it: one event per line, an assistant reply
    split one content block per line under one ``message.id`` (thinking signed), each tool result its own user
    line with ``toolUseResult``, an image in the first prompt, and the events that are not conversation (a
    ``summary`` title, ``file-history-snapshot`` and ``system`` lines)."""
    _system, typed_turns = to_anthropic([m for m in messages if m.role != "system"], passthrough=False)
    turns: list[Any] = list(typed_turns)
    envelope = {
        "isSidechain": False,
        "userType": "external",
        "cwd": "/home/dev/billing",
        "sessionId": SESSION_ID,
        "version": "1.0.98",
        "gitBranch": "main",
    }
    events: list[dict[str, Any]] = [{"type": "summary", "summary": "Fix apply_requests", "leafUuid": "u-0000"}]
    parent: str | None = None
    step = 0

    def add(kind: str, message: dict[str, Any], **extra: Any) -> None:
        nonlocal parent, step
        step += 1
        uid = f"{kind[0]}-{step:04d}-4c1e-8a7b-{step:012d}"
        events.append(
            {
                "parentUuid": parent,
                **envelope,
                "type": kind,
                "message": message,
                "uuid": uid,
                "timestamp": _stamp(step),
                **extra,
            }
        )
        parent = uid

    for number, turn in enumerate(turns):
        content = turn["content"]
        blocks: list[Any] = [{"type": "text", "text": content}] if isinstance(content, str) else list(content)
        if turn["role"] == "assistant":
            api_id = f"msg_01{number:022d}"
            for block in blocks:
                if block.get("type") == "thinking":
                    block = {**block, "signature": f"EqQBCkYIBxgCKkA{number:08d}"}
                message = {
                    "id": api_id,
                    "type": "message",
                    "role": "assistant",
                    "model": "claude-sonnet-4-20250514",
                    "content": [block],
                    "stop_reason": None,
                    "stop_sequence": None,
                    "usage": {
                        "input_tokens": 4,
                        "cache_creation_input_tokens": 0,
                        "cache_read_input_tokens": 1200,
                        "output_tokens": 12,
                        "service_tier": "standard",
                    },
                }
                add("assistant", message, requestId=f"req_011C{number:020d}")
            continue
        results = [b for b in blocks if b.get("type") == "tool_result"]
        for result in results:
            text = result.get("content") if isinstance(result.get("content"), str) else ""
            add(
                "user",
                {"role": "user", "content": [result]},
                toolUseResult={"stdout": text, "stderr": "", "interrupted": False, "isImage": False},
            )
        rest = [b for b in blocks if b.get("type") != "tool_result"]
        if rest:
            events.append(
                {
                    "type": "file-history-snapshot",
                    "messageId": f"snap-{number}",
                    "snapshot": {"messageId": f"snap-{number}", "trackedFileBackups": {}, "timestamp": _stamp(step)},
                    "isSnapshotUpdate": False,
                }
            )
            if number == 0:
                rest = [*rest, {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": _PNG}}]
            add("user", {"role": "user", "content": rest if len(rest) > 1 else rest[0]["text"]})
    events.append(
        {
            "parentUuid": parent,
            **envelope,
            "type": "system",
            "subtype": "informational",
            "content": "Session resumed",
            "level": "info",
            "uuid": "s-9999",
            "timestamp": _stamp(step + 1),
        }
    )
    return events


def _claude_code(messages: list[Message]) -> str:
    return _jsonl(claude_code_events(messages))


def _item_text(item: Any) -> str:
    content = item["content"]
    return "".join(p.get("text", "") for p in content) if isinstance(content, list) else str(content)


def codex_rollout_events(messages: list[Message]) -> list[dict[str, Any]]:
    """A Responses-family rollout in the shape Codex CLI writes it: ``session_meta`` first, a ``turn_context``
    and an ``event_msg`` echo per user turn, ``response_item`` lines for every message, reasoning item (summary
    and encrypted content), function call and output; every third call a ``custom_tool_call`` (apply_patch) and
    one ``local_shell_call``; an image in the first prompt and ``token_count`` events."""
    instructions, typed_items = to_responses_input(messages, passthrough=False)
    items: list[Any] = list(typed_items)
    events: list[dict[str, Any]] = [
        {
            "timestamp": _stamp(0),
            "type": "session_meta",
            "payload": {
                "id": SESSION_ID,
                "timestamp": _stamp(0),
                "cwd": "/home/dev/billing",
                "originator": "codex_cli_rs",
                "cli_version": "0.36.0",
                "instructions": instructions,
                "git": {
                    "commit_hash": "3f2a1b0",
                    "branch": "main",
                    "repository_url": "git@example.com:dev/billing.git",
                },
            },
        },
    ]
    custom: set[str] = set()
    shell: set[str] = set()
    calls = 0
    first_user = True
    for step, item in enumerate(items, start=1):
        stamp = _stamp(step)
        kind = item.get("type")
        payload: dict[str, Any] = dict(item)
        if kind == "message" and item.get("role") == "user":
            text = _item_text(item)
            events.append(
                {
                    "timestamp": stamp,
                    "type": "turn_context",
                    "payload": {
                        "cwd": "/home/dev/billing",
                        "approval_policy": "on-request",
                        "sandbox_policy": {"mode": "workspace-write"},
                        "model": "gpt-5-codex",
                        "effort": "medium",
                        "summary": "auto",
                    },
                }
            )
            parts = [{"type": "input_text", "text": text}]
            if first_user:
                parts.append({"type": "input_image", "image_url": f"data:image/png;base64,{_PNG}"})
                first_user = False
            payload = {"type": "message", "role": "user", "content": parts}
            events.append({"timestamp": stamp, "type": "response_item", "payload": payload})
            events.append(
                {
                    "timestamp": stamp,
                    "type": "event_msg",
                    "payload": {"type": "user_message", "message": text, "images": []},
                }
            )
            continue
        if kind == "reasoning":
            summary = item.get("summary") or []
            payload = {
                "type": "reasoning",
                "summary": summary,
                "content": None,
                "encrypted_content": f"gAAAAABo{step:040d}",
            }
        elif kind == "function_call":
            calls += 1
            if calls % 3 == 0:
                custom.add(item["call_id"])
                patch = (
                    "*** Begin Patch\n*** Update File: src/billing/currency.py\n"
                    + item["arguments"]
                    + "\n*** End Patch"
                )
                payload = {
                    "type": "custom_tool_call",
                    "status": "completed",
                    "call_id": item["call_id"],
                    "name": "apply_patch",
                    "input": patch,
                }
            elif calls == 2:
                shell.add(item["call_id"])
                payload = {
                    "type": "local_shell_call",
                    "call_id": item["call_id"],
                    "status": "completed",
                    "action": {
                        "type": "exec",
                        "command": ["bash", "-lc", "pytest -q"],
                        "working_directory": "/home/dev/billing",
                        "timeout_ms": 120000,
                    },
                }
            else:
                payload = {
                    "type": "function_call",
                    "name": item["name"],
                    "arguments": item["arguments"],
                    "call_id": item["call_id"],
                }
        elif kind == "function_call_output":
            output = item["output"] if isinstance(item["output"], str) else json.dumps(item["output"])
            wrapped = json.dumps({"output": output, "metadata": {"exit_code": 0, "duration_seconds": 0.2}})
            kind_out = "custom_tool_call_output" if item["call_id"] in custom else "function_call_output"
            payload = {"type": kind_out, "call_id": item["call_id"], "output": wrapped}
        events.append({"timestamp": stamp, "type": "response_item", "payload": payload})
        if kind == "message" and item.get("role") == "assistant":
            text = _item_text(item)
            events.append(
                {"timestamp": stamp, "type": "event_msg", "payload": {"type": "agent_message", "message": text}}
            )
            events.append(
                {
                    "timestamp": stamp,
                    "type": "event_msg",
                    "payload": {
                        "type": "token_count",
                        "info": {"total_token_usage": {"input_tokens": 1200 * step, "output_tokens": 40}},
                        "rate_limits": None,
                    },
                }
            )
    return events


def _codex(messages: list[Message]) -> str:
    return _jsonl(codex_rollout_events(messages))


def _langchain_model_dump(messages: list[Message]) -> Any:
    from windowkeeper.llm.formats import to_langchain

    return [m.model_dump() for m in to_langchain(messages, passthrough=False)]


def _jsonl_messages(messages: list[Message]) -> str:
    return "\n".join(json.dumps(m) for m in to_openai_chat(messages, passthrough=False)) + "\n"


def _jsonl_conversations(messages: list[Message]) -> str:
    body = {"model": "gpt-4o", "messages": to_openai_chat(messages, passthrough=False)}
    return "\n".join(json.dumps(body) for _ in range(2)) + "\n"


BUILDERS: dict[str, tuple[str, str, Callable[[list[Message]], Any]]] = {
    # case: (file name, detected format, builder)
    "openai-list": ("chat.json", "openai", _openai_list),
    "openai-request": ("request.json", "openai", _openai_body),
    "responses": ("responses.json", "responses", _responses),
    "anthropic-system": ("anthropic.json", "anthropic", _anthropic_system),
    "anthropic-no-system": ("anthropic_bare.json", "anthropic", _anthropic_bare),
    "gemini": ("gemini.json", "gemini", _gemini),
    "langchain": ("langchain.json", "langchain", _langchain),
    "langchain-model-dump": ("lc_dump.json", "langchain", _langchain_model_dump),
    "claude-code": ("session.jsonl", "claude-code", _claude_code),
    "codex": ("rollout-2025-09-01T10-00-00.jsonl", "codex", _codex),
    "windowkeeper": ("state.json", "windowkeeper", _windowkeeper),
    "tau-bench": ("tau.json", "tau-bench", _tau_bench),
    "swe-agent-function-calling": ("fc.traj", "swe-agent", swe_agent_function_calling),
    "swe-agent-thought-action": ("ta.traj", "swe-agent", swe_agent_thought_action),
    "jsonl-messages": ("messages.jsonl", "openai", _jsonl_messages),
    "jsonl-conversations": ("conversations.jsonl", "openai", _jsonl_conversations),
}


def write_sample(directory: Path, case: str, messages: list[Message] | None = None) -> tuple[Path, str]:
    """Write the ``case`` sample into ``directory``; the path and the format the reader should detect."""
    name, fmt, build = BUILDERS[case]
    data = build(messages if messages is not None else session())
    path = directory / name
    path.write_text(data if isinstance(data, str) else json.dumps(data, ensure_ascii=False), encoding="utf-8")
    return path, fmt
