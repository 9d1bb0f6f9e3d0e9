"""The base install stays small: importing the library needs no CLI, chart or dependency-injection package."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from windowkeeper.errors import MissingDependencyError

BLOCK = textwrap.dedent(
    """
    import sys
    for name in {blocked!r}:
        sys.modules[name] = None  # an import of it now raises ImportError, as on a base install
    """
)


def _run(script: str, blocked: tuple[str, ...]) -> subprocess.CompletedProcess[str]:
    code = BLOCK.format(blocked=blocked) + textwrap.dedent(script)
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)


def test_library_imports_and_counts_without_optional_packages() -> None:
    done = _run(
        """
        import windowkeeper
        from windowkeeper import AgentState, Message, MessageContextManager
        from windowkeeper.graph import END, StateGraph
        from windowkeeper.tokens import default_counter

        assert default_counter().count_text("hello world") == 2
        graph = StateGraph(context_manager=MessageContextManager(max_messages=2))
        graph.add_node("echo", lambda state: None)
        graph.add_edge("echo", END)
        graph.set_entry_point("echo")
        graph.compile().invoke({"messages": [Message.text_message("hi")]})
        heavy = [m for m in ("typer", "rich", "matplotlib", "numpy", "PIL", "injectq") if sys.modules.get(m)]
        assert heavy == [], heavy
        print("ok")
        """,
        ("typer", "rich", "matplotlib", "numpy", "PIL", "injectq"),
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ok"


def test_inject_without_injectq_names_the_di_extra() -> None:
    done = _run(
        """
        from windowkeeper.errors import MissingDependencyError
        try:
            from windowkeeper.graph import Inject
        except MissingDependencyError as exc:
            print(exc)
        """,
        ("injectq",),
    )
    assert done.returncode == 0, done.stderr
    assert 'pip install "windowkeeper[di]"' in done.stdout


def test_inject_is_injectq_marker_when_installed() -> None:
    injectq = pytest.importorskip("injectq")
    from windowkeeper.graph import Inject

    assert Inject is injectq.Inject
    assert issubclass(MissingDependencyError, ImportError)


def test_console_script_without_typer_prints_a_one_line_hint() -> None:
    done = _run("from windowkeeper.cli import main\nmain()\n", ("typer",))
    assert done.returncode == 2
    assert done.stdout == ""
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert 'pip install "windowkeeper[cli]"' in lines[0]
