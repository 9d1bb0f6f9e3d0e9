"""`PieceCounts.total_with` sums as `total` does with one part counted apart (not memoized)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from windowkeeper.tokenizing.pieces import PieceCounts


def _fake_counter() -> tuple[PieceCounts, list[str]]:
    seen: list[str] = []

    def count_text(text: str) -> int:
        seen.append(text)
        return len(text) * 3 + 1

    return PieceCounts(count_text), seen


@settings(max_examples=200)
@given(parts=st.lists(st.text(max_size=12), min_size=1, max_size=12), data=st.data())
def test_total_with_is_total_of_the_rest_and_the_one(parts: list[str], data: st.DataObject) -> None:
    at = data.draw(st.integers(-len(parts), len(parts) - 1))
    one, seen_one = _fake_counter()
    other, _ = _fake_counter()
    unique = parts[at]
    rest = [p for i, p in enumerate(parts) if i != at % len(parts)]
    assert one.total_with(parts, at) == other.total(rest, [unique])
    # the part counted apart is not memoized unless it is also one of the others
    assert (unique in one._memo) == (unique in rest)
    assert seen_one.count(unique) >= 1
