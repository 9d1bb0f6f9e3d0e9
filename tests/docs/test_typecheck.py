"""What users copy type-checks: the README's and docs' runnable Python blocks and examples/ pass ``mypy --strict``.

Each page's runnable blocks (``python no-run`` fragments excluded) become one module, in page order, so later
blocks see earlier names; redefining a name between independent snippets of a page is allowed.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from mypy_strict import mypy_strict

from .test_docs import PAGES, ROOT, python_blocks

pytest.importorskip("mypy")


@pytest.mark.slow
def test_docs_and_examples_pass_mypy_strict(tmp_path: Path) -> None:
    files = []
    for page in PAGES:
        blocks = [b for b in python_blocks(page) if b.runs]
        if blocks:
            module = tmp_path / f"doc_{page.stem.replace('-', '_').lower()}.py"
            module.write_text("\n\n".join(f"# {page.name}:{b.line}\n{b.code}" for b in blocks), encoding="utf-8")
            files.append(str(module))
    files.extend(str(p) for p in sorted((ROOT / "examples").glob("*.py")))
    done = mypy_strict(files, "--allow-redefinition", "--disable-error-code=no-redef")
    assert done.returncode == 0, done.stdout + done.stderr
