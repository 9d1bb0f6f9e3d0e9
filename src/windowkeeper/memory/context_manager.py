"""`MemoryContextManager`: the three-tier memory as the context manager of a `StateGraph` / `Agent`.

The graph hands a manager the state before each model call (and when it persists a run). This adapter adds the
messages of ``state.context`` the memory has not seen yet as events of the thread's session, lets the memory's
tiers run, and puts the memory's view back: live events into ``state.context``, the structured summary (rendered
once) into ``state.context_summary``, which the `Agent` sends in the system zone. History stays in the memory's
store, so a durable memory (`SQLiteMemory`, `TDAIMemory`) carries a thread across processes.

With ``recall`` on (off by default), what the memory compacts or summarizes away is indexed verbatim by a
`Recall` (the originals, not the gists), and a new user message that refers back gets a recall message right
before it in ``state.context``, filling what the memory's view leaves of its ``pre_rot_threshold`` (the budget
the memory keeps its view under). Recall messages are never added to the memory: they are the manager's view of
old history, not new turns. One stays in the view, byte for byte, until the memory's next compaction or summary
changes the view's prefix anyway; the one serving the current turn stays through that too, so a turn's tool steps
keep seeing what was recalled for it. Only if the view grows until it and the recall messages would pass
``pre_rot_threshold`` do the recall messages of earlier turns go early, all in that one call: the prompt changes
from the oldest of them on anyway, and dropping one per call as the view went on growing changed it call after call.
They also all go for a new question (a user message with a question mark) when the room left (under a tenth of the
budget) holds its smallest recall message only without them: the newest question's recall comes first.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Generator, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, NamedTuple

from .._cache import LRUCache
from ..context._recall_step import RecallStep, continues, make_recall
from ..context.base import BaseContextManager, PlanStep, ThreadSeed
from ..context.recall import Recall, asks_question, join_recall, newest_user
from ..errors import ConfigurationError
from ..messages import Message
from ..prompt import summary_tokens
from ..prompt.recall import is_recall
from ..state import AgentState
from .backends import InMemoryMemory
from .base import DEFAULT_SESSION, BaseMemory
from .structured import StructuredSummary

logger = logging.getLogger(__name__)

SUMMARY_ID_PREFIX = "summary:"
RECALL_ROOM_DIVISOR = 10
"""A new turn's recall may make the recall messages of earlier turns go when less than ``1/RECALL_ROOM_DIVISOR``
of the budget is left and its smallest recall message does not fit."""
MAX_RECALL_SESSIONS = 1024
"""Sessions whose recall state (the previous view and its originals) a manager keeps, least recently used out
first; an evicted session's next call rebuilds it from the stored history, as after a restart."""


class _Ingested(NamedTuple):
    """What one trim's store work (`MemoryContextManager._ingest`) read back."""

    added: list[Message]
    """The messages of the state the memory had not seen, now added to it, in order."""
    had_history: bool
    """Whether the session held any event before this call."""
    summaries_before: int
    """Active summaries before the new messages were added."""
    view: list[Message]
    """The memory's view after the adds (its summaries as system messages included)."""
    summaries: list[StructuredSummary]
    """The memory's active summaries after the adds."""


@dataclass
class _RecallTrack:
    """What recall remembers of one session's view between calls."""

    view: tuple[Message, ...] = ()
    """The memory's view (without summaries and recall messages) the previous call returned."""
    live: dict[str, Message] = field(default_factory=dict)
    """Originals of the view's messages not yet handed to recall, by id: what to index when one leaves."""
    placed: list[Message] = field(default_factory=list)
    """Recall messages still in the view, oldest first."""


