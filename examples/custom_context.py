"""A custom context strategy: subclass BaseContextManager and implement both the sync and the async method.

Run: python examples/custom_context.py
"""

from windowkeeper.core.state import AgentState, BaseContextManager, Message


class LastNMessages(BaseContextManager[AgentState]):
    """Keep only the newest ``n`` messages of the context (no care for system prompts or tool pairs)."""

    def __init__(self, n: int = 20) -> None:
        self.n = n

    def trim_context(self, state: AgentState) -> AgentState:
        state.context = state.context[-self.n :] if self.n else []
        return state

    async def atrim_context(self, state: AgentState) -> AgentState:
        return self.trim_context(state)


if __name__ == "__main__":
    state = AgentState(context=[Message.text_message(f"note {i}") for i in range(5)])
    kept = LastNMessages(n=2).trim_context(state)
    print([m.text() for m in kept.context])
