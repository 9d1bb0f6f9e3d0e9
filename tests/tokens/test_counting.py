# ruff: noqa: RUF001  (Chinese sample text uses full-width punctuation)
"""Message pricing, the per-message memo, the approximate counter and media estimates."""

from __future__ import annotations

import base64
import json

import pytest

from windowkeeper import (
    AudioBlock,
    ConfigurationError,
    DataBlock,
    DocumentBlock,
    ErrorBlock,
    ImageBlock,
    MediaRef,
    Message,
    ReasoningBlock,
    TextBlock,
    ToolCallBlock,
    ToolResultBlock,
    VideoBlock,
)
from windowkeeper.testing.images import png
from windowkeeper.testing.sessiongen import generate_session
from windowkeeper.tokens import (
    ApproxCounter,
    TiktokenCounter,
    base64_decoded_size,
    default_counter,
    image_tokens_for_size,
)

PER_MESSAGE = 4  # 3 framing tokens + the role name


class CountingCounter(TiktokenCounter):
    """Records every call into the tokenizer, so cache behaviour is asserted without timing anything."""

    def __init__(self) -> None:
        super().__init__("o200k_base")
        self.calls = 0

    def count_text(self, text: str) -> int:
        self.calls += 1
        return super().count_text(text)


def test_text_message_costs_overhead_plus_text_and_request_adds_priming() -> None:
    counter = TiktokenCounter()
    message = Message.text_message("hello world", message_id="m1")
    assert counter.count_message(message) == PER_MESSAGE + 2
    assert counter.count_messages([message]) == PER_MESSAGE + 2 + 3
    assert counter.count_messages([]) == 3


def test_tool_calls_results_reasoning_and_errors_are_counted() -> None:
    counter = TiktokenCounter()
    ct = counter.count_text
    args = {"location": "Tokyo", "unit": "°C"}
    call = Message(
        message_id="a1",
        role="assistant",
        content=[ReasoningBlock(text="Need the weather first."), ToolCallBlock(id="c1", name="get_weather", args=args)],
        reasoning="The user asked about Tokyo.",
    )
    expected = (
        PER_MESSAGE
        + ct("Need the weather first.")
        + 3
        + ct("get_weather")
        + ct(json.dumps(args, ensure_ascii=False))
        + ct("The user asked about Tokyo.")
    )
    assert counter.count_message(call) == expected
    results = Message.tool_message(
        [
            ToolResultBlock(call_id="c1", output={"temp": 21, "sky": "clear"}),
            ToolResultBlock(call_id="c2", output="timeout", status="error"),
        ],
        message_id="t1",
    )
    # two results travel as two chat messages: one extra overhead
    assert counter.count_message(results) == 2 * PER_MESSAGE + ct('{"temp": 21, "sky": "clear"}') + ct("timeout")
    error = Message(message_id="e1", role="assistant", content=[ErrorBlock(error="rate limited, retry in 20 s")])
    assert counter.count_message(error) == PER_MESSAGE + ct("rate limited, retry in 20 s")


def test_raw_tools_calls_are_counted_from_their_argument_strings() -> None:
    counter = TiktokenCounter()
    raw = [{"id": "c9", "type": "function", "function": {"name": "grep", "arguments": '{"pattern":"KeyError"}'}}]
    message = Message(message_id="r1", role="assistant", tools_calls=raw)
    ct = counter.count_text
    assert counter.count_message(message) == PER_MESSAGE + 3 + ct("grep") + ct('{"pattern":"KeyError"}')


def test_recount_after_append_tokenizes_only_the_new_message() -> None:
    counter = CountingCounter()
    history = generate_session(30, seed=5).messages
    first = counter.count_messages(history)
    cold_calls = counter.calls
    assert cold_calls > len(history)
    assert counter.count_messages(history) == first
    assert counter.calls == cold_calls  # fully cached
    new = Message.text_message("and one more thing: keep the API stable", message_id="new-1")
    counter.calls = 0
    total = counter.count_messages([*history, new])
    assert counter.calls == 1
    assert total == first + PER_MESSAGE + counter.count_text("and one more thing: keep the API stable")


