"""The cli extra stays small: the chart's matplotlib (with numpy and pillow) is the plot extra, which dev and all
pull in so the tests can draw charts."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

PYPROJECT = tomllib.loads((Path(__file__).parents[2] / "pyproject.toml").read_text())
EXTRAS: dict[str, list[str]] = PYPROJECT["project"]["optional-dependencies"]


def _names(requirements: list[str]) -> set[str]:
    return {re.split(r"[<>=!~\[; ]", r, maxsplit=1)[0].lower() for r in requirements}


def _expanded(extra: str) -> set[str]:
    names = set()
    for requirement in EXTRAS[extra]:
        inner = re.fullmatch(r"windowkeeper\[(.+)\]", requirement)
        if inner:
            for name in inner.group(1).split(","):
                names |= _expanded(name.strip())
        else:
            names |= _names([requirement])
    return names


def test_cli_has_no_chart_dependencies() -> None:
    assert not _expanded("cli") & {"matplotlib", "numpy", "pillow"}
    assert {"typer", "rich"} <= _expanded("cli")


def test_plot_brings_the_chart_and_dev_and_all_include_it() -> None:
    assert "matplotlib" in _expanded("plot") and {"typer", "rich"} <= _expanded("plot")
    assert "matplotlib" in _expanded("dev") and "matplotlib" in _expanded("all")
