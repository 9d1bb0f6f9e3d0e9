"""Properties of the manager's plain view of client items and of putting the client's originals back."""

from __future__ import annotations

import copy
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from windowkeeper.integrations._formats import read_messages, write_messages
from windowkeeper.serve.projection import PLAIN, item_key, project, restore_originals

texts = st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)), min_size=1, max_size=12)
extras = st.dictionaries(st.sampled_from(["x_tag", "x_meta", "trace"]), st.integers() | texts, max_size=2)


@st.composite
def anthropic_items(draw: st.DrawFn) -> list[dict[str, Any]]:
    items = []
    for n in range(draw(st.integers(1, 6))):
        role = "user" if n % 2 == 0 else "assistant"
        blocks: list[dict[str, Any]] = [{"type": "text", "text": draw(texts)}]
        if draw(st.booleans()):
            blocks.append({"type": "x_future_block", "data": draw(extras)})
        items.append({"role": role, "content": blocks})
    return items


def _mark(items: list[dict[str, Any]], where: int) -> list[dict[str, Any]]:
    marked = copy.deepcopy(items)
    marked[where % len(marked)]["content"][0]["cache_control"] = {"type": "ephemeral"}
    return marked


@settings(max_examples=60, deadline=None)
@given(items=anthropic_items(), first=st.integers(0, 10), second=st.integers(0, 10))
def test_keys_ignore_where_the_cache_marks_are(items: list[dict[str, Any]], first: int, second: int) -> None:
    one = project("anthropic", _mark(items, first), None)
    two = project("anthropic", _mark(items, second), one)
    assert one.hashes == two.hashes and one.digests == two.digests
    # a one-text-block list and its string are the same item
    as_strings = [
        {**i, "content": i["content"][0]["text"]} if len(i["content"]) == 1 else i for i in copy.deepcopy(items)
    ]
    assert project("anthropic", as_strings, None).hashes == project("anthropic", items, None).hashes


@settings(max_examples=60, deadline=None)
@given(items=anthropic_items(), where=st.integers(0, 10), extra=extras)
def test_the_managers_unchanged_output_goes_back_as_the_clients_own_items(
    items: list[dict[str, Any]], where: int, extra: dict[str, Any]
) -> None:
    client = _mark(items, where)
    client[0] = {**client[0], **extra}
    cache = project("anthropic", client, None)
    written, _ = write_messages("anthropic", None, read_messages("anthropic", cache.plains))
    out, unchanged = restore_originals(list(written), client, cache)
    assert unchanged
    assert out == client
    assert all(a is b for a, b in zip(out, client, strict=True))


def test_unknown_items_and_blocks_become_counted_text() -> None:
    plain = PLAIN["openai_responses"]({"type": "web_search_call", "id": "ws_1", "status": "completed"})
    assert plain["type"] == "message" and plain["role"] == "assistant" and "web_search_call" in plain["content"]
    chat = PLAIN["openai_chat"]({"role": "user", "content": [{"type": "x_part", "v": 1}], "x_tag": 2})
    assert chat == {"role": "user", "content": '[unknown x_part] {"type":"x_part","v":1}'}
    assert item_key({"role": "user", "content": [{"type": "text", "text": "hi"}]}) == item_key(
        {"role": "user", "content": "hi"}
    )


@settings(max_examples=60, deadline=None)
@given(items=anthropic_items(), more=anthropic_items(), edit=st.integers(0, 20))
def test_the_incremental_projection_equals_a_fresh_one(
    items: list[dict[str, Any]], more: list[dict[str, Any]], edit: int
) -> None:
    """Continuing, shortening or editing the list: what `project` reuses never differs from projecting anew."""
    first = project("anthropic", items, None)
    grown = [*copy.deepcopy(items), *more]
    edited = copy.deepcopy(grown)
    edited[edit % len(edited)] = {"role": "user", "content": [{"type": "text", "text": "edited"}]}
    for following in (grown, grown[: max(1, len(items) - 1)], edited, _mark(grown, edit)):
        again, fresh = project("anthropic", following, first), project("anthropic", following, None)
        assert again.hashes == fresh.hashes and again.digests == fresh.digests and again.plains == fresh.plains
        lengths = range(len(following) + 1)
        assert [again.digest(n) for n in lengths] == [fresh.digest(n) for n in lengths]


