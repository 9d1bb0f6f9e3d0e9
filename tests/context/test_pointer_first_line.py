"""The first line a pointer quotes: the first non-blank line of the text (as ``str.splitlines`` splits it),
stripped and clipped, whatever path `_first_line` takes to find it."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from windowkeeper.context.pointers import _FIRST_LINE_CHARS, _first_line

_BREAKS = ["\n", "\r", "\r\n", "\x0b", "\x0c", "\x1c", "\x1d", "\x1e", "\x85", "\u2028", "\u2029"]


def _reference(text: str) -> str:
    for line in text.splitlines():
        stripped = line.strip()
        if stripped:
            return stripped if len(stripped) <= _FIRST_LINE_CHARS else stripped[: _FIRST_LINE_CHARS - 1] + "…"
    return ""


_PIECE = st.one_of(
    st.sampled_from(_BREAKS),
    st.sampled_from([" ", "\t", "\x1f", "\u3000", "  \t "]),
    st.text(alphabet=st.characters(codec="utf-8"), max_size=30),
    st.integers(1, 900).map(lambda n: "x" * n),
    st.integers(1, 900).map(lambda n: " " * n),
    st.integers(1, 300).map(lambda n: "word " * n),
)


@settings(max_examples=600)
@given(st.lists(_PIECE, max_size=12).map("".join))
def test_same_line_as_a_full_split(text: str) -> None:
    assert _first_line(text) == _reference(text)


def test_long_single_line_and_lines_around_the_peek() -> None:
    for n in (0, 100, 159, 160, 161, 511, 512, 513, 4095, 4096, 4097, 10_000):
        for lead in ("", "   ", "\n\n  \n", " " * 600, "\n" * 600):
            for tail in ("", "\nnext", "\r\nnext", "   "):
                text = lead + "a" * n + tail
                assert _first_line(text) == _reference(text), (n, len(lead), tail)
                text = lead + "ab " * (n // 3) + " " * 700 + "z" + tail
                assert _first_line(text) == _reference(text), (n, len(lead), tail)
