"""Run events: the persisted event log of each run, and a session's stream of them.

By default ``seq`` counts a run's events from 1 with no gaps: the next value is read and written
inside one write transaction that holds the run's session (SQLite: ``BEGIN IMMEDIATE``, the one
writer; PostgreSQL: the session row's lock, ``Dialect.reserve_stream``), so even two processes
appending to the same run get distinct, consecutive numbers (the unique index on
``(run_id, seq)`` is the backstop). A caller that numbers a run's live events itself passes
``seq``; the store then checks it increases.

The session stream's position is one that becomes visible in increasing order, which is what
makes it a safe cursor for tailing a session from another process: a tailer that has read
position *n* never later finds a smaller one appear. On SQLite it is the event's ``rowid``
(rows become visible in rowid order: one writer at a time), its decimal text the cursor (``VACUUM``
may renumber rowids: tailers then restart from 0). On PostgreSQL it is ``session_pos``, handed
out from the session's ``event_pos`` counter under its row lock (an identity or sequence would
not do: two transactions can take 5 and 6 and commit 6 first; a tailer reading then would skip
5 for ever); the cursor is ``p<session_pos>``, and a bare number (a SQLite cursor) is refused
by name.
"""

from __future__ import annotations

import functools
import itertools
import json
from collections.abc import Sequence

from agi_jupyter.errors import Conflict, UsageError
from agi_jupyter.records import JSON, RunEvent, RunFence, new_id, utc_now
from agi_jupyter.store.rows import RUN_EVENTS, check_limit, dumps
from agi_jupyter.store.sql import Conn, Database, check_fence
from agi_jupyter.store.values import LargeValues

_EVENT_COLUMNS = RUN_EVENTS.select("e")
_INSERT_COLUMNS = ("id", "run_id", "seq", "type", "payload", "created_at")
_PAYLOAD = RUN_EVENTS.columns.index("payload")
ARGUMENTS_DELTA = "tool.call.arguments.delta"
ARGUMENTS_DONE = "tool.call.arguments.done"


