"""An agent whose old turns are folded into a running summary once the chat passes ~8000 estimated tokens.

Needs an OpenAI-compatible endpoint: set OPENAI_API_KEY (and OPENAI_BASE_URL for a proxy or a local server).
The summarizer model is only called once the token trigger fires; the agent calls the manager before each model
call because it was created with ``trim_context=True``.
"""

from windowkeeper.core.graph import Agent, StateGraph
from windowkeeper.core.state import Message, SummaryContextManager
from windowkeeper.utils.constants import END

# Token trigger only: the message-count trigger is switched off.
manager = SummaryContextManager(
    model="gpt-4o-mini",
    max_messages=None,
    token_budget=8000,
    keep_recent=10,
)

assistant = Agent(
    model="gpt-4o",
    provider="openai",
    system_prompt="You are a helpful assistant.",
    trim_context=True,
)

builder = StateGraph(context_manager=manager)
builder.add_node("MAIN", assistant)
builder.add_edge("MAIN", END)
builder.set_entry_point("MAIN")
app = builder.compile()

outcome = app.invoke(
    {"messages": [Message.text_message("Hi! Please remember my name: Sam.")]},
    config={"thread_id": "summary-demo"},
)
print(outcome["messages"][-1].text())
