"""docs/architecture.md's package map is checked against the imports of the code, parsed with `ast`.

The table itself is written by ``docs/generate.py`` (region ``architecture-layers``); these tests read what the
page states, not what the generator would write, so a hand edit or a stale table fails here too.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from ast_parse import generate_module

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "architecture.md"
ROW = re.compile(r"^\| (\d+) \| `([^`]+)` \| (.*) \| (.*) \|$", re.M)


generate = generate_module()


def stated() -> dict[str, tuple[int, set[str]]]:
    """The page's table: part -> (layer, the parts it says the part imports)."""
    region = PAGE.read_text(encoding="utf-8").split("<!-- generated: architecture-layers -->", 1)[1]
    region = region.split("<!-- end generated -->", 1)[0]
    table: dict[str, tuple[int, set[str]]] = {}
    for layer, part, _, uses in ROW.findall(region):
        table[part] = (int(layer), set(re.findall(r"`([^`]+)`", uses)))
    return table


def test_every_package_and_top_level_module_is_on_the_page() -> None:
    missing = sorted(set(generate.package_parts()) - set(stated()))
    assert not missing, f"docs/architecture.md does not list {missing}; run: python docs/generate.py"
    assert {"integrations/", "io/", "tokenizing/", "context/", "prompt/"} <= set(stated())


def test_every_stated_dependency_is_an_import_and_every_import_is_stated() -> None:
    imports = generate.package_imports()
    table = stated()
    absent = sorted((part, other) for part, (_, uses) in table.items() for other in uses - imports.get(part, set()))
    assert not absent, f"the page states imports the code does not have: {absent}; run: python docs/generate.py"
    unstated = sorted((part, other) for part, uses in imports.items() for other in uses - table[part][1])
    assert not unstated, f"imports missing from the page: {unstated}; run: python docs/generate.py"


def test_imports_point_downward_only() -> None:
    """No import cycle between parts, and each part imports only parts of a lower stated layer."""
    table = stated()
    assert generate.package_layers(generate.package_imports()) == {part: layer for part, (layer, _) in table.items()}
    upward = [(part, other) for part, (layer, uses) in table.items() for other in uses if table[other][0] >= layer]
    assert not upward


def test_the_two_dependencies_the_old_page_invented_are_not_stated() -> None:
    table = stated()
    assert "context/" not in table["graph/"][1]
    assert "units.py" not in table["llm/"][1]


def _package(tmp_path: Path, files: dict[str, str]) -> Path:
    root = tmp_path / "windowkeeper"
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root


def test_the_parser_reads_every_kind_of_import(tmp_path: Path) -> None:
    root = _package(
        tmp_path,
        {
            "__init__.py": '"""Top."""\nfrom .a import x\n__version__ = "1"\n',
            "base.py": '"""Bottom."""\n',
            "other.py": '"""Other."""\n',
            "a/__init__.py": '"""Package a."""\nfrom .inner import y\n',
            "a/inner.py": (
                "from typing import TYPE_CHECKING\nfrom ..base import z\nif TYPE_CHECKING:\n"
                "    from windowkeeper.other import w\n"
            ),
            "b/__init__.py": '"""Package b."""\n',
            "b/deep/__init__.py": "def f():\n    from ... import a\n    from ...a.inner import y\n",
            "b/tool.py": "import windowkeeper.base\nfrom .. import __version__\nimport json\n",
        },
    )
    assert generate.package_parts(root) == ["__init__.py", "a/", "b/", "base.py", "other.py"]
    assert generate.package_imports(root) == {
        "__init__.py": {"a/"},
        "a/": {"base.py", "other.py"},
        "b/": {"a/", "base.py", "__init__.py"},
        "base.py": set(),
        "other.py": set(),
    }
    assert generate.package_summary("a/", root) == "Package a"


def test_a_cycle_between_parts_is_reported(tmp_path: Path) -> None:
    root = _package(
        tmp_path,
        {"__init__.py": "", "a.py": "from . import b\n", "b.py": "from .c import x\n", "c.py": "from .a import y\n"},
    )
    with pytest.raises(SystemExit, match=r"a\.py -> b\.py -> c\.py -> a\.py"):
        generate.package_layers(generate.package_imports(root))
