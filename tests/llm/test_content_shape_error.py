"""A message whose content is neither text nor a list of parts is refused with an error that names both forms:
every format that takes a plain string there says so, instead of telling the caller a list is the only shape."""

from __future__ import annotations

from typing import Any

import pytest

from windowkeeper import FormatError, Window


@pytest.mark.parametrize(
    ("format", "item"),
    [
        ("openai_chat", {"role": "user", "content": 123}),
        ("openai_chat", {"role": "tool", "tool_call_id": "c1", "content": 123}),
        ("openai_responses", {"role": "user", "content": 123}),
        ("anthropic", {"role": "user", "content": 123}),
    ],
)
def test_content_of_the_wrong_type_names_text_and_lists(format: str, item: dict[str, Any]) -> None:
    window: Any = Window(budget=2000, format=format)  # type: ignore[call-overload]
    with pytest.raises(FormatError, match="must be a string or a list of parts, got int"):
        window.fit([item])
