"""Property tests: random conversations survive JSON and every provider format that can carry their blocks.

Each format gets conversations built only from blocks it can carry (e.g. no video for OpenAI, media only in user
turns); a round trip must then be equal under the documented normalization (`canonical`).
"""

from __future__ import annotations

import itertools
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from windowkeeper.blocks import (
    AnnotationBlock,
    AnnotationRef,
    AudioBlock,
    ContentBlock,
    DataBlock,
    DocumentBlock,
    ErrorBlock,
    ImageBlock,
    MediaRef,
    ReasoningBlock,
    TextBlock,
    ToolCallBlock,
    ToolResultBlock,
    VideoBlock,
)
from windowkeeper.llm.formats import (
    first_difference,
    from_anthropic,
    from_gemini,
    from_langchain,
    from_openai_chat,
    from_responses_input,
    to_anthropic,
    to_gemini,
    to_langchain,
    to_openai_chat,
    to_responses_input,
)
from windowkeeper.messages import Message
from windowkeeper.units import validate

SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])

text = st.text(max_size=12)
word = st.text(alphabet="abcdefghij_", min_size=1, max_size=8)
b64 = st.text(alphabet="ABCDEFGHabcdefgh0123456789+/", min_size=0, max_size=12)
json_scalar = (
    st.none() | st.booleans() | st.integers(-1000, 1000) | st.floats(allow_nan=False, allow_infinity=False) | text
)
json_value = st.recursive(
    json_scalar,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(word, inner, max_size=3),
    max_leaves=6,
)
args = st.dictionaries(word, json_value, max_size=3)
url = word.map(lambda w: f"https://example.com/{w}")

# -- media per format -----------------------------------------------------------------------------------------

IMAGE_MIME = st.sampled_from(["image/png", "image/jpeg", "image/webp"])


def _data(mime: st.SearchStrategy[str | None]) -> st.SearchStrategy[MediaRef]:
    return st.builds(
        MediaRef, kind=st.just("data"), data_base64=b64, mime_type=mime, size_bytes=st.none() | st.integers(0, 10**6)
    )


def _url(mime: st.SearchStrategy[str | None] = st.none()) -> st.SearchStrategy[MediaRef]:
    return st.builds(MediaRef, kind=st.just("url"), url=url, mime_type=mime, width=st.none() | st.integers(1, 99))


def _file_id(filename: st.SearchStrategy[str | None] = st.none()) -> st.SearchStrategy[MediaRef]:
    return st.builds(MediaRef, kind=st.just("file_id"), file_id=word, filename=filename)


filename = st.none() | word.map(lambda w: f"{w}.pdf")
pdf_data = st.builds(
    MediaRef, kind=st.just("data"), data_base64=b64, mime_type=st.just("application/pdf"), filename=filename
)
image = st.builds(ImageBlock, alt_text=st.none() | text)
audio_openai = st.builds(
    AudioBlock,
    media=_data(st.sampled_from(["audio/wav", "audio/mpeg", "audio/x-wav", "audio/mp3"])),
    transcript=st.none() | text,
)

