"""`SummaryContextManager`: replace old turns by a summary so earlier facts survive at a fraction of the tokens.

The split between "summarize" and "keep" is made on a user-message boundary at or before the ``keep_recent``
point, and never after the newest user message. That keeps every tool call with its results, and the kept part
starts with a user turn (the newest request at least, even with ``keep_recent=0``), which Anthropic and Gemini
require and which no manager may fake by inventing a message. So the kept part may hold more than ``keep_recent``
messages. Nor is the cut made after the start of the turn in progress: a user message sent right after tool
results, before the model replied (an Anthropic ``[tool_result, text]`` turn, a constraint added while the agent
works), does not open a turn of its own, so the task before it, its calls and results stay with it
(`windowkeeper.context._turns`, the rule the budget manager follows too). When that turn does not fit
``token_budget`` beside the summary, it starts at the newest user message instead, as if the line had opened a turn
(logged), so the budget is held and the newest request is still never summarized. When a trigger fires but
nothing lies before that turn (one long request over ``token_budget``, say), nothing can be summarized: the
context is left as it is and an INFO log line says why.

The running summary is bounded. Each new summary is appended (the documented behaviour), and the token trigger
counts the summary along with the messages, since both are sent. Once the summary passes
``max_running_summary_tokens`` it is condensed: the summarizer rewrites it (a re-summary with nothing new), and if
that fails or does not bring it under the bound, its middle lines are cut with a marker. A summarizer that echoes
or pads therefore cannot make the prompt grow without limit. The summarizer is never asked to fold the earlier
summary into its answer while the manager also appends that answer (the earlier summary would be sent twice): on
an append it sees only the messages leaving the context; the earlier summary goes in only when condensing, whose
result replaces it.

Failure is never fatal: every summarizer call goes through `windowkeeper.summarize.failsafe`, so one that raises,
times out (sync ones too) or returns nothing leaves the state exactly as it was (logged as "Summarisation LLM call
failed"), because a context that is too long is recoverable and a lost history is not.

With ``recall`` on (off by default: this is the reference's simple manager), the messages a summary replaces are
also indexed verbatim by a `Recall`, and a new user message that refers back gets a recall message right before
it, filling what the view and the summary leave of ``recall_budget`` (default ``token_budget``). Recall messages
are never summarized and do not count toward either trigger, so recall never changes when or what is summarized
(counting them made summaries come earlier, in other batches, and the running summary lost facts to its bound).
One stays in the view while the user message it serves does and the view with it fits ``recall_budget``; past
that the oldest go first (`fit_recall`), which changes the prompt only from where they stood.
"""

from __future__ import annotations

import logging
from collections.abc import Generator, Sequence
from typing import Any, ClassVar

from .._bridge import run_sync
from .._cut import Cut, cut_text
from .._validate import check_positive_int, check_timeout
from ..errors import ConfigurationError
from ..messages import Message
from ..prompt import summary_tokens, system_costs
from ..tokenizing.estimate import DOCUMENTED_ESTIMATE
from ..tokens import TokenCounter, default_counter
from ..units import group_units
from ._policy import remove_completed_tool_sequences, split_system, summary_cut
from ._recall_step import make_recall
from ._turns import newest_user_index, turn_start
from .base import BaseContextManager, S, SummaryRequest, adapt_summarizer
from .message import check_non_negative_int
from .recall import Recall, join_recall, split_recall

logger = logging.getLogger(__name__)

API_STYLES = ("responses", "chat")
CONDENSE_INSTRUCTIONS = (
    "The text below is the running summary of an earlier conversation, and it has grown too long. Rewrite it as "
    "one shorter summary in the third person that keeps every fact: names, numbers with their units, dates, file "
    "paths, identifiers, tool results, errors, decisions and open questions. Reply with the summary text only."
)
CUT_MARKER = "[... summary lines cut to stay within its bound ...]"
SUMMARY_CUT = Cut(marker=CUT_MARKER, head_share=(1, 3), lines=True)
"""How a running summary over its bound is cut (see `cut_summary`)."""
MAX_ROUNDS = 3
"""Summaries one call may make to bring the prompt under ``token_budget`` (the first almost always does)."""


