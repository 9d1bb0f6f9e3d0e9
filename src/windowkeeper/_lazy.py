"""Lazy re-exports for package ``__init__`` modules.

A package that re-exports its submodules' names would import every submodule on ``import package``; most
callers use a few of them (a first trim needs the messages, a counter and one manager, not the graph runtime,
the provider clients, the stores or the memory, each tens of milliseconds to import). `lazy_exports` gives a
package a module-level ``__getattr__`` that imports a name's submodule the first time the name is asked for
(``from package import Name`` or ``package.Name``) and caches it in the package's namespace, and a ``__dir__``
that lists the names before they are loaded. The package keeps its imports under ``TYPE_CHECKING`` for type
checkers.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import Any


def lazy_exports(
    package: str, sources: Mapping[str, Sequence[str]]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """``(__getattr__, __dir__)`` for ``package``, where ``sources`` maps a relative module (``".budget"``) to
    the public names it defines."""
    where = {name: module for module, names in sources.items() for name in names}

    def __getattr__(name: str) -> Any:
        module = where.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module, package), name)
        setattr(sys.modules[package], name, value)
        return value

    def __dir__() -> list[str]:
        return sorted({*vars(sys.modules[package]), *where})

    return __getattr__, __dir__


__all__ = ["lazy_exports"]