MEDIA: dict[str, st.SearchStrategy[ContentBlock]] = {
    "openai_chat": st.one_of(
        st.builds(ImageBlock, media=_url() | _data(IMAGE_MIME | st.none())),
        audio_openai,
        st.builds(DocumentBlock, media=_file_id(filename) | pdf_data),
    ),
    "openai_responses": st.one_of(
        st.builds(ImageBlock, media=_url() | _data(IMAGE_MIME) | _file_id()),
        audio_openai,
        st.builds(
            DocumentBlock,
            media=_file_id(filename) | pdf_data | _url().map(lambda m: m.model_copy(update={"filename": "x.pdf"})),
        ),
    ),
    "anthropic": st.one_of(
        st.builds(ImageBlock, media=_url() | _data(IMAGE_MIME) | _file_id()),
        st.builds(DocumentBlock, media=_file_id(filename) | pdf_data | _url()),
        st.builds(DocumentBlock, text=text, pages=st.none() | st.just([1])),
    ),
    "gemini": st.one_of(
        st.builds(ImageBlock, media=_data(IMAGE_MIME) | _url(IMAGE_MIME)),
        st.builds(AudioBlock, media=_data(st.just("audio/ogg"))),
        st.builds(VideoBlock, media=_url(st.just("video/mp4")) | _data(st.just("video/mp4"))),
        st.builds(DocumentBlock, media=_data(st.just("application/pdf"))),
        st.builds(DocumentBlock, text=text),
        st.builds(DataBlock, mime_type=IMAGE_MIME, data_base64=b64),
    ),
    "langchain": st.one_of(
        st.builds(ImageBlock, media=_url(IMAGE_MIME | st.none()) | _data(IMAGE_MIME | st.none()) | _file_id()),
        st.builds(AudioBlock, media=_data(st.just("audio/wav"))),
        st.builds(VideoBlock, media=_url()),
        st.builds(DocumentBlock, media=_file_id(filename) | pdf_data),
        st.builds(DocumentBlock, text=text),
    ),
}

REASONING: dict[str, st.SearchStrategy[ReasoningBlock]] = {
    "openai_chat": st.builds(ReasoningBlock, text=text),
    "anthropic": st.builds(ReasoningBlock, text=text, signature=st.none() | word),
    "gemini": st.builds(ReasoningBlock, text=text, signature=st.none() | word),
    "openai_responses": st.builds(
        ReasoningBlock, text=text, summary=st.none() | text, id=st.none() | word, signature=st.none() | word
    ),
    "langchain": st.builds(
        ReasoningBlock, text=text, summary=st.none() | text, id=st.none() | word, signature=st.none() | word
    ),
}

text_like = st.one_of(
    st.builds(TextBlock, text=text),
    st.builds(TextBlock, text=text, annotations=st.just([AnnotationRef(url="https://cite")])),
    st.builds(ErrorBlock, error=text),
    st.builds(AnnotationBlock, annotation=st.just(AnnotationRef(title="t"))),
)


@st.composite
def conversation(draw: st.DrawFn, fmt: str) -> list[Message]:
    """System messages anywhere, user turns with media, assistant turns with reasoning and parallel calls, each
    answered (in call order) by one or several tool messages."""
    counter = itertools.count()
    messages: list[Message] = []
    for _ in range(draw(st.integers(1, 5))):
        kind = draw(st.sampled_from(["system", "user", "user", "assistant", "assistant"]))
        if kind == "system":
            messages.append(Message(role="system", content=draw(st.lists(st.builds(TextBlock, text=text), max_size=2))))
        elif kind == "user":
            blocks = draw(st.lists(text_like | MEDIA[fmt], max_size=4))
            messages.append(Message(role="user", content=blocks))
        else:
            calls = [
                ToolCallBlock(id=f"call_{next(counter)}", name=draw(word), args=draw(args))
                for _ in range(draw(st.integers(0, 3)))
            ]
            body = draw(st.lists(text_like | REASONING[fmt], max_size=3))
            reasoning = draw(st.none() | text)
            messages.append(Message(role="assistant", content=body + calls, reasoning=reasoning or None))
            results: list[ContentBlock] = []
            for call in calls:
                if draw(st.integers(0, 5)) == 0:
                    results.append(ErrorBlock(error=draw(text), tool_call_id=call.id))
                else:
                    results.append(
                        ToolResultBlock(
                            call_id=call.id,
                            output=draw(json_value),
                            status=draw(st.sampled_from(["completed", "error"])),
                            name=draw(st.none() | st.just(call.name)),
                        )
                    )
            split = draw(st.booleans())
            if results:
                groups = [[r] for r in results] if split else [results]
                messages.extend(Message.tool_message(g) for g in groups)
    return messages