def test_reassigning_content_invalidates_only_that_message() -> None:
    counter = CountingCounter()
    history = generate_session(10, seed=6).messages
    before = counter.count_messages(history)
    target = next(m for m in history if m.role == "tool")
    old_cost = counter.count_message(target)
    counter.calls = 0
    target.content = [ToolResultBlock(call_id=target.tool_result_blocks()[0].call_id, output="[cleared]")]
    after = counter.count_messages(history)
    assert counter.calls == 1
    assert after == before - old_cost + PER_MESSAGE + counter.count_text("[cleared]")
    counter.calls = 0
    target.reasoning = "now with reasoning"
    counter.count_messages(history)
    assert counter.calls == 2  # the output and the new reasoning


def test_same_id_with_different_content_is_cached_separately() -> None:
    counter = CountingCounter()
    original = Message.text_message("a long original tool output " * 20, message_id="x")
    compacted = original.with_content([TextBlock(text="[compacted]")])
    a, b = counter.count_message(original), counter.count_message(compacted)
    assert a > b
    counter.calls = 0
    assert (counter.count_message(original), counter.count_message(compacted)) == (a, b)
    assert counter.calls == 0


def test_count_message_once_reads_and_fills_the_memo_of_a_hashed_message() -> None:
    """A message whose fingerprint is known is priced through the memo (`count_message`'s key), once; a message
    without one is priced and left unhashed; a subclass that prices messages its own way keeps its pricing."""
    counter = CountingCounter()
    hashed = Message.text_message("the deploy failed on step three", message_id="h")
    hashed.fingerprint()
    tokens = counter.count_message_once(hashed)
    assert counter.cache_size == 1 and counter.calls == 1
    assert counter.count_message(hashed) == tokens and counter.calls == 1  # count_message finds it
    assert counter.count_message_once(hashed) == tokens and counter.calls == 1  # and so does the next call
    fresh = Message.text_message("the deploy failed on step three", message_id="f")
    assert counter.count_message_once(fresh) == tokens and counter.cache_size == 1
    assert fresh.__pydantic_private__.get("_fingerprint") is None

    class Flat(CountingCounter):
        def count_message(self, message: Message) -> int:
            return 7

    assert Flat().count_message_once(hashed) == 7


def test_cache_is_bounded() -> None:
    counter = TiktokenCounter(max_cache_entries=8)
    for i in range(50):
        counter.count_message(Message.text_message(f"message {i}", message_id=i))
    assert counter.cache_size <= 8
    with pytest.raises(ConfigurationError, match="max_cache_entries"):
        TiktokenCounter(max_cache_entries=0)


CHINESE = (
    "我们在调试这个服务时发现，数据库连接池在高并发下会耗尽。经过分析，问题出在重试逻辑没有释放连接。"
    "我决定把超时时间从三十秒改为五秒，并在异常分支里显式关闭连接。测试通过后，延迟从每次请求两百毫秒降到了四十毫秒。"
)


def test_approx_counter_does_not_undercount_chinese() -> None:
    exact = default_counter().count_text(CHINESE)
    approx = ApproxCounter().count_text(CHINESE)
    assert exact / 1.5 <= approx <= exact * 1.5
    # a whitespace word count would say 2 here
    assert ApproxCounter().count_text("你好世界，今天天气很好。 我们出去走走吧。") >= 12


def test_approx_counter_uses_characters_not_words() -> None:
    counter = ApproxCounter()
    assert counter.count_text("a" * 400) == 100
    assert counter.count_text("word " * 100) == 125
    assert ApproxCounter(chars_per_token=2).count_text("abcdefgh") == 4
    assert counter.count_text("") == 0
    with pytest.raises(ConfigurationError, match="chars_per_token"):
        ApproxCounter(chars_per_token=0)


def test_image_tile_formula() -> None:
    assert image_tokens_for_size(512, 512) == 85 + 170
    assert image_tokens_for_size(1024, 1024) == 85 + 4 * 170
    assert image_tokens_for_size(4096, 2048) == 85 + 6 * 170  # -> 2048x1024 -> 1536x768
    assert image_tokens_for_size(100, 100) == 255


def _image(**media: object) -> Message:
    return Message(message_id="img", role="user", content=[ImageBlock(media=MediaRef(**media))])  # type: ignore[arg-type]


