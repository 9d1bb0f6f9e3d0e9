"""Long hostile-input fuzz run (issue 12): readers, managers, memory and the CLI.

    python bench/fuzz_long.py [--views 100000] [--payloads 20000] [--seed 0] [--max-minutes 60]

Prints the tally (views, payloads, typed errors, untyped errors, invalid views, lost events, hangs) and exits 1
when anything was found. The same run is ``WINDOWKEEPER_FUZZ_LONG=1 pytest tests/fuzz -k long``.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.fuzz.long_run import run  # noqa: E402 - needs the repository root on sys.path first


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--views", type=int, default=100_000)
    parser.add_argument("--payloads", type=int, default=20_000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--max-minutes", type=float, default=None, help="stop early and report how far it got")
    args = parser.parse_args()
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="wk-fuzz-") as workdir:
        tally = run(
            views=args.views,
            payloads=args.payloads,
            workdir=Path(workdir),
            seed=args.seed,
            deadline_s=args.max_minutes * 60 if args.max_minutes else None,
        )
    print(f"fuzz_long seed={args.seed}: {tally.summary()} in {time.perf_counter() - started:,.0f} s")
    for finding in tally.findings:
        print("  " + finding)
    return 0 if tally.clean else 1


if __name__ == "__main__":
    raise SystemExit(main())