def estimate_tokens(messages: Sequence[Message]) -> int:
    """The documented trigger estimate (`DocumentedEstimate`): one token per four characters of text plus tool
    calls' string form.

    Deliberately not the exact counter, so the token trigger fires where the reference says it does.
    """
    return DOCUMENTED_ESTIMATE.count_messages(messages)


def estimate_text_tokens(text: str | None) -> int:
    """The same estimate for a plain text (the running summary): one token per four characters."""
    return DOCUMENTED_ESTIMATE.count_text(text) if text else 0


def cut_summary(summary: str, max_tokens: int) -> str:
    """``summary`` within ``max_tokens`` (estimated) by cutting its middle lines, with one `CUT_MARKER` line.

    Whole lines are kept from both ends (`SUMMARY_CUT`): the first third of the room holds the oldest facts (who
    the user is, the task), the rest the newest. Earlier markers are dropped first, so a summary cut many times
    still holds one marker and no repeated line. A single line longer than its share is shortened by characters.
    """
    if estimate_text_tokens(summary) <= max_tokens:
        return summary
    chars = max_tokens * DOCUMENTED_ESTIMATE.chars_per_token
    text = cut_text(summary, max(chars - len(CUT_MARKER) - 2, 0), SUMMARY_CUT)
    return text if estimate_text_tokens(text) <= max_tokens else text[:chars]


def _is_offline_name(name: str) -> bool:
    from ..summarize import OFFLINE_NAMES

    return name.strip().lower() in OFFLINE_NAMES


def _is_summarizer_like(obj: object) -> bool:
    return callable(getattr(obj, "summarize", None)) or callable(obj)


def _append_summary(previous: str | None, summary: str) -> str:
    """Append ``summary`` after a blank line, without the lines the summary so far already holds word for word.

    Summarizers often restate a fact in the same words (a recurring tool result, the user's goal), within one answer
    or across answers; appending those lines again would make the summary grow without adding anything.
    """
    known = {line.strip() for line in (previous or "").splitlines() if line.strip()}
    fresh: list[str] = []
    for line in summary.splitlines():
        key = line.strip()
        if key and key in known:
            continue
        known.add(key)
        fresh.append(line)
    text = "\n".join(fresh).strip()
    if not previous:
        return text
    return f"{previous}\n\n{text}" if text else previous