def test_base64_image_is_never_counted_as_text_nor_as_zero() -> None:
    counter = TiktokenCounter()
    payload = base64.b64encode(bytes(range(256)) * 2000).decode()  # ~512 kB image
    as_text = counter.count_text(payload)
    for media in (
        {"kind": "data", "data_base64": payload, "mime_type": "image/png"},
        {"kind": "data", "data_base64": f"data:image/png;base64,{payload}"},
    ):
        cost = counter.count_message(_image(**media)) - PER_MESSAGE
        assert 85 < cost <= 85 + 8 * 170
        assert cost < as_text / 50
    assert counter.count_message(_image(kind="data", data_base64="iVBORw0KGgo=")) - PER_MESSAGE == 255
    assert counter.count_message(_image(url="https://example.com/a.png")) - PER_MESSAGE == 765
    sized = _image(url="https://example.com/a.png", width=512, height=512)
    assert counter.count_message(sized) - PER_MESSAGE == 255


def test_base64_decoded_size_without_decoding() -> None:
    raw = b"x" * 1001
    encoded = base64.b64encode(raw).decode()
    assert base64_decoded_size(encoded) == 1001
    assert base64_decoded_size("data:application/octet-stream;base64," + encoded) == 1001
    assert base64_decoded_size("") == 0


def test_audio_video_documents_and_data_are_estimated_from_metadata() -> None:
    counter = ApproxCounter()

    def cost(block: object) -> int:
        return counter.count_message(Message(message_id="m", role="user", content=[block])) - PER_MESSAGE  # type: ignore[list-item]

    assert cost(AudioBlock(media=MediaRef(url="u", duration_ms=10_000))) == 320
    assert cost(AudioBlock(media=MediaRef(url="u", size_bytes=160_000))) == 320
    assert cost(AudioBlock(media=MediaRef(url="u"))) == 960
    assert cost(VideoBlock(media=MediaRef(url="u", duration_ms=2_000))) == 580
    assert cost(DocumentBlock(text="a" * 400)) == 100
    assert cost(DocumentBlock(media=MediaRef(url="u"), pages=[1, 2, 3])) == 4500
    assert cost(DocumentBlock(media=MediaRef(url="u"))) == 1500
    pdf = base64.b64encode(b"%PDF" + b"0" * 179_996).decode()
    assert cost(DataBlock(mime_type="application/pdf", data_base64=pdf)) == 4500
    blob = base64.b64encode(b"z" * 4000).decode()
    assert cost(DataBlock(mime_type="application/octet-stream", data_base64=blob)) == 1000
    image = DataBlock(mime_type="image/jpeg", data_base64=blob, media=MediaRef(kind="data", width=512, height=512))
    assert cost(image) == 255
    for block in (AudioBlock(media=MediaRef(url="u", size_bytes=1)), DataBlock(mime_type="text/csv")):
        assert cost(block) >= 1


def _jpeg_header(width: int, height: int, metadata: int = 0) -> bytes:
    """The start of a baseline JPEG: an APP1 segment of ``metadata`` bytes (EXIF, say), then the frame header that
    states the size (what a reader of dimensions looks at; no scan data follows)."""
    import struct

    app1 = b"\xff\xe1" + struct.pack(">H", metadata + 2) + b"\x00" * metadata
    frame = b"\xff\xc0" + struct.pack(">HBHHB", 11, 8, height, width, 1) + b"\x01\x11\x00"
    return b"\xff\xd8" + app1 + frame + b"\xff\xd9"


def test_an_inline_image_is_priced_by_the_size_its_header_states() -> None:
    """Before, a 640x400 screenshot was priced as a square of its byte size (765 tokens where the tiling charges
    425) and a wide banner could cost more than that square; the header's width and height decide now."""
    counter = TiktokenCounter()
    screenshot = base64.b64encode(png(640, 400)).decode()
    for data in (
        screenshot,
        f"data:image/png;base64,{screenshot}",
        "\n".join(screenshot[i : i + 76] for i in range(0, len(screenshot), 76)),
    ):
        assert counter.count_message(_image(kind="data", data_base64=data)) - PER_MESSAGE == 425
    banner = base64.urlsafe_b64encode(_jpeg_header(2000, 100, metadata=30_000)).decode()
    assert counter.count_message(_image(kind="data", data_base64=banner)) - PER_MESSAGE == image_tokens_for_size(
        2000, 100
    )
    given = _image(kind="data", data_base64=screenshot, width=1024, height=1024)
    assert counter.count_message(given) - PER_MESSAGE == 85 + 4 * 170  # stated dimensions win
    unreadable = base64.b64encode(b"\xff\xd8" + b"\x00" * 70_000).decode()  # no frame header in the first 64 kB
    assert counter.count_message(_image(kind="data", data_base64=unreadable)) - PER_MESSAGE > 0
