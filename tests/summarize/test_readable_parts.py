"""Parts of a kind no format models reach summaries as what a reader can use, not as their raw JSON.

Such a part (an Anthropic server-side web search, a Responses image generation call...) is kept as a text block
holding its JSON, so the message counts and passes through unchanged. That JSON is mostly ids, type tags and
opaque values (encrypted page content, signatures, base64 images): a summary that quoted it spent its tokens on
noise, and the extractive summarizer even ranked the blobs high as rare identifiers.
"""

from __future__ import annotations

from windowkeeper.blocks import TextBlock, readable_text
from windowkeeper.llm.formats import from_anthropic, from_responses_input
from windowkeeper.summarize import ExtractiveSummarizer
from windowkeeper.summarize.transcript import render_transcript

BLOB = "EqQBCkYIBxgCKkB" + "x7Rk2mQpZ0aLw9" * 40  # an encrypted page, as Anthropic sends it back

SEARCH_TURN = [
    {"role": "user", "content": "Which tram goes up to the castle in Lisbon? We leave on 14 May."},
    {
        "role": "assistant",
        "content": [
            {
                "type": "server_tool_use",
                "id": "srvtoolu_01",
                "name": "web_search",
                "input": {"query": "Lisbon tram castle"},
            },
            {
                "type": "web_search_tool_result",
                "tool_use_id": "srvtoolu_01",
                "content": [
                    {
                        "type": "web_search_result",
                        "url": "https://example.org/lisbon-tram-28",
                        "title": "Tram 28 climbs to Castelo de Sao Jorge",
                        "encrypted_content": BLOB,
                        "page_age": None,
                    }
                ],
            },
            {"type": "text", "text": "Tram 28 stops below the castle; ride it early to avoid the queue."},
        ],
    },
]


def test_an_unknown_part_reads_as_its_kind_and_readable_values() -> None:
    messages = from_anthropic(None, SEARCH_TURN)
    stand_ins = [b.text for b in messages[1].content if isinstance(b, TextBlock) and b.text.startswith("[unknown ")]
    assert len(stand_ins) == 2 and BLOB in stand_ins[1]  # the stand-in itself keeps everything
    assert readable_text(stand_ins[0]) == "[server_tool_use] query: Lisbon tram castle; name: web_search"
    assert readable_text(stand_ins[1]) == (
        "[web_search_tool_result] title: Tram 28 climbs to Castelo de Sao Jorge; url: https://example.org/lisbon-tram-28"
    )


def test_other_text_is_left_as_it_is() -> None:
    for text in ("plain words", "[unknown kind] not json at all", "[unknown no closing bracket", ""):
        assert readable_text(text) == text
    # a value with spaces, a URL or a short token stays; a run of 32 letters and digits without a space goes
    kept = readable_text('[unknown x] {"a": "two words", "b": "https://h/p?q=' + "a" * 40 + '", "c": "ok-1"}')
    assert kept == "[x] a: two words; b: https://h/p?q=" + "a" * 40 + "; c: ok-1"
    assert readable_text('[unknown x] {"data": "' + "Zm9v" * 20 + '", "call_id": "c1", "n": 3, "ok": true}') == (
        "[x] n: 3; ok: True"
    )
    click = '[unknown computer_call] {"action": {"type": "click", "x": 10, "y": 20}, "type": "computer_call"}'
    assert readable_text(click) == "[computer_call] type: click; x: 10; y: 20"


async def test_the_extractive_summary_keeps_the_result_and_drops_the_blob() -> None:
    summary = await ExtractiveSummarizer().summarize(from_anthropic(None, SEARCH_TURN), max_tokens=300)
    assert "Castelo de Sao Jorge" in summary or "lisbon-tram-28" in summary
    assert "x7Rk2mQpZ0aLw9" not in summary and "encrypted_content" not in summary and "srvtoolu_01" not in summary


def test_the_transcript_a_summarizer_model_reads_drops_the_blob_too() -> None:
    items = [
        {"role": "user", "content": "Draw the castle."},
        {"type": "image_generation_call", "id": "ig_1", "status": "completed", "result": "iVBORw0KGgo" * 60},
        {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Here it is."}]},
    ]
    transcript = render_transcript(from_responses_input(items))
    assert "[image_generation_call] status: completed" in transcript
    assert "iVBORw0KGgo" not in transcript