class SummaryContextManager(BaseContextManager[S]):
    """Summarize messages older than the ``keep_recent`` newest ones once the context passes a threshold.

    Triggers (either one): more than ``max_messages`` messages in the context, or an estimated token count (see
    `estimate_tokens`) of the context plus the running summary above ``token_budget``. Both None disables
    summarizing. ``token_budget`` is also held exactly: the prompt as sent (the messages and the summary under its
    header, counted with ``counter``, default the shared o200k counter) is summarized down to it when the estimate
    misses (short turns cost more than four characters a token), and the cut keeps fewer than ``keep_recent``
    messages when those alone would not fit. The one prompt it cannot bring under the budget is the newest user
    turn on its own (the request being answered is never summarized); that is logged. On a trigger, the
    non-system messages before the cut (see module docs) are summarized (at most ``max_summary_tokens``); the new
    text is appended to ``context_summary`` after a blank line, and ``context``
    becomes the system messages followed by the kept messages.

    ``max_running_summary_tokens`` bounds the running summary (exact tokens); past it the summary is condensed
    by the summarizer, or cut in the middle with a marker when that fails. It defaults to
    ``4 * max_summary_tokens`` and is capped at half of ``token_budget``, so the summary never crowds out the
    messages it is meant to make room for.

    Who summarizes: ``summarizer=`` (an object with an async ``summarize``, a sync/async callable
    ``(messages, previous_summary) -> str``, or the name ``"extractive"``), else ``model``: ``"extractive"`` for the
    offline summarizer, otherwise a model name whose LLM client is created once, on first use (so no API key is
    needed to construct the manager).

    ``remove_tool_msgs=True`` strips finished tool sequences before the thresholds are checked and before
    summarizing; like every other change, that only happens when a summary is actually made.

    ``recall=True`` (or a `Recall` to share) indexes what is summarized and places a recall message before a new
    user message that asks for it (see the module docstring); ``recall_budget`` is the token budget, counted with
    ``counter`` (default: the recall's counter), that the view, the summary and the recall message share.
    """

    _log: ClassVar[logging.Logger] = logger

    def __init__(
        self,
        model: str | None = None,
        *,
        max_messages: int | None = 30,
        token_budget: int | None = None,
        keep_recent: int = 8,
        remove_tool_msgs: bool = False,
        summary_system_prompt: str | None = None,
        max_summary_tokens: int = 600,
        max_running_summary_tokens: int | None = None,
        api_style: str = "responses",
        summarizer: Any = None,
        provider: str | None = None,
        base_url: str | None = None,
        api_key: str | None = None,
        timeout: float = 60.0,
        max_retries: int = 2,
        recall: bool | Recall = False,
        recall_budget: int | None = None,
        counter: TokenCounter | None = None,
    ) -> None:
        check_non_negative_int("max_messages", max_messages, allow_none=True)
        if token_budget is not None:
            check_positive_int("token_budget", token_budget, hint=" or None to disable it")
        check_non_negative_int("keep_recent", keep_recent)
        check_positive_int("max_summary_tokens", max_summary_tokens)
        if max_running_summary_tokens is not None:
            check_positive_int("max_running_summary_tokens", max_running_summary_tokens, hint=" or None")
        if api_style not in API_STYLES:
            raise ConfigurationError(
                f"api_style must be 'responses' or 'chat', got {api_style!r}; "
                "use 'chat' for models served only through Chat Completions",
            )
        check_timeout("timeout", timeout)
        check_non_negative_int("max_retries", max_retries)
        if summary_system_prompt is not None and not isinstance(summary_system_prompt, str):
            raise ConfigurationError(
                f"summary_system_prompt must be a string or None, got {type(summary_system_prompt).__name__}",
            )
        if model is not None and (not isinstance(model, str) or not model.strip()):
            raise ConfigurationError(f"model must be a non-empty model name such as 'gpt-4o-mini', got {model!r}")
        if summarizer is None and model is None:
            raise ConfigurationError(
                "SummaryContextManager needs model= (e.g. 'gpt-4o-mini', or 'extractive' for the offline "
                "summarizer) or summarizer= (an object with async summarize(...) or a callable)",
            )
        if isinstance(summarizer, str):
            if not _is_offline_name(summarizer):
                raise ConfigurationError(
                    f"summarizer={summarizer!r} is not a known summarizer name; use 'extractive', pass an object "
                    "with an async summarize(...) method, or a callable (messages, previous_summary) -> str",
                )
        elif summarizer is not None and not _is_summarizer_like(summarizer):
            raise ConfigurationError(
                f"summarizer must have an async summarize(...) method or be callable, got {type(summarizer).__name__}",
            )

        self.model = model
        self.max_messages = max_messages
        self.token_budget = token_budget
        self.keep_recent = keep_recent
        self.remove_tool_msgs = bool(remove_tool_msgs)
        self.summary_system_prompt = summary_system_prompt
        self.max_summary_tokens = max_summary_tokens
        bound = max_running_summary_tokens if max_running_summary_tokens is not None else 4 * max_summary_tokens
        if token_budget is not None:
            bound = min(bound, max(token_budget // 2, 1))
        self.max_running_summary_tokens: int = bound
        self.api_style = api_style
        self.provider = provider
        self.base_url = base_url
        self.api_key = api_key
        self.timeout = float(timeout)
        self.max_retries = max_retries
        self._summarizer_spec: Any = summarizer
        self._summarizer: Any = None
        self._owns_summarizer = False
        if summarizer is not None and not isinstance(summarizer, str):
            self._summarizer = adapt_summarizer(summarizer)
        self.recall = make_recall(recall, counter)
        self.counter: TokenCounter = counter or (self.recall.counter if self.recall is not None else default_counter())
        if recall_budget is not None:
            check_positive_int("recall_budget", recall_budget, hint=" (tokens) or None")
        self.recall_budget = recall_budget if recall_budget is not None else token_budget
        if self.recall is not None and self.recall_budget is None:
            raise ConfigurationError(
                "SummaryContextManager(recall=True) needs token_budget= or recall_budget=<tokens>: recall fills "
                "the room the view leaves in a token budget, and max_messages alone sets none",
            )

    def __repr__(self) -> str:
        who = self.model if self._summarizer_spec is None else self._summarizer_spec
        return (
            f"SummaryContextManager({who!r}, max_messages={self.max_messages}, token_budget={self.token_budget}, "
            f"keep_recent={self.keep_recent})"
        )

    # -- summarizer -----------------------------------------------------------------------------------------

    @property
    def summarizer(self) -> Any:
        """The summarizer in use, built on first access (an LLM client is created only here, once)."""
        if self._summarizer is None:
            from ..summarize import get_summarizer

            name = self._summarizer_spec if isinstance(self._summarizer_spec, str) else self.model
            assert name is not None
            if _is_offline_name(name):
                self._summarizer = get_summarizer(name)
            else:
                self._summarizer = get_summarizer(
                    name,
                    provider=self.provider,
                    api_style=self.api_style,
                    base_url=self.base_url,
                    api_key=self.api_key,
                    timeout=self.timeout,
                    max_retries=self.max_retries,
                )
            self._owns_summarizer = True
        return self._summarizer

    @summarizer.setter
    def summarizer(self, value: Any) -> None:
        self._summarizer = value
        self._owns_summarizer = False

    async def aclose(self) -> None:
        """Close the summarizer this manager built from a model name (its LLM client's connections on the running
        loop); a summarizer passed in belongs to the caller, who closes it."""
        if self._owns_summarizer and hasattr(self._summarizer, "aclose"):
            await self._summarizer.aclose()

    def close(self) -> None:
        """`aclose` from sync code (the connections of the sync calls, on this thread's own loop)."""
        run_sync(self.aclose, caller="SummaryContextManager.close()", instead="await manager.aclose()")

    @property
    def summary_timeout(self) -> float:
        """Seconds one summarizer call may take: ``timeout``, which the LLM client is also built with."""
        return self.timeout

    @summary_timeout.setter
    def summary_timeout(self, value: float) -> None:
        self.timeout = value

    # -- decision -------------------------------------------------------------------------------------------

    def should_summarize(self, messages: Sequence[Message], summary: str | None = None) -> bool:
        """Whether either trigger fires for ``messages`` (after tool-sequence removal when enabled) sent along with
        the running ``summary``."""
        if self.max_messages is not None and len(messages) > self.max_messages:
            return True
        if self.token_budget is None:
            return False
        if estimate_tokens(messages) + estimate_text_tokens(summary) > self.token_budget:
            return True
        return self.sent_tokens(messages, summary) > self.token_budget

    def sent_tokens(self, messages: Sequence[Message], summary: str | None) -> int:
        """The exact size of ``messages`` and ``summary`` as a prompt: the system messages and the summary (under
        its header) as the one system text the prompt assembles, then every other message."""
        systems = [m.text() for m in messages if m.role == "system"]
        others = [m for m in messages if m.role != "system"] if systems else messages
        return self.counter.count_messages(others) + system_costs(systems, summary, None, self.counter).total

    def _fitting_cut(
        self, systems: list[Message], others: list[Message], cut: int, newest: int, summary: str | None
    ) -> int:
        """``cut`` moved to later user messages (never past ``newest``) until what is kept fits ``token_budget``
        beside the summary so far and a new one of ``max_summary_tokens``."""
        budget = self.token_budget
        if budget is None or cut >= newest:
            return cut
        count = self.counter.count_message
        room = budget - self.sent_tokens(systems, summary) - self.max_summary_tokens
        kept = sum(count(m) for m in others[cut:])
        while kept > room and cut < newest:
            nxt = next((i for i in range(cut + 1, newest + 1) if others[i].role == "user"), newest)
            kept -= sum(count(m) for m in others[cut:nxt])
            cut = nxt
        return cut

    def _fits(self, systems: list[Message], others: list[Message], cut: int, summary: str | None) -> bool:
        """Whether what is kept from ``cut`` on fits ``token_budget`` beside the summary so far and a new one."""
        if self.token_budget is None:
            return True
        count = self.counter.count_message
        room = self.token_budget - self.sent_tokens(systems, summary) - self.max_summary_tokens
        return sum(count(m) for m in others[cut:]) <= room

    def _turn_cut(
        self, systems: list[Message], others: list[Message], cut: int, newest: int, summary: str | None
    ) -> int:
        """Where to cut inside the newest turn when, cut at its user message, it still does not fit: an agent's
        turn (one request, then many tool calls and results) is the whole view, and keeping it whole would send
        every later prompt over ``token_budget``. The cut moves to later unit starts (a tool call never loses its
        results), never past the newest unit; the user message that opened the turn stays. ``cut`` when no move
        is needed or possible."""
        budget = self.token_budget
        if budget is None or cut != newest or newest >= len(others):  # no turn to cut inside (only system text)
            return cut
        count = self.counter.count_message
        room = budget - self.sent_tokens(systems, summary) - self.max_summary_tokens
        opener = count(others[newest])
        tail = sum(count(m) for m in others[newest + 1 :])
        position = previous = newest + 1
        for unit in group_units(others[newest:])[1:]:
            if opener + tail <= room:
                break
            start = newest + unit.start
            tail -= sum(count(m) for m in others[previous:start])
            position = previous = start
        if opener + tail > room:
            logger.info(
                "SummaryContextManager: the newest unit with the user message that opened its turn (%d tokens) is "
                "over the room token_budget=%d leaves beside the summary (%d); it is kept whole",
                opener + tail,
                budget,
                room,
            )
        return position if position > newest + 1 else cut

    def select(
        self,
        context: Sequence[Message],
        summary: str | None = None,
    ) -> tuple[list[Message], list[Message], list[Message]] | None:
        """``(system, to_summarize, kept)`` for ``context`` and the running ``summary``, or None when no summary
        should be made."""
        history, recalls = split_recall(context)
        working = remove_completed_tool_sequences(history) if self.remove_tool_msgs else history
        if not self.should_summarize(working, summary):
            return None
        systems, others = split_system(working)
        # the newest user message (the request being answered) always stays, whatever keep_recent says: a view
        # without a user turn is rejected by Anthropic and Gemini, and the model would not know what it is doing
        newest_user = newest_user_index(others) or 0
        # and with it the turn in progress: a user line sent right after tool results does not open a turn, the
        # task those calls serve is still being answered (`turn_start`)
        start = turn_start(others) or 0
        cut = self._fitting_cut(systems, others, min(summary_cut(others, self.keep_recent), start), start, summary)
        if cut == start < newest_user and not self._fits(systems, others, start, summary):
            cut = self._fitting_cut(systems, others, cut, newest_user, summary)
            logger.info(
                "SummaryContextManager: the turn in progress (from the user message before the tool results the "
                "newest user message was sent with) does not fit token_budget=%d; the turn starts at the newest "
                "user message instead, and the task before it is summarized",
                self.token_budget,
            )
        inside = self._turn_cut(systems, others, cut, newest_user, summary)
        if inside > newest_user:  # the opener stays live, what it led to up to ``inside`` is summarized
            old = [*others[:newest_user], *others[newest_user + 1 : inside]]
            return systems, old, join_recall([others[newest_user], *others[inside:]], recalls)
        if cut == 0:
            logger.info(
                "SummaryContextManager: a trigger fired but nothing can be summarized (%d messages; keep_recent=%d, "
                "and the turn in progress, the request being answered, is always kept whole); context left as it is",
                len(others),
                self.keep_recent,
            )
            return None
        return systems, others[:cut], join_recall(others[cut:], recalls)

    def _summarize(self, old: list[Message]) -> Generator[SummaryRequest, str | None, str | None]:
        """A summary of ``old`` alone (it is appended, so the earlier summary is not sent), within
        ``max_summary_tokens``; None on any failure."""
        limit = self.max_summary_tokens
        text = yield SummaryRequest(old, None, limit, self.summary_system_prompt)
        if text is None:
            return None
        if estimate_text_tokens(text) > limit:
            logger.info(
                "the summarizer returned ~%d tokens (max_summary_tokens=%d); cut", estimate_text_tokens(text), limit
            )
            text = cut_summary(text, limit)
        return text

    def _bounded(
        self, summary: str, bound: int | None = None, target: int | None = None
    ) -> Generator[SummaryRequest, str | None, str]:
        """``summary`` if it is within ``bound`` (default ``max_running_summary_tokens``); else condensed by the
        summarizer to ``target`` (default half the bound, so the next appends do not condense again at once), else
        cut to it.

        Sizes are exact (``counter``): short lines of numbers and names cost up to twice what four characters a
        token says, and an estimated bound let the summary alone outgrow ``token_budget``."""
        bound = self.max_running_summary_tokens if bound is None else bound
        size = self.counter.count_text(summary)
        if size <= bound:
            return summary
        target = max(bound // 2, 1) if target is None else target
        condensed = yield SummaryRequest([], summary, target, CONDENSE_INSTRUCTIONS)
        if condensed is not None and self.counter.count_text(condensed) <= bound:
            logger.info("running summary condensed from %d to %d tokens", size, self.counter.count_text(condensed))
            return condensed
        logger.info("running summary of %d tokens is over its bound (%d) and was not condensed; cut", size, bound)
        return self._cut_exact(summary, target)

    def _summary_in_room(self, state: S) -> Generator[SummaryRequest, str | None, str]:
        """The running summary, made to fit the room the view leaves in ``token_budget``.

        The kept turn can outgrow the room planned for it (a long tool result arrives after the last summary, or
        the newest turn alone is most of the budget), and then the summary, not the turn being answered, gives
        way: condensed or cut to the room, dropped when not even its header fits. It stays whole when the view
        is over the budget without it (the newest unit alone is larger), since nothing brings that prompt under
        and a cut would lose the history for nothing."""
        summary = state.context_summary or ""
        assert self.token_budget is not None
        history, _ = split_recall(state.context)
        bare = self.sent_tokens(history, None)
        cost = summary_tokens(summary, self.counter, [m.text() for m in history if m.role == "system"])
        room = self.token_budget - bare
        if cost <= room or room < 0:
            return summary
        bound = room - (cost - self.counter.count_text(summary))  # the header and separators stay as they are
        if bound < 1:
            logger.info(
                "SummaryContextManager: the running summary (%d tokens) was dropped: the kept turn leaves %d of "
                "token_budget=%d, less than the summary's header",
                cost,
                max(room, 0),
                self.token_budget,
            )
            return ""
        return (yield from self._bounded(summary, bound, bound))

    def _cut_exact(self, summary: str, target: int) -> str:
        """`cut_summary` to ``target`` exact tokens: the estimated cut, tightened by the measured ratio.

        A bound of a token or two is below what the cut marker alone costs, so when the tightened cut is still
        over, the text is shortened by characters until it is within ``target``: the bound is documented in exact
        tokens, and a summary one token over it at a tiny ``token_budget`` was a prompt over the budget."""
        text = cut_summary(summary, target)
        for _ in range(4):
            exact = self.counter.count_text(text)
            if exact <= target:
                return text
            text = cut_summary(summary, max(1, int(estimate_text_tokens(text) * target / exact * 0.95)))
        while text and self.counter.count_text(text) > target:
            text = text[: len(text) * 3 // 4]
        return text

    # -- the planning core (`BaseContextManager` drives it sync and async) ------------------------------------

    def plan(self, state: S) -> Generator[SummaryRequest, str | None, S]:
        before = self._begin_trim(state)
        made = 0
        step = self.start_recall(state)
        for _ in range(MAX_ROUNDS):
            previous = state.context_summary or None
            planned = self.select(state.context, previous)
            if planned is None:
                break
            systems, old, kept = planned
            summary = yield from self._summarize(old)
            if summary is None:
                break
            state.context_summary = yield from self._bounded(_append_summary(previous, summary))
            state.context = systems + kept
            made += 1
            if self.token_budget is None or not self._over_budget(state):
                break
        if self.token_budget is not None and state.context_summary:
            state.context_summary = yield from self._summary_in_room(state)
        if step is not None:
            # hands over what left (the summarized messages and, with remove_tool_msgs, the finished tool
            # sequences), then places the recall message in what the view and the summary leave of the budget
            systems_text = [m.text() for m in state.context if m.role == "system"]
            step.finish(state, extra=summary_tokens(state.context_summary or None, step.recall.counter, systems_text))
        self._finish_trim(before, state, summaries_made=made)
        return state

    def _over_budget(self, state: S) -> bool:
        history, _ = split_recall(state.context)
        tokens = self.sent_tokens(history, state.context_summary or None)
        assert self.token_budget is not None
        if tokens <= self.token_budget:
            return False
        _, others = split_system(history)
        newest = max((i for i, m in enumerate(others) if m.role == "user"), default=0)
        if newest == 0:
            logger.info(
                "SummaryContextManager: the newest user turn alone (%d tokens with the summary) is over "
                "token_budget=%d; it is never summarized, so this prompt stays over",
                tokens,
                self.token_budget,
            )
        return True
