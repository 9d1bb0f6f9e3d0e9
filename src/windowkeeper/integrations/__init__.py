"""Thin adapters into host stacks, and `Window` (a provider-format list in, the managed list out).

`Window` needs nothing beyond windowkeeper itself. Each host adapter lives in its own module and imports its host
package only there, so it is installed by its own extra:

* ``windowkeeper.integrations.langchain``: `WindowkeeperMiddleware` for ``langchain.agents.create_agent``
  (extra ``langchain``);
* ``windowkeeper.integrations.langgraph``: `pre_model_hook` for ``langgraph.prebuilt.create_react_agent``
  (extra ``langgraph``);
* ``windowkeeper.integrations.openai_agents``: `input_filter` for ``RunConfig(call_model_input_filter=...)`` and
  `WindowkeeperSession` (extra ``openai-agents``).
"""

from .window import FitResult, Window

__all__ = ["FitResult", "Window"]
