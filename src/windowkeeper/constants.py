"""Graph sentinels shared by the state model and the graph runtime.

They live at the bottom layer because `ExecMeta` (in `state.py`) needs `START` as a default, and the graph layer
must agree with it on the exact string.
"""

from __future__ import annotations

from typing import Final

START: Final = "__start__"
END: Final = "__end__"
