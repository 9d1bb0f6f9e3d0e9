"""The provider shapes the ``to_*`` converters write, as types: a converter's result goes to the SDK call as-is.

mypy accepts a dict for an SDK's ``TypedDict`` parameter only when every key has *exactly* the SDK's value type
(TypedDict keys are mutable, so their types are invariant), and where the SDK parameter is a ``list`` (Responses
``input``, Gemini ``contents``) only the SDK's own element type will do. A hand-written copy of the SDKs'
shapes therefore breaks with each SDK release (a new optional key in a nested part is enough), and for Anthropic
it cannot be written at all (its content union includes the SDK's pydantic classes). So:

* **OpenAI Chat Completions and Anthropic** are typed with the SDKs' own request ``TypedDict``\\ s, subclassed
  where a converter writes a key the SDK does not declare (``reasoning_content``, a tool message's ``name``):
  a subclass keeps every value type identical by construction, so it stays assignable to the SDK parameter
  whatever SDK version the user has. The SDKs are optional extras, so they are imported for type checkers
  only; without one installed its types read as ``Any`` (nothing to check against, nothing rejected).
* **Anthropic with unsigned reasoning** (``reasoning="all"``, the default for transcripts) is
  `AnthropicTranscriptMessage`: the API rejects ``thinking`` without a signature, and the type says so.
  ``reasoning="signed"`` (what `Window` and the clients send) returns the SDK's ``MessageParam``.
* **Gemini** is written in the REST spelling (camelCase keys, base64 strings) by default, typed by the
  ``Gemini*`` TypedDicts below; ``to_gemini(..., spelling="sdk")`` writes google-genai's ``ContentDict``
  (snake_case keys, bytes), which ``generate_content(contents=...)`` accepts.
* **OpenAI Responses** input items are our own TypedDicts. An assistant ``message`` item is written as the SDK's
  output message (with an ``id`` and a ``status``: hosts such as the OpenAI Agents SDK read an assistant item as
  model output only then); a ``reasoning`` item without an ``id`` is written only for transcripts.

At run time the SDK-based names are plain ``dict``, so annotations using them still evaluate
(``typing.get_type_hints``) without the SDKs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal, NotRequired, Required, TypeAlias, TypedDict

AudioFormat: TypeAlias = Literal["wav", "mp3"]
"""The audio formats OpenAI's ``input_audio`` parts accept."""

AnthropicImageType: TypeAlias = Literal["image/jpeg", "image/png", "image/gif", "image/webp"]
"""The image MIME types Anthropic accepts in a base64 image source."""

if TYPE_CHECKING:
    from anthropic.types import (
        DocumentBlockParam,
        ImageBlockParam,
        MessageParam,
        RedactedThinkingBlockParam,
        TextBlockParam,
        ThinkingBlockParam,
        ToolResultBlockParam,
        ToolUseBlockParam,
    )
    from google.genai.types import ContentDict, PartDict
    from openai.types.chat import (
        ChatCompletionAssistantMessageParam,
        ChatCompletionContentPartParam,
        ChatCompletionContentPartTextParam,
        ChatCompletionDeveloperMessageParam,
        ChatCompletionFunctionMessageParam,
        ChatCompletionSystemMessageParam,
        ChatCompletionToolMessageParam,
        ChatCompletionUserMessageParam,
    )

    class OpenAIChatAssistantMessage(ChatCompletionAssistantMessageParam, total=False):
        """The SDK's assistant message plus ``reasoning_content`` (DeepSeek-style reasoning; omitted with
        ``include_reasoning=False``)."""

        reasoning_content: str

    class OpenAIChatToolMessage(ChatCompletionToolMessageParam, total=False):
        """The SDK's tool message plus the tool's ``name``, which transcripts carry and the API ignores."""

        name: str

    class AnthropicUnsignedThinkingBlock(TypedDict):
        """A ``thinking`` block without a signature: kept in transcripts, rejected by the API."""

        type: Literal["thinking"]
        thinking: str

    class AnthropicTranscriptMessage(TypedDict):
        """An Anthropic message as a transcript holds it (``to_anthropic(reasoning="all")``)."""

        role: Literal["user", "assistant"]
        content: list[AnthropicBlock | AnthropicUnsignedThinkingBlock]

else:
    OpenAIChatAssistantMessage = OpenAIChatToolMessage = dict
    AnthropicUnsignedThinkingBlock = AnthropicTranscriptMessage = dict
    MessageParam = TextBlockParam = ContentDict = PartDict = dict
    ChatCompletionContentPartParam = ChatCompletionContentPartTextParam = dict
    ChatCompletionDeveloperMessageParam = ChatCompletionSystemMessageParam = ChatCompletionUserMessageParam = dict
    ChatCompletionFunctionMessageParam = dict
    DocumentBlockParam = ImageBlockParam = RedactedThinkingBlockParam = ThinkingBlockParam = dict
    ToolResultBlockParam = ToolUseBlockParam = dict

