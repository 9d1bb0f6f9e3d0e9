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

from windowkeeper.evaluation.sessiongen import generate_session
from windowkeeper.llm.formats import to_anthropic, to_gemini, to_openai_chat, to_responses_input
from windowkeeper.messages import Message
from windowkeeper.state import AgentState

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
    return to_openai_chat(messages)


def _openai_body(messages: list[Message]) -> Any:
    return {"model": "gpt-4o", "messages": to_openai_chat(messages), "tools": [TOOL_SCHEMA]}


def _responses(messages: list[Message]) -> Any:
    instructions, items = to_responses_input(messages)
    function: dict[str, Any] = TOOL_SCHEMA["function"]
    tool = {"type": "function", **function}
    return {"model": "gpt-4o", "instructions": instructions, "input": items, "tools": [tool]}


def _anthropic_system(messages: list[Message]) -> Any:
    system, msgs = to_anthropic(messages)
    return {"model": "claude-sonnet-4-5", "max_tokens": 1024, "system": system, "messages": msgs}


def _anthropic_bare(messages: list[Message]) -> Any:
    _system, msgs = to_anthropic([m for m in messages if m.role != "system"])
    return {"model": "claude-sonnet-4-5", "max_tokens": 1024, "messages": msgs}


def _gemini(messages: list[Message]) -> Any:
    system, contents = to_gemini(messages)
    return {"system_instruction": system, "contents": contents}


def _langchain(messages: list[Message]) -> Any:
    from langchain_core.messages import messages_to_dict

    from windowkeeper.llm.formats import to_langchain

    return messages_to_dict(to_langchain(messages))


def _windowkeeper(messages: list[Message]) -> Any:
    return AgentState(context=messages, context_summary="Earlier: the user asked for a fix.").model_dump(mode="json")


def _tau_bench(messages: list[Message]) -> Any:
    traj = to_openai_chat(messages)
    return [{"task_id": i, "trial": 0, "reward": 1.0, "info": {}, "traj": traj} for i in range(3)]


def swe_agent_function_calling(messages: list[Message]) -> Any:
    """SWE-agent with function calling: ``tool_calls`` and ``tool_call_ids`` stored as Python-literal strings."""
    history: list[dict[str, Any]] = []
    for entry in to_openai_chat(messages):
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


def _jsonl_messages(messages: list[Message]) -> str:
    return "\n".join(json.dumps(m) for m in to_openai_chat(messages)) + "\n"


def _jsonl_conversations(messages: list[Message]) -> str:
    body = {"model": "gpt-4o", "messages": to_openai_chat(messages)}
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


__all__ = [
    "BUILDERS",
    "TOOL_SCHEMA",
    "session",
    "swe_agent_function_calling",
    "swe_agent_thought_action",
    "write_sample",
]
