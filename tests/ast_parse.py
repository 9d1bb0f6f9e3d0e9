"""The docs generator as a module, for tests that read the package's source or check what it writes.

``parse`` is its `parse_module`: the one ``ast.parse`` that survives CPython 3.11's AST recursion-depth
``SystemError`` (see there).
"""

from __future__ import annotations

import ast
import importlib.util
import sys
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[1]


def generate_module() -> ModuleType:
    """``docs/generate.py``, loaded once per process."""
    loaded = sys.modules.get("docs_generate")
    if loaded is not None:
        return loaded
    spec = importlib.util.spec_from_file_location("docs_generate", ROOT / "docs" / "generate.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["docs_generate"] = module
    spec.loader.exec_module(module)
    return module


def parse(path: Path) -> ast.Module:
    """The module at ``path``, parsed."""
    tree: ast.Module = generate_module().parse_module(path)
    return tree