# -- OpenAI Chat Completions ----------------------------------------------------------------------------------

OpenAIChatSystemMessage: TypeAlias = ChatCompletionSystemMessageParam
OpenAIChatDeveloperMessage: TypeAlias = ChatCompletionDeveloperMessageParam
OpenAIChatUserMessage: TypeAlias = ChatCompletionUserMessageParam
OpenAIChatFunctionMessage: TypeAlias = ChatCompletionFunctionMessageParam
"""The answer to a legacy ``function_call`` (role ``function``), written only for a conversation that used them."""
OpenAIChatUserPart: TypeAlias = ChatCompletionContentPartParam
OpenAIChatTextPart: TypeAlias = ChatCompletionContentPartTextParam
OpenAIChatMessage: TypeAlias = (
    OpenAIChatSystemMessage
    | OpenAIChatDeveloperMessage
    | OpenAIChatUserMessage
    | OpenAIChatAssistantMessage
    | OpenAIChatToolMessage
    | OpenAIChatFunctionMessage
)
"""One ``messages`` entry `to_openai_chat` writes; a list of them is a valid ``chat.completions.create(messages=)``."""

# -- Anthropic Messages ---------------------------------------------------------------------------------------

AnthropicMessage: TypeAlias = MessageParam
"""One ``messages`` entry `to_anthropic(reasoning="signed")` writes (the SDK's ``MessageParam``)."""
AnthropicTextBlock: TypeAlias = TextBlockParam
AnthropicBlock: TypeAlias = (
    TextBlockParam
    | ImageBlockParam
    | DocumentBlockParam
    | ThinkingBlockParam
    | RedactedThinkingBlockParam
    | ToolUseBlockParam
    | ToolResultBlockParam
)
"""A content block `to_anthropic` writes (signed thinking only)."""
AnthropicSystem: TypeAlias = str | list[TextBlockParam]
"""The ``system=`` value: a string, or one text block carrying ``cache_control`` when the system is a breakpoint."""

# -- Gemini (REST spelling) -----------------------------------------------------------------------------------


class GeminiBlob(TypedDict):
    mimeType: str
    data: str
    """Base64."""


class GeminiFileData(TypedDict):
    fileUri: str
    mimeType: NotRequired[str]


class GeminiFunctionCall(TypedDict):
    name: str
    args: dict[str, Any]
    id: NotRequired[str]


class GeminiFunctionResponse(TypedDict):
    name: str
    response: dict[str, Any]
    id: NotRequired[str]
    parts: NotRequired[list[GeminiPart]]
    willContinue: NotRequired[bool]
    """A non-blocking call's intermediate response: more responses to the same call follow."""
    scheduling: NotRequired[Literal["SCHEDULING_UNSPECIFIED", "SILENT", "WHEN_IDLE", "INTERRUPT"]]
    """When the model hears of a non-blocking call's response (google-genai's ``FunctionResponseScheduling``)."""


class GeminiPart(TypedDict, total=False):
    """One part; exactly one of the data keys is set, ``thought``/``thoughtSignature`` may accompany it."""

    text: str
    thought: bool
    thoughtSignature: str
    inlineData: GeminiBlob
    fileData: GeminiFileData
    functionCall: GeminiFunctionCall
    functionResponse: GeminiFunctionResponse


class GeminiContent(TypedDict):
    role: Literal["user", "model"]
    parts: list[GeminiPart]


class GeminiSystemInstruction(TypedDict):
    parts: list[GeminiPart]


GeminiSDKContent: TypeAlias = ContentDict
"""google-genai's ``ContentDict`` (``to_gemini(..., spelling="sdk")``); ``generate_content(contents=)`` takes a list."""
GeminiSDKPart: TypeAlias = PartDict

# -- OpenAI Responses -----------------------------------------------------------------------------------------


class ResponsesInputText(TypedDict):
    type: Literal["input_text"]
    text: str


class ResponsesInputImage(TypedDict):
    type: Literal["input_image"]
    detail: Literal["auto", "low", "high", "original"]
    file_id: NotRequired[str]
    image_url: NotRequired[str]


class ResponsesAudio(TypedDict):
    data: str
    format: AudioFormat


class ResponsesInputAudio(TypedDict):
    type: Literal["input_audio"]
    input_audio: ResponsesAudio


class ResponsesInputFile(TypedDict, total=False):
    type: Required[Literal["input_file"]]
    file_id: str
    file_data: str
    file_url: str
    filename: str


ResponsesInputPart: TypeAlias = ResponsesInputText | ResponsesInputImage | ResponsesInputAudio | ResponsesInputFile


class ResponsesInputMessage(TypedDict):
    type: Literal["message"]
    role: Literal["user", "system", "developer"]
    content: list[ResponsesInputPart]


class ResponsesOutputText(TypedDict):
    type: Literal["output_text"]
    text: str
    annotations: list[dict[str, Any]]


