"""``Agi``'s reads of what runs left: their events, tool calls, artifacts and changes, and the
followers of a run's or a session's events (the store's, then the bus's live ones).

``RunRecords`` is a part ``Agi`` holds (``agi_jupyter.app.agi``).
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Iterator
from typing import TYPE_CHECKING, Any

from agi_jupyter.records import ACTIVE_RUN_STATUSES, Artifact, Run, RunEvent, ToolCall
from agi_jupyter.runtime.follow import (
    RunCursor,
    SessionItem,
    SessionMark,
    afollow_run,
    afollow_run_batches,
    afollow_session,
    follow_run,
)

if TYPE_CHECKING:
    from agi_jupyter.runtime.bus import EventBus
    from agi_jupyter.store import Store


class RunRecords:
    """A project's run records, over its store and its event bus."""

    def __init__(self, store: Store, bus: EventBus) -> None:
        self.store = store
        self.bus = bus

    def events(self, run_id: str, *, after_seq: int = 0) -> list[RunEvent]:
        return self.store.list_run_events(run_id, after_seq=after_seq)

    def session_events(
        self, session_id: str, *, after_cursor: str | None = None, limit: int = 500
    ) -> list[tuple[str, RunEvent]]:
        return self.store.list_session_run_events(
            session_id, after_cursor=after_cursor, limit=limit
        )

    def tool_calls(self, run_id: str) -> list[ToolCall]:
        return self.store.list_tool_calls(run_id=run_id)

    def artifacts(self, run_id: str) -> list[Artifact]:
        return self.store.list_artifacts(run_id=run_id)

    def artifact(self, artifact_id: str) -> Artifact:
        return self.store.get_artifact(artifact_id)

    def artifact_content(self, artifact_id: str) -> bytes:
        return self.store.read_artifact(artifact_id)

    def replayable(self, request_hash: str, *, notebook_path: str | None) -> Run | None:
        return self.store.find_replayable_run(request_hash, notebook_path=notebook_path)

    def any_active(self) -> bool:
        runs = self.store.list_runs(statuses=sorted(ACTIVE_RUN_STATUSES), limit=1)
        return bool(runs.items)

    # --- followers -----------------------------------------------------------------------

    def follow(
        self, run_id: str, *, after_seq: int = 0, fresh: bool = False
    ) -> Iterator[dict[str, Any]]:
        return follow_run(self.store, self.bus, run_id, after_seq=after_seq, fresh=fresh)

    def afollow(
        self, run_id: str, *, after_seq: int = 0, fresh: bool = False
    ) -> AsyncGenerator[dict[str, Any], None]:
        return afollow_run(self.store, self.bus, run_id, after_seq=after_seq, fresh=fresh)

    def afollow_batches(
        self, run_id: str, *, after_seq: int = 0, fresh: bool = False
    ) -> AsyncGenerator[list[dict[str, Any]], None]:
        return afollow_run_batches(self.store, self.bus, run_id, after_seq=after_seq, fresh=fresh)

    def afollow_session(
        self,
        session_id: str,
        *,
        after: SessionMark | None,
        idle_every: float,
    ) -> AsyncGenerator[SessionItem | None, None]:
        return afollow_session(self.store, self.bus, session_id, after=after, idle_every=idle_every)

    def cursor(self, run_id: str, *, after_seq: int = 0) -> RunCursor:
        return RunCursor(self.store, run_id, after_seq)
