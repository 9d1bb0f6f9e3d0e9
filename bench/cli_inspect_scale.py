"""``windowkeeper inspect`` of one long message list: peak memory against the file's size, and CPU time.

Writes a JSON Lines file and a JSON array of ``--messages`` short chat messages (1M by default, ~35 MB each) to a
temporary folder and runs ``windowkeeper inspect FILE --json`` on each in a child process, reporting the file
size, the child's peak RSS (``ru_maxrss``), its ratio to the file size, and its user+system CPU seconds (wall time
is printed too, but on a shared machine only CPU time compares). The issue's acceptance: under 60 s, peak RSS under
10x the file size.

    PYTHONPATH=$PWD/src python bench/cli_inspect_scale.py [--messages 1000000]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def _write(folder: Path, n: int) -> tuple[Path, Path]:
    lines = folder / "chat.jsonl"
    array = folder / "chat.json"
    with lines.open("w") as out_lines, array.open("w") as out_array:
        out_array.write("[")
        for i in range(n):
            role = "user" if i % 2 == 0 else "assistant"
            text = json.dumps({"role": role, "content": f"m{i % 1000}"}, separators=(",", ":"))
            out_lines.write(text + "\n")
            out_array.write(("," if i else "") + text)
        out_array.write("]")
    return lines, array


def _measure(path: Path) -> dict[str, float]:
    script = (
        "import json, resource, sys, time\n"
        "from windowkeeper.cli import main\n"
        "sys.argv = ['windowkeeper', 'inspect', sys.argv[1], '--json']\n"
        "try:\n    main()\nexcept SystemExit as e:\n    code = e.code\n"
    )
    started = time.perf_counter()
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    done = subprocess.run(
        [sys.executable, "-c", script, str(path)], capture_output=True, text=True, env=os.environ.copy(), check=False
    )
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    wall = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"inspect failed ({done.returncode}): {done.stderr[-2000:]}")
    messages = json.loads(done.stdout)["totals"]["messages"]
    size = path.stat().st_size
    peak = after.ru_maxrss * 1024  # KiB on Linux; the largest child so far (each run is larger or equal)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return {"messages": messages, "bytes": size, "peak_rss": peak, "ratio": peak / size, "cpu_s": cpu, "wall_s": wall}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--messages", type=int, default=1_000_000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        for path in _write(Path(tmp), args.messages):
            m = _measure(path)
            print(
                f"{path.name}: {m['messages']:,} messages, {m['bytes'] / 1e6:.1f} MB, peak RSS "
                f"{m['peak_rss'] / 1e6:.0f} MB ({m['ratio']:.1f}x the file), CPU {m['cpu_s']:.1f} s, "
                f"wall {m['wall_s']:.1f} s"
            )


if __name__ == "__main__":
    main()