def test_the_clients_system_blocks_are_its_own_object_when_nothing_was_added() -> None:
    """The Anthropic format passes a ``system`` of blocks through (the summary a block after them): the gateway
    sends the client's own value when the window added nothing, so the request keeps the client's bytes, and the
    window's blocks when it added the summary."""
    from windowkeeper.serve.projection import system_value

    blocks = [{"type": "text", "text": "Be brief.", "cache_control": {"type": "ephemeral"}}]
    assert system_value(blocks, [dict(blocks[0])], "Be brief.") is blocks
    summary = {"type": "text", "text": "Summary of the earlier conversation: ..."}
    assert system_value(blocks, [blocks[0], summary], "Be brief.") == [blocks[0], summary]
    assert system_value("Be brief.", "Be brief.", "Be brief.") == "Be brief."


SCREEN = (
    "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAIAAACQd1PeAAAADElEQVR4nGP4//8/AAX+Av4N70a4AAAAAElFTkSuQmCC"
)
ONE_OF_EACH: list[dict[str, Any]] = [
    {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hi"}], "id": "m_1"},
    {"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": "plan"}],
     "encrypted_content": "e"},
    {"type": "function_call", "id": "fc_1", "call_id": "c1", "name": "f", "arguments": "{}", "status": "completed"},
    {"type": "function_call_output", "id": "fco_1", "call_id": "c1", "output": "out", "status": "completed"},
    {"type": "custom_tool_call", "id": "ctc_1", "call_id": "c2", "name": "apply_patch", "input": "*** a"},
    {"type": "custom_tool_call_output", "call_id": "c2", "output": "patched"},
    {"type": "local_shell_call", "id": "c3", "call_id": "c3", "status": "completed",
     "action": {"type": "exec", "command": ["ls"], "env": {}}},
    {"type": "local_shell_call_output", "id": "c3", "output": "a.py", "status": "completed"},
    {"type": "apply_patch_call", "id": "ap_1", "call_id": "c4", "status": "completed",
     "operation": {"type": "update_file", "path": "a.py", "diff": "@@\n-a\n+b"}},
    {"type": "apply_patch_call_output", "id": "apo_1", "call_id": "c4", "status": "completed", "output": "done"},
    {"type": "shell_call", "id": "sh_1", "call_id": "c5", "status": "completed", "action": {"commands": ["ls"]}},
    {"type": "shell_call_output", "id": "sho_1", "call_id": "c5", "status": "completed",
     "output": [{"stdout": "a.py", "stderr": "", "outcome": {"type": "exit", "exit_code": 0}}]},
    {"type": "computer_call", "id": "cu_1", "call_id": "c6", "status": "completed", "pending_safety_checks": [],
     "action": {"type": "click", "button": "left", "x": 1, "y": 2}},
    {"type": "computer_call_output", "id": "cuo_1", "call_id": "c6", "current_url": "https://a.test",
     "acknowledged_safety_checks": [{"id": "sc_1", "code": "malicious_instructions"}],
     "output": {"type": "computer_screenshot", "image_url": SCREEN}},
]  # fmt: skip


def _read_alone(item: Any) -> list[Any]:
    from windowkeeper.llm.formats import from_responses_input

    return [(m.role, m.content, m.tools_calls, m.metadata) for m in from_responses_input([item])]


def test_every_responses_item_type_the_reader_models_reaches_the_window_as_it_reads_it() -> None:
    """The projection takes the Responses item types and keys from the reader (`ITEM_FIELDS`); it kept its own
    table once, and the types the reader learned later (computer use) reached the window as opaque text."""
    from windowkeeper.llm.formats.openai_responses import KNOWN_ITEM_KINDS

    assert {i["type"] for i in ONE_OF_EACH} == KNOWN_ITEM_KINDS  # a type taught to the reader needs a sample here
    plain_of = PLAIN["openai_responses"]
    for item in ONE_OF_EACH:
        with_extra = {**item, "x_future": {"k": 1}}
        plain = plain_of(with_extra)
        assert plain.get("type") == item["type"], plain  # modelled, not an opaque text
        assert _read_alone(plain) == _read_alone(with_extra), item["type"]