class RunEvents:
    """The ``run_events`` table."""

    def __init__(self, db: Database, values: LargeValues) -> None:
        self._db = db
        self._values = values
        dialect = db.dialect
        self._dialect = dialect
        columns = (*_INSERT_COLUMNS, *dialect.stream_columns)
        self._insert = (
            f"INSERT INTO run_events ({', '.join(columns)})"
            f" VALUES ({', '.join('?' for _ in columns)})"
        )
        self._after = (
            f"SELECT {dialect.stream_position}, {_EVENT_COLUMNS} FROM {dialect.stream_of_session}"
            f" AND {dialect.stream_position} > ? ORDER BY {dialect.stream_position} LIMIT ?"
        )
        self._end = f"SELECT MAX({dialect.stream_position}) FROM {dialect.stream_of_session}"

    def append_run_event(
        self,
        run_id: str,
        type: str,
        payload: JSON,
        *,
        seq: int | None = None,
        fence: RunFence | None = None,
    ) -> RunEvent:
        """Append one event to a run's log, numbered after the run's last event, or ``seq``
        when the caller numbers the run's events itself (live events that are not persisted
        leave gaps); ``seq`` must be above the last one stored, else ``Conflict``. With
        ``fence``: only while the run's owner still holds it, else ``RunLost``."""
        return self._append(run_id, [(type, payload)], seq, fence)[0]

    def append_run_events(
        self,
        run_id: str,
        events: Sequence[tuple[str, JSON]],
        *,
        seqs: Sequence[int] | None = None,
        fence: RunFence | None = None,
    ) -> list[RunEvent]:
        """Append several events in one transaction, numbered consecutively after the run's
        last event, or ``seqs`` (increasing, above the last one stored) when the caller
        numbers them itself. ``fence``: as for ``append_run_event``."""
        if seqs is not None and len(seqs) != len(events):
            raise UsageError("seqs must give one number per event")
        return self._append(run_id, events, seqs, fence) if events else []

    def _append(
        self,
        run_id: str,
        events: Sequence[tuple[str, JSON]],
        seqs: Sequence[int] | int | None,
        fence: RunFence | None,
    ) -> list[RunEvent]:
        now = utc_now()
        payloads: list[str | None] = [dumps(payload) for _, payload in events]
        with self._db.write() as conn:
            positions = self._dialect.reserve_stream(conn, run_id, len(events))
            check_fence(conn, self._dialect, fence)
            session = functools.partial(_session_of, conn, run_id)
            payloads = [  # argument deltas: pieces of a value, never kept as values
                p if t == ARGUMENTS_DELTA else self._values.keep(conn, session, p)
                for (t, _), p in zip(events, payloads, strict=True)
            ]
            (last,) = conn.execute(
                "SELECT COALESCE(MAX(seq), 0) FROM run_events WHERE run_id = ?", [run_id]
            ).fetchone()
            numbers = numbering(last, len(events), seqs)
            if numbers[0] <= last or any(a >= b for a, b in itertools.pairwise(numbers)):
                raise Conflict(
                    f"run {run_id!r} already has events up to seq {last} (got {numbers})"
                )
            created = [
                RunEvent(id=new_id("evt"), run_id=run_id, seq=n, type=t, payload=p, created_at=now)
                for n, (t, p) in zip(numbers, events, strict=True)
            ]
            conn.executemany(
                self._insert,
                [
                    (e.id, run_id, e.seq, e.type, payload, now, *position)
                    for e, payload, position in zip(created, payloads, positions, strict=True)
                ],
            )
            done = [p.get("tool_call_id") for t, p in events if t == ARGUMENTS_DONE]
            if done:
                _drop_argument_deltas(conn, run_id, {str(c) for c in done if c is not None})
        return created

    def list_run_events(
        self, run_id: str, *, after_seq: int = 0, limit: int | None = None
    ) -> list[RunEvent]:
        """A run's events with ``seq > after_seq``, in order (none for an unknown run)."""
        rows = self._db.all(
            f"SELECT {_EVENT_COLUMNS} FROM run_events e WHERE e.run_id = ? AND e.seq > ?"
            " ORDER BY e.seq LIMIT ?",
            [run_id, after_seq, self._dialect.limit(limit)],
        )
        return [RUN_EVENTS.from_row(r) for r in self._values.expand_rows(rows, [_PAYLOAD])]

    def list_session_run_events(
        self, session_id: str, *, after_cursor: str | None = None, limit: int = 500
    ) -> list[tuple[str, RunEvent]]:
        """Events of all runs of a session written after ``after_cursor``, as (cursor, event)
        pairs in the order they became visible; pass the last cursor back to continue."""
        after = self._dialect.stream_position_of(after_cursor)
        rows = self._db.all(self._after, [session_id, after, check_limit(limit)])
        rows = self._values.expand_rows(rows, [1 + _PAYLOAD])
        cursor = self._dialect.stream_cursor
        return [(cursor(r[0]), RUN_EVENTS.from_row(r[1:])) for r in rows]

    def session_events_end(self, session_id: str) -> str:
        row = self._db.one(self._end, [session_id])
        return self._dialect.stream_cursor(row[0] if row is not None and row[0] is not None else 0)


def _session_of(conn: Conn, run_id: str) -> str:
    row = conn.execute("SELECT session_id FROM runs WHERE id = ?", [run_id]).fetchone()
    return str(row[0]) if row is not None else ""


def _drop_argument_deltas(conn: Conn, run_id: str, tool_call_ids: set[str]) -> None:
    """Delete the stored argument deltas of these tool calls: their ``arguments.done`` event,
    stored now, holds the whole arguments (``values.py``)."""
    rows = conn.execute(
        "SELECT id, payload FROM run_events WHERE run_id = ? AND type = ?",
        [run_id, ARGUMENTS_DELTA],
    ).fetchall()
    ids = [
        (id_,) for id_, payload in rows if json.loads(payload).get("tool_call_id") in tool_call_ids
    ]
    if ids:
        conn.executemany("DELETE FROM run_events WHERE id = ?", ids)


def numbering(last: int, count: int, seqs: Sequence[int] | int | None) -> list[int]:
    """The seq of each new event: given, starting at a given one, or after ``last``."""
    if seqs is None:
        return list(range(last + 1, last + 1 + count))
    if isinstance(seqs, int):
        return list(range(seqs, seqs + count))
    return list(seqs)
