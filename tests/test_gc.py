"""`bulk_allocation`: the collector paused for a batch, and what the batch built moved to the oldest generation."""

from __future__ import annotations

import gc
import weakref

from windowkeeper._gc import bulk_allocation


class Node:
    def __init__(self) -> None:
        self.children: list[Node] = []


def _in_generation(obj: object, generation: int) -> bool:
    return any(o is obj for o in gc.get_objects(generation=generation))


def test_what_a_batch_builds_lands_in_the_oldest_generation_and_collection_resumes() -> None:
    assert gc.isenabled()
    with bulk_allocation():
        assert not gc.isenabled()
        with bulk_allocation():  # nested: still paused when the inner one ends
            kept = [Node() for _ in range(50)]
        assert not gc.isenabled()
    assert gc.isenabled()
    assert _in_generation(kept[0], 2) and not _in_generation(kept[0], 0)
    assert gc.get_freeze_count() == 0


def test_cyclic_garbage_made_in_a_batch_is_still_collected() -> None:
    with bulk_allocation():
        cycle = Node()
        cycle.children.append(cycle)
    ref = weakref.ref(cycle)
    del cycle
    assert ref() is not None  # a cycle: its reference count never drops to zero
    gc.collect()  # the next full collection finds it
    assert ref() is None


def test_a_program_that_froze_objects_keeps_them_frozen() -> None:
    frozen = Node()
    gc.freeze()
    try:
        count = gc.get_freeze_count()
        with bulk_allocation():
            young = Node()
        assert gc.get_freeze_count() == count and gc.isenabled()
        assert not _in_generation(frozen, 2)  # still in the permanent generation
        assert not _in_generation(young, 2)  # left young, collected as before
    finally:
        gc.unfreeze()


def test_a_collector_the_program_disabled_stays_disabled() -> None:
    gc.disable()
    try:
        with bulk_allocation():
            young = Node()
        assert not gc.isenabled() and not _in_generation(young, 2)
    finally:
        gc.enable()
