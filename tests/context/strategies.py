"""Hypothesis strategies for valid conversations, reusable by every context-strategy test.

A generated conversation is valid for OpenAI and Anthropic: it starts (after any system messages) with a user
message, tool calls are answered completely and right after their call (parallel calls too, results split over
one or several tool messages in any order), and only the very last turn may hold a pending call whose results
have not all arrived. System messages can appear between any two units. Message ids are unique (``<prefix><n>``)
and timestamps fixed, so two draws with the same choices produce byte-identical messages.

Use ``conversations()`` for a ``list[Message]`` and ``agent_states()`` for an ``AgentState`` around one.
"""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

from windowkeeper.blocks import ImageBlock, MediaRef, TextBlock, ToolCallBlock, ToolResultBlock
from windowkeeper.messages import Message
from windowkeeper.state import AgentState, ExecMeta

WORDS = (
    "invoice",
    "Berlin",
    "42 km",
    "2024-05-01",
    "/srv/app/config.yaml",
    "deploy",
    "error: timeout",
    "Sam",
    "budget",
    "décision",
    "数据",
    "retry",
    "approved",
    "v1.2.3",
)
TOOLS = ("search", "read_file", "get_weather", "calc")


class _Builder:
    """Accumulates messages with sequential ids so every draw yields unique ids and call ids."""

    def __init__(self, draw: Any, prefix: str, images: bool) -> None:
        self.draw = draw
        # text is filler: drawing it from a seeded Random keeps generation fast; structure is drawn directly
        self.rnd = draw(st.randoms(use_true_random=False))
        self.prefix = prefix
        self.images = images
        self.messages: list[Message] = []
        self.calls = 0

    def _id(self) -> str:
        return f"{self.prefix}{len(self.messages)}"

    def text(self) -> str:
        words = self.rnd.choices(WORDS, k=self.rnd.randint(1, 6))
        repeat = self.rnd.choice((1, 1, 1, 1, 20, 200))
        return " ".join(words * repeat)

    def add(self, role: str, content: list[Any]) -> None:
        self.messages.append(
            Message(message_id=self._id(), role=role, content=content, timestamp=float(len(self.messages)))  # type: ignore[arg-type]
        )

    def system(self) -> None:
        self.add("system", [TextBlock(text="rule: " + self.text())])

    def user(self) -> None:
        content: list[Any] = [TextBlock(text=self.text())]
        if self.images and self.draw(st.integers(0, 5)) == 0:
            n = len(self.messages)
            content.append(ImageBlock(media=MediaRef(url=f"https://example.com/img{n}.png", width=512, height=384)))
        self.add("user", content)

    def assistant(self) -> None:
        self.add("assistant", [TextBlock(text=self.text())])

    def tool_call(self, *, answered: int | None = None) -> None:
        """An assistant turn with 1-3 parallel calls; ``answered`` limits how many results follow (pending)."""
        n_calls = self.draw(st.integers(1, 3))
        ids = [f"call_{self.calls + k}" for k in range(n_calls)]
        self.calls += n_calls
        content: list[Any] = []
        if self.rnd.random() < 0.5:
            content.append(TextBlock(text=self.text()))
        content.extend(ToolCallBlock(id=cid, name=self.rnd.choice(TOOLS), args={"q": self.text()[:40]}) for cid in ids)
        self.add("assistant", content)
        order = self.draw(st.permutations(ids))
        if answered is not None:
            order = order[:answered]
        if not order:
            return
        if self.draw(st.booleans()):
            self.add("tool", [ToolResultBlock(call_id=cid, output=self.text()) for cid in order])
        else:
            for cid in order:
                output: Any = self.text() if self.rnd.random() < 0.5 else {"rows": [1, 2], "note": self.text()}
                self.add("tool", [ToolResultBlock(call_id=cid, output=output)])


@st.composite
def conversations(
    draw: Any,
    *,
    min_messages: int = 0,
    max_messages: int = 300,
    system_anywhere: bool = True,
    allow_pending: bool = True,
    images: bool = True,
    prefix: str = "m",
) -> list[Message]:
    """A valid conversation of roughly ``min_messages``..``max_messages`` messages (a turn may overshoot by a few)."""
    target = draw(st.integers(min_messages, max_messages))
    b = _Builder(draw, prefix, images)
    if target == 0:
        return []
    for _ in range(draw(st.integers(0, 2))):
        b.system()
    while len(b.messages) < target:
        b.user()
        for _ in range(draw(st.integers(0, 3))):
            if len(b.messages) >= target:
                break
            if system_anywhere and draw(st.integers(0, 7)) == 0:
                b.system()
            if draw(st.booleans()):
                b.tool_call()
            else:
                b.assistant()
        if system_anywhere and draw(st.integers(0, 9)) == 0:
            b.system()
    # a pending call belongs to a user's turn: without a user message the list would start with the assistant
    has_user = any(m.role == "user" for m in b.messages)
    if allow_pending and has_user and draw(st.integers(0, 3)) == 0:
        b.tool_call(answered=draw(st.integers(0, 2)))
        # a pending turn must miss at least one result; drop a full answer if the draw gave one
        last_call = max(i for i, m in enumerate(b.messages) if m.role == "assistant")
        wanted = set(b.messages[last_call].tool_call_ids())
        got = {blk.call_id for m in b.messages[last_call + 1 :] for blk in m.tool_result_blocks()}
        if wanted <= got:
            b.messages = b.messages[: last_call + 1]
    return b.messages


@st.composite
def agent_states(draw: Any, **conversation_kwargs: Any) -> AgentState:
    """An `AgentState` around a generated conversation, sometimes with an existing summary and a thread id."""
    context = draw(conversations(**conversation_kwargs))
    summary = draw(st.sampled_from((None, None, "Earlier: the user is Sam from Berlin.")))
    thread = draw(st.sampled_from((None, "t1", "t2")))
    return AgentState(context=context, context_summary=summary, execution_meta=ExecMeta(thread_id=thread))


__all__ = ["TOOLS", "WORDS", "agent_states", "conversations"]
