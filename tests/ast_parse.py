"""``ast.parse`` for tests that read the package's own source.

CPython 3.11's AST validator can raise ``SystemError: AST constructor recursion depth mismatch`` after earlier
tests left a thread's recursion bookkeeping off (a caught RecursionError, a changed recursion limit); a fresh
thread usually avoids it, but a full run has shown it there too. A new interpreter has no such history, so it is
the last resort (AST nodes pickle).
"""

from __future__ import annotations

import ast
import pickle
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

_CHILD = (
    "import ast, pickle, sys; p = sys.argv[1]; "
    "sys.stdout.buffer.write(pickle.dumps(ast.parse(open(p, encoding='utf-8').read(), p)))"
)


def parse(path: Path) -> ast.Module:
    """The module at ``path`` parsed, here, in a fresh thread, or in a new interpreter, whichever works first."""
    source = path.read_text(encoding="utf-8")
    try:
        return ast.parse(source, str(path))
    except SystemError:
        pass
    try:
        with ThreadPoolExecutor(max_workers=1) as pool:
            return pool.submit(ast.parse, source, str(path)).result()
    except SystemError:
        pass
    done = subprocess.run([sys.executable, "-c", _CHILD, str(path)], capture_output=True, check=True)
    tree: ast.Module = pickle.loads(done.stdout)
    return tree
