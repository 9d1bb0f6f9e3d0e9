"""The docs cannot drift: every Python block in README.md and docs/*.md runs, and shown output must match.

Convention (docs/index.md, "Writing these docs"):
- every ```python block runs; the blocks of one page run in order in one namespace, in a temporary directory
  (top-level ``await`` is allowed);
- a ```text (or ```output) block right after a python block is exactly what that block prints;
- ```python no-run marks a block that needs a server, network access or an API key: it is only compiled;
- tables between ``<!-- generated: NAME -->`` and ``<!-- end generated -->`` come from ``docs/generate.py``
  (checked by the slow test below).
"""

from __future__ import annotations

import ast
import json
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
FENCE = re.compile(r"^```([^\n`]*)\n(.*?)^```[ \t]*$", re.M | re.S)
OUTPUT_LANGS = ("text", "output")


@dataclass(frozen=True)
class Block:
    page: Path
    line: int
    info: str
    code: str
    shown: str | None

    @property
    def runs(self) -> bool:
        return "no-run" not in self.info.split()[1:]


def python_blocks(page: Path) -> list[Block]:
    """The page's python blocks, each with the output block that directly follows it (if any)."""
    text = page.read_text(encoding="utf-8")
    fences = list(FENCE.finditer(text))
    blocks = []
    for i, match in enumerate(fences):
        info = match.group(1).strip()
        if info.split()[:1] != ["python"]:
            continue
        shown = None
        if i + 1 < len(fences):
            following = fences[i + 1]
            between = text[match.end() : following.start()]
            if following.group(1).strip() in OUTPUT_LANGS and not between.strip():
                shown = following.group(2)
        blocks.append(Block(page, text.count("\n", 0, match.start()) + 1, info, match.group(2), shown))
    return blocks


def _normalize(output: str) -> list[str]:
    return [line.rstrip() for line in output.strip("\n").splitlines()]


def _pages_with_python() -> list[Path]:
    return [page for page in PAGES if python_blocks(page)]


@pytest.mark.parametrize("page", _pages_with_python(), ids=lambda p: p.name)
def test_python_blocks_run_and_print_what_the_page_shows(page: Path) -> None:
    """Each page runs in its own process with ``PYTHONHASHSEED=0`` (``docs/generate.py --run-page``), so no state
    leaks between pages and printed numbers do not depend on the hash seed of the test process."""
    for block in python_blocks(page):
        compile(block.code, f"{page.relative_to(ROOT)}:{block.line}", "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
    done = subprocess.run(
        [sys.executable, str(ROOT / "docs" / "generate.py"), "--run-page", str(page)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, f"{page.relative_to(ROOT)}: a block failed\n{done.stderr[-4000:]}"
    for line, shown, printed in json.loads(done.stdout.strip().splitlines()[-1]):
        if shown is not None:
            assert _normalize(printed) == _normalize(shown), (
                f"{page.relative_to(ROOT)}:{line}: the block prints something else than the output shown after it"
            )


def test_the_block_parser_follows_the_convention(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text(
        "```python\nprint(1)\n```\n\n```text\n1\n```\n"
        "```python no-run\nconnect()\n```\n"
        "```python\nx = 2\n```\nprose\n```text\nnot output\n```\n"
    )
    blocks = python_blocks(page)
    assert [(b.line, b.runs, b.shown) for b in blocks] == [(1, True, "1\n"), (8, False, None), (11, True, None)]


@pytest.mark.slow
def test_generated_tables_are_current() -> None:
    """The numbers in the docs' tables are what the code produces now (``python docs/generate.py`` updates)."""
    done = subprocess.run(
        [sys.executable, str(ROOT / "docs" / "generate.py"), "--check"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert done.returncode == 0, done.stdout + done.stderr