class ResponsesAssistantMessage(TypedDict):
    type: Literal["message"]
    role: Literal["assistant"]
    id: str
    status: Literal["in_progress", "completed", "incomplete"]
    content: list[ResponsesOutputText]


class ResponsesSummaryText(TypedDict):
    type: Literal["summary_text"]
    text: str


class ResponsesReasoningText(TypedDict):
    type: Literal["reasoning_text"]
    text: str


class ResponsesReasoning(TypedDict, total=False):
    type: Required[Literal["reasoning"]]
    summary: Required[list[ResponsesSummaryText]]
    id: str
    content: list[ResponsesReasoningText]
    encrypted_content: str


class ResponsesFunctionCall(TypedDict):
    type: Literal["function_call"]
    call_id: str
    name: str
    arguments: str


class ResponsesFunctionCallOutput(TypedDict):
    type: Literal["function_call_output"]
    call_id: str
    output: str | list[ResponsesInputPart]


class ResponsesCustomToolCall(TypedDict):
    """A call of a custom (freeform) tool: its input is one string."""

    type: Literal["custom_tool_call"]
    call_id: str
    name: str
    input: str


class ResponsesCustomToolCallOutput(TypedDict):
    type: Literal["custom_tool_call_output"]
    call_id: str
    output: str | list[ResponsesInputPart]


class ResponsesLocalShellCallOutput(TypedDict):
    type: Literal["local_shell_call_output"]
    id: str
    output: str


class ResponsesShellOutput(TypedDict):
    """One command's output of a ``shell_call_output``; ``outcome`` is ``{"type": "exit", "exit_code"}`` or
    ``{"type": "timeout"}``."""

    stdout: str
    stderr: str
    outcome: dict[str, Any]


class ResponsesShellCallOutput(TypedDict):
    type: Literal["shell_call_output"]
    call_id: str
    output: list[ResponsesShellOutput]


class ResponsesApplyPatchCallOutput(TypedDict):
    type: Literal["apply_patch_call_output"]
    call_id: str
    status: Literal["completed", "failed"]
    output: str


class ResponsesScreenshot(TypedDict, total=False):
    """What a ``computer_call_output`` holds: the screen after the action, by data URI or URL, or by file id."""

    type: Required[Literal["computer_screenshot"]]
    image_url: str
    file_id: str


class ResponsesComputerCallOutput(TypedDict, total=False):
    type: Required[Literal["computer_call_output"]]
    call_id: Required[str]
    output: Required[ResponsesScreenshot]
    id: str
    acknowledged_safety_checks: list[dict[str, Any]]
    status: str


ResponsesItem: TypeAlias = (
    ResponsesInputMessage
    | ResponsesAssistantMessage
    | ResponsesReasoning
    | ResponsesFunctionCall
    | ResponsesFunctionCallOutput
    | ResponsesCustomToolCall
    | ResponsesCustomToolCallOutput
    | ResponsesLocalShellCallOutput
    | ResponsesApplyPatchCallOutput
    | ResponsesShellCallOutput
    | ResponsesComputerCallOutput
)
"""One input item `to_responses_input` writes."""


__all__ = [
    "AnthropicBlock",
    "AnthropicImageType",
    "AnthropicMessage",
    "AnthropicSystem",
    "AnthropicTextBlock",
    "AnthropicTranscriptMessage",
    "AnthropicUnsignedThinkingBlock",
    "AudioFormat",
    "GeminiBlob",
    "GeminiContent",
    "GeminiFileData",
    "GeminiFunctionCall",
    "GeminiFunctionResponse",
    "GeminiPart",
    "GeminiSDKContent",
    "GeminiSDKPart",
    "GeminiSystemInstruction",
    "OpenAIChatAssistantMessage",
    "OpenAIChatDeveloperMessage",
    "OpenAIChatFunctionMessage",
    "OpenAIChatMessage",
    "OpenAIChatSystemMessage",
    "OpenAIChatTextPart",
    "OpenAIChatToolMessage",
    "OpenAIChatUserMessage",
    "OpenAIChatUserPart",
    "ResponsesAssistantMessage",
    "ResponsesApplyPatchCallOutput",
    "ResponsesAudio",
    "ResponsesComputerCallOutput",
    "ResponsesCustomToolCall",
    "ResponsesCustomToolCallOutput",
    "ResponsesFunctionCall",
    "ResponsesFunctionCallOutput",
    "ResponsesInputAudio",
    "ResponsesInputFile",
    "ResponsesInputImage",
    "ResponsesInputMessage",
    "ResponsesInputPart",
    "ResponsesInputText",
    "ResponsesItem",
    "ResponsesLocalShellCallOutput",
    "ResponsesOutputText",
    "ResponsesReasoning",
    "ResponsesReasoningText",
    "ResponsesScreenshot",
    "ResponsesShellCallOutput",
    "ResponsesShellOutput",
    "ResponsesSummaryText",
]