class MemoryContextManager(BaseContextManager[AgentState]):
    """Runs a `BaseMemory` as a graph's context manager (``StateGraph(context_manager=MemoryContextManager(...))``).

    ``memory`` defaults to an `InMemoryMemory` built from ``memory_options`` (e.g. ``thresholds=``). The session
    is ``session_id`` when given, else the run's ``thread_id``, so each thread has its own session.

    ``recall=True`` (or a `Recall` to share) turns on query-aware recall (see the module docstring); the recall
    index lives in this process, so after a restart the first call of a session reads its history once to rebuild
    it.

    The trim is a planning core (`plan`) like every strategy's: the store work is the one awaitable it yields, so
    the base provides ``trim_context`` and ``atrim_context`` from it.
    """

    _io_needed: ClassVar[str] = "its memory's store"

    def __init__(
        self,
        memory: BaseMemory[Any] | None = None,
        *,
        session_id: str | None = None,
        recall: bool | Recall = False,
        **memory_options: Any,
    ) -> None:
        if memory is not None and memory_options:
            raise ConfigurationError(
                f"pass either a memory or options to build one, not both (got {sorted(memory_options)})",
            )
        if memory is not None and not isinstance(memory, BaseMemory):
            raise ConfigurationError(f"memory must be a BaseMemory (e.g. SQLiteMemory(path)), got {memory!r}")
        if session_id is not None and (not isinstance(session_id, str) or not session_id):
            raise ConfigurationError(f"session_id must be a non-empty string or None, got {session_id!r}")
        self.memory: BaseMemory[Any] = memory if memory is not None else InMemoryMemory(**memory_options)
        self.session_id = session_id
        self.recall: Recall | None = make_recall(recall, self.memory.counter)
        self._recall_tracks: LRUCache[str, _RecallTrack] = LRUCache(MAX_RECALL_SESSIONS)

    def _session(self, state: AgentState) -> str:
        return self.session_id or state.execution_meta.thread_id or DEFAULT_SESSION

    def plan(self, state: AgentState) -> Generator[PlanStep, Any, AgentState]:
        """The trim as a planning core: the store work (`_ingest`) is yielded as one awaitable, and the recall
        bookkeeping around the memory's view runs as plain code (yielding the history read it may need)."""
        before = self._begin_trim(state)
        sid = self._session(state)
        ingested: _Ingested = yield self._ingest(sid, state.context)
        summaries = ingested.summaries
        context = [m for m in ingested.view if not str(m.message_id).startswith(SUMMARY_ID_PREFIX)]
        if self.recall is not None:
            context = yield from self._with_recall(sid, context, ingested.added, ingested.had_history, summaries)
        state.context = context
        if summaries or ingested.summaries_before:  # the memory's summaries, also when its last one left the view
            state.context_summary = "\n\n".join(s.render() for s in summaries) or None
        self._finish_trim(before, state, summaries_made=max(0, len(summaries) - ingested.summaries_before))
        return state

    async def _ingest(self, sid: str, context: Sequence[Message]) -> _Ingested:
        """Add the messages of ``context`` the memory has not seen to session ``sid`` (its tiers run on each add)
        and read its view back. Only store calls, each depending on the one before, so the core yields them as one
        awaitable: a sync trim crosses into the event loop once, not once per call."""
        known = {str(m.message_id) for m in await self.memory.messages(sid)}
        had_history = bool(known)
        summaries_before = len(await self.memory.summaries(sid))
        added: list[Message] = []
        for message in context:
            mid = str(message.message_id)
            # recall messages are the manager's view of old history, never history of their own
            if mid in known or mid.startswith(SUMMARY_ID_PREFIX) or is_recall(message):
                continue
            await self.memory.add(message, session_id=sid)
            known.add(mid)
            added.append(message)
        view = await self.memory.messages(sid)
        summaries = await self.memory.summaries(sid)
        return _Ingested(added, had_history, summaries_before, view, summaries)

    def _sent_tokens(self, context: list[Message], summaries: Sequence[StructuredSummary]) -> int:
        """What the view costs as a prompt: its messages, and the rendered summaries under their header in the
        system text (the memory's own count prices a summary as an event, a few tokens less)."""
        counter = self.memory.counter
        summary = "\n\n".join(s.render() for s in summaries) or None
        systems = [m.text() for m in context if m.role == "system"]
        return counter.count_messages(context) + summary_tokens(summary, counter, systems)

    def _with_recall(
        self,
        sid: str,
        context: list[Message],
        added: list[Message],
        had_history: bool,
        summaries: Sequence[StructuredSummary] = (),
    ) -> Generator[Awaitable[Any], Any, list[Message]]:
        """``context`` (the memory's view) with its recall messages: index what left, keep what was placed, and
        place one for a new user message (the context package's recall step, `RecallStep`). Part of the planning
        core: it yields the one store read it may need (`_recall_history`)."""
        recall = self.recall
        assert recall is not None
        step = RecallStep(recall, sid)
        tracks = self._recall_tracks
        track = tracks.get(sid)
        if track is None:
            track = _RecallTrack()
            tracks.put(sid, track)  # bounded: a server sees many sessions, and each track holds originals
            if had_history:  # a session this process has not seen: what left the view before is in the history
                yield from self._recall_history(step, track, context)
        step.observe(added)
        for message in added:
            track.live[str(message.message_id)] = message
        extended = continues(context, track.view) and len(context) == len(track.view) + len(added)
        if not extended:
            self._recall_left(step, track, context)
            # the prefix changed anyway: older recall messages age out with it, the current turn's stays
            i = newest_user(context)
            current = str(context[i].message_id) if i is not None else None
            track.placed = [r for r in track.placed if r.metadata.get("serves") == current]
        track.view = tuple(context)
        shown = {str(m.message_id) for m in context}
        track.placed = [r for r in track.placed if r.metadata.get("serves") in shown]
        i = newest_user(context)
        new_turn = i is not None and step.served() != str(context[i].message_id)
        budget = self.memory.thresholds.pre_rot_threshold
        room = 0
        if track.placed or new_turn:
            memory_tokens = self._sent_tokens(context, summaries)
            count = recall.counter.count_message
            kept = sum(count(r) for r in track.placed)
            if track.placed and memory_tokens + kept > budget:
                # over the budget (the view grew since they were placed): the prompt changes from the oldest one
                # on anyway, so every one of an earlier turn goes in that one change, instead of one per call as
                # the view goes on growing (each a changed prompt prefix)
                serving = str(context[i].message_id) if i is not None else None
                track.placed = [r for r in track.placed if r.metadata.get("serves") == serving]
                kept = sum(count(r) for r in track.placed)
                while track.placed and memory_tokens + kept > budget:
                    kept -= count(track.placed.pop(0))
            room = budget - memory_tokens - kept
            if (
                new_turn
                and kept
                and i is not None
                and room < budget // RECALL_ROOM_DIVISOR
                and asks_question(context[i].text())
            ):
                # a new question with less than a tenth of the budget left: when its smallest recall message does
                # not fit there but would without the recall messages of earlier turns, those go (all together, as
                # above) to make it, as the budget manager cuts for it (`TokenBudgetContextManager
                # ._wants_recall_room`); the index is asked only then
                serving = str(context[i].message_id)
                own = [r for r in track.placed if r.metadata.get("serves") == serving]
                freed = kept - sum(count(r) for r in own)
                view = join_recall(context, {str(r.metadata.get("serves")): r for r in track.placed})
                if freed and room < recall.least_room(step.key, context[i], view) <= room + freed:
                    track.placed = own
                    kept -= freed
                    room += freed
        view = join_recall(context, {str(r.metadata.get("serves")): r for r in track.placed})
        if not new_turn:
            return view
        placed = step.place(view, room)
        if placed is None:
            return view
        out, at, _ = placed
        track.placed.append(out[at])
        return out

    def _recall_history(
        self, step: RecallStep, track: _RecallTrack, context: list[Message]
    ) -> Generator[Awaitable[Any], Any, None]:
        """Seed recall for a session that already has history (`RecallStep.seed`): positions in order, and what is
        out of view. A compacted event shows its gist under its own id, so "in view" means the same id and
        fingerprint: the original of a gist is out of view and is indexed. Yields the history read."""
        history: list[Message] = yield self.memory.history_messages(step.key)
        shown = {(str(m.message_id), m.fingerprint()) for m in context}

        def in_view(message: Message) -> bool:
            return (str(message.message_id), message.fingerprint()) in shown

        live = [m for m in history if in_view(m)]
        for message in live:
            track.live[str(message.message_id)] = message
        kept = {id(m) for m in live}
        step.seed(history, lambda m: id(m) in kept)
        track.view = tuple(context)

    def _recall_left(self, step: RecallStep, track: _RecallTrack, context: list[Message]) -> None:
        """Hand recall the originals of the messages the memory summarized away or compacted since the last call."""
        now = {str(m.message_id): m for m in context}
        gone: list[Message] = []
        for key, original in list(track.live.items()):
            current = now.get(key)
            if current is None or (current is not original and current.fingerprint() != original.fingerprint()):
                gone.append(original)
                del track.live[key]
        step.left(gone)

    @property
    def wants_history(self) -> bool:
        """False: the memory's own store holds the history, and a session's first call seeds recall from it."""
        return False

    def import_thread(self, thread_id: str, seed: ThreadSeed) -> None:
        """Nothing to take over: the memory's store is the thread's record, and recall is seeded from it at the
        session's first call in this process (`_recall_history`, through the same `RecallStep.seed`)."""

    def forget(self, session_id: str | None = None) -> None:
        """Drop the recall state kept for ``session_id`` (every session when None); the memory keeps the history,
        and the session's next call rebuilds the state from it."""
        if session_id is None:
            self._recall_tracks.drop()
        else:
            self._recall_tracks.pop(session_id)

    async def aclose(self) -> None:
        """Close the memory (and its store, if the memory opened it)."""
        await self.memory.close()
