"""Re-counting a long history after one append should cost about one message, not the whole history.

Generates a 100,000-message coding-agent session, counts it once cold with the exact ``o200k_base`` counter, then
again after appending one message (the situation of every model call in a long session), and prints the ratio of
the two times plus the cold throughput. A tokenizer-per-call design (e.g. re-encoding every message) would show a
ratio near 1. Ratios only; machine speed does not matter. Times are CPU seconds of this process
(``time.process_time``): on a shared machine wall-clock time charges the measurement for other jobs (the warm
count takes a few milliseconds, so one preemption could fail the target). The warm count is the best of 5 runs.

    python bench/count_incremental.py [--messages 100000] [--seed 0]
"""

from __future__ import annotations

import argparse
import time

from _common import build_history

from windowkeeper import Message
from windowkeeper.tokens import TiktokenCounter


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--messages", type=int, default=100_000)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    started = time.perf_counter()
    history = build_history(args.messages, args.seed, whole_units=False)
    print(f"generated {len(history):,} messages in {time.perf_counter() - started:.1f} s")

    counter = TiktokenCounter("o200k_base")
    counter.count_text("warm up")  # load the encoding outside the timed region

    started = time.process_time()
    cold_total = counter.count_messages(history)
    cold = time.process_time() - started

    warm = float("inf")
    for k in range(5):  # each run appends one new message, so each counts exactly one message cold
        note = f"One more thing ({k}): keep the public API unchanged."
        history.append(Message.text_message(note, message_id=f"bench-append-{k}"))
        started = time.process_time()
        warm_total = counter.count_messages(history)
        warm = min(warm, time.process_time() - started)

    ratio = warm / cold
    print(
        f"cold count : {cold_total:,} tokens, {len(history) - 5:,} messages, {cold:.3f} CPU s "
        f"({(len(history) - 5) / cold:,.0f} messages/s)"
    )
    added = warm_total - cold_total
    print(f"after an append: {warm * 1000:.1f} CPU ms (best of 5 appends; {added} tokens added in all)")
    print(f"ratio append/cold: {ratio:.5f} (expected < 0.01) -> {'OK' if ratio < 0.01 else 'ABOVE TARGET'}")


if __name__ == "__main__":
    main()
