"""The ``windowkeeper`` command line (install with ``pip install "windowkeeper[cli]"``).

`main` is the console script. It checks for the CLI's own dependencies first, so a base install that runs
``windowkeeper`` gets a one-line hint instead of a traceback.
"""

from __future__ import annotations

import sys

CLI_HINT = 'windowkeeper: the command line needs its extra; install it with: pip install "windowkeeper[cli]"'


def main(argv: list[str] | None = None) -> None:
    """Run the CLI; exit 2 with a one-line install hint when typer or rich are missing."""
    try:
        import rich  # noqa: F401
        import typer  # noqa: F401
    except ImportError:
        print(CLI_HINT, file=sys.stderr)
        raise SystemExit(2) from None
    from .app import run

    run(argv)


__all__ = ["CLI_HINT", "main"]
