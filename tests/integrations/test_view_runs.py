"""A head's view runs are built from the last committed head's for the unchanged prefix and from the new messages
alone: whatever the view does between saves (grows, loses its oldest, is replaced), they are the runs a full
pass over the view gives."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from windowkeeper.integrations._threads import ThreadMemory, ref_runs, unrolled
from windowkeeper.messages import Message

# each step: how many of the oldest messages leave, whether the view is replaced from some point, how many arrive
STEPS = st.lists(st.tuples(st.integers(0, 3), st.integers(-1, 6), st.integers(0, 4)), max_size=25)


@settings(max_examples=150, deadline=None)
@given(STEPS)
def test_runs_from_the_saved_prefix_equal_a_full_pass(steps: list[tuple[int, int, int]]) -> None:
    memory = ThreadMemory()
    for n, (dropped, cut, arriving) in enumerate(steps):
        view = memory.view[dropped:]
        if 0 <= cut < len(view):
            view = view[:cut] + [Message.text_message(f"replaced {n} {i}") for i in range(len(view) - cut)]
        view += [Message.text_message(f"new {n} {i}") for i in range(arriving)]
        memory.view = view
        start = memory.saved_prefix()
        fresh = memory.unplaced(start)
        if fresh:
            key = f"record-{n}"
            memory.record_versions[key] = 1 + n % 2
            memory.place(key, fresh)
        runs = memory.view_runs(start)
        full = [
            [memory.placed[id(m)][1], memory.record_versions[memory.placed[id(m)][1]], memory.placed[id(m)][2]]
            for m in memory.view
        ]
        assert runs == ref_runs(full)
        assert [list(ref) for ref in unrolled(runs)] == full
        memory.saved(runs, start)
        assert set(memory.placed) == {id(m) for m in memory.view}