def _round_trip(fmt: str, messages: list[Message]) -> list[Message]:
    if fmt == "openai_chat":
        return from_openai_chat(to_openai_chat(messages))
    if fmt == "openai_responses":
        instructions, items = to_responses_input(messages)
        return from_responses_input(items, instructions)
    if fmt == "anthropic":
        return from_anthropic(*to_anthropic(messages))
    if fmt == "gemini":
        return from_gemini(*to_gemini(messages))
    return from_langchain(to_langchain(messages))


@pytest.mark.parametrize("fmt", ["openai_chat", "openai_responses", "anthropic", "gemini", "langchain"])
@SETTINGS
@given(data=st.data())
def test_provider_round_trip(fmt: str, data: st.DataObject) -> None:
    messages = data.draw(conversation(fmt))
    back = _round_trip(fmt, messages)
    diff = first_difference(messages, back, fmt)  # type: ignore[arg-type]
    assert diff is None, diff
    # Converting again is a fixed point: nothing further is lost.
    again = _round_trip(fmt, back)
    assert first_difference(back, again, fmt) is None  # type: ignore[arg-type]
    # Every call is answered in the generated input, so pairing must survive the trip.
    assert validate(back, "openai") == []


any_media = st.builds(
    MediaRef,
    kind=st.sampled_from(["url", "file_id", "data"]),
    url=st.none() | url,
    file_id=st.none() | word,
    data_base64=st.none() | b64,
    mime_type=st.none() | IMAGE_MIME,
    size_bytes=st.none() | st.integers(0, 99),
    sha256=st.none() | word,
    page=st.none() | st.integers(1, 9),
)
every_block: st.SearchStrategy[Any] = st.one_of(
    st.builds(TextBlock, text=text, annotations=st.lists(st.builds(AnnotationRef, url=st.none() | url), max_size=1)),
    st.builds(ImageBlock, media=any_media, alt_text=st.none() | text, bbox=st.none() | st.just([0.0, 1.5, 2.0, 3.0])),
    st.builds(AudioBlock, media=any_media, transcript=st.none() | text, sample_rate=st.none() | st.just(16000)),
    st.builds(VideoBlock, media=any_media, thumbnail=st.none() | any_media),
    st.builds(DocumentBlock, media=st.none() | any_media, text=st.none() | text, pages=st.none() | st.just([1, 2])),
    st.builds(DataBlock, mime_type=IMAGE_MIME, data_base64=st.none() | b64, media=st.none() | any_media),
    st.builds(ToolCallBlock, id=word, name=word, args=args, tool_type=st.none() | word),
    st.builds(ToolResultBlock, call_id=word, output=json_value, status=st.sampled_from(["completed", "error"])),
    st.builds(ReasoningBlock, text=text, summary=st.none() | text, id=st.none() | word, signature=st.none() | word),
    st.builds(ErrorBlock, error=text, tool_call_id=st.none() | word, code=st.none() | word),
    st.builds(
        AnnotationBlock,
        annotation=st.builds(AnnotationRef, title=st.none() | text, index=st.none() | st.integers(0, 9)),
    ),
)


@settings(max_examples=100, deadline=None)
@given(
    role=st.sampled_from(["system", "user", "assistant", "tool"]),
    blocks=st.lists(every_block, max_size=6),
    reasoning=st.none() | text,
    metadata=st.dictionaries(word, json_value, max_size=2),
)
def test_json_round_trip_is_lossless(
    role: str, blocks: list[Any], reasoning: str | None, metadata: dict[str, Any]
) -> None:
    message = Message(role=role, content=blocks, reasoning=reasoning, metadata=metadata)  # type: ignore[arg-type]
    dumped = message.model_dump(mode="json")
    back = Message.model_validate(dumped)
    assert back.model_dump(mode="json") == dumped
    assert back.content == message.content
    assert back.fingerprint() == message.fingerprint()
