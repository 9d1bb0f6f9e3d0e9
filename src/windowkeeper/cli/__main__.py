"""``python -m windowkeeper.cli``: the same as the ``windowkeeper`` console script."""

from . import main

main()
