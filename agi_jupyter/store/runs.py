"""Runs: the durable record of one agent turn or background job, and its concurrency control.

Every update bumps ``version``; ``update_run_if`` / ``claim_run`` are compare-and-set updates
(``UPDATE ... WHERE id = ? AND version = ?``), so of two workers holding the same version exactly
one wins, whether they are threads, processes or hosts. ``heartbeat`` bumps the version too: a
recovery decided on a stale read of a run whose owner is in fact alive loses its CAS.

Ownership is fenced (m007): ``epoch`` is bumped by every change of ``owner`` (a claim, a takeover
by recovery, a release), and an owner's writes pass ``fence=RunFence(run_id, owner, epoch)``,
checked in the write's own transaction (``StoreCore._check_fence``): once the run changed hands,
the old owner's writes raise ``RunLost`` and change nothing.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Sequence
from typing import Any

from agi_jupyter.errors import RunNotFound
from agi_jupyter.records import Page, Run, RunFence, new_id, utc_now
from agi_jupyter.store.connection import StoreCore
from agi_jupyter.store.rows import RUNS, check_limit, dumps

_SELECT = f"SELECT {RUNS.select()} FROM runs"
_FIXED = ("id", "session_id", "version", "epoch", "created_at", "updated_at")
# The due heads of idle sessions' queues (a run waiting for an approval holds the runs queued
# after it in its session) (parameters: now, excluded ids as JSON, the oldest
# heartbeat still alive, limit).
_CLAIMABLE = (
    "SELECT r.id FROM runs r WHERE r.status = 'queued'"
    " AND (r.next_attempt_at IS NULL OR r.next_attempt_at <= ?)"
    " AND r.id NOT IN (SELECT value FROM json_each(?))"
    " AND NOT EXISTS (SELECT 1 FROM runs p WHERE p.session_id = r.session_id"
    "  AND p.status = 'queued' AND p.rowid < r.rowid)"
    " AND NOT EXISTS (SELECT 1 FROM runs b WHERE b.session_id = r.session_id"
    "  AND b.status = 'running' AND b.heartbeat_at >= ?)"
    " AND NOT EXISTS (SELECT 1 FROM runs w WHERE w.session_id = r.session_id"
    "  AND w.status = 'waiting_approval' AND w.rowid < r.rowid)"
    " ORDER BY r.rowid LIMIT ?"
)
# A claim's assignments (parameters: owner, heartbeat_at, started_at, updated_at).
_CLAIM = (
    "status = 'running', owner = ?, epoch = epoch + 1, attempt = attempt + 1,"
    " next_attempt_at = NULL, heartbeat_at = ?, started_at = COALESCE(started_at, ?),"
    " version = version + 1, updated_at = ?"
)


def _not_found(run_id: str) -> RunNotFound:
    return RunNotFound(f"run {run_id!r} not found")


class RunsMixin(StoreCore):
    def create_run(self, session_id: str, /, **fields: Any) -> Run:
        """A new run of a session; ``fields`` are fields of ``records.Run``."""
        RUNS.check_new(fields, fixed=_FIXED)
        now = utc_now()
        run = Run(id=new_id("run"), session_id=session_id, created_at=now, updated_at=now, **fields)
        row = RUNS.to_row(run)
        with self._write() as conn:
            self._require_session(conn, session_id)
            self._insert(conn, "runs", row)
        return run

    def get_run(self, id: str) -> Run:
        row = self._one(f"{_SELECT} WHERE id = ?", [id])
        if row is None:
            raise _not_found(id)
        return RUNS.from_row(row)

    def list_runs(
        self,
        *,
        session_id: str | None = None,
        statuses: Iterable[str] | None = None,
        limit: int = 50,
        cursor: str | None = None,
    ) -> Page[Run]:
        """Newest first, optionally of one session and/or in some statuses."""
        filters: list[tuple[str, Any]] = []
        if session_id is not None:
            filters.append(("session_id = ?", session_id))
        if statuses is not None:
            wanted = [RUNS.encode({"status": status})["status"] for status in statuses]
            filters.append(("status IN (SELECT value FROM json_each(?))", dumps(wanted)))
        return self._page(RUNS, filters, limit=limit, cursor=cursor)

    def update_run(self, id: str, /, *, fence: RunFence | None = None, **changes: Any) -> Run:
        """Change fields of a run (bumps ``version`` and ``updated_at``; ``epoch`` too when
        ``owner`` changes). With ``fence``: only while the fence holds, else ``RunLost``."""
        values = RUNS.changes(changes)
        with self._write() as conn:
            self._check_fence(conn, fence)
            if not self._update_run(conn, id, None, values):
                raise _not_found(id)
            return RUNS.from_row(conn.execute(f"{_SELECT} WHERE id = ?", [id]).fetchone())

    def update_run_if(self, id: str, expected_version: int, /, **changes: Any) -> bool:
        """Compare-and-set: apply ``changes`` only if the run is still at ``expected_version``.
        Returns whether this caller won (False also when the run does not exist)."""
        values = RUNS.changes(changes)
        with self._write() as conn:
            return self._update_run(conn, id, expected_version, values)

    def claim_run(self, id: str, expected_version: int, *, owner: str) -> RunFence | None:
        """Take a run (CAS on version): status running, ``owner``, a new ``epoch``, the next
        ``attempt`` (``next_attempt_at`` cleared), a fresh heartbeat, and ``started_at`` if it
        was never started. Returns the new owner's fence, or None when another caller got it
        first."""
        now = utc_now()
        with self._write() as conn:
            row = conn.execute(
                f"UPDATE runs SET {_CLAIM} WHERE id = ? AND version = ? RETURNING epoch",
                [owner, now, now, now, id, expected_version],
            ).fetchone()
        return None if row is None else RunFence(id, owner, int(row[0]))

    def claim_due_runs(
        self,
        *,
        owner: str,
        stale_before: str,
        limit: int = 10,
        now: str | None = None,
        exclude: Sequence[str] = (),
    ) -> list[Run]:
        """Claim, in one transaction, up to ``limit`` due queued runs for ``owner`` (as
        ``claim_run`` does, so each comes back running with its new ``epoch``): only the oldest
        queued run of each session, and only of sessions with no running run whose owner
        heartbeated at or after ``stale_before``, so a session's runs execute one at a time
        and in order. Concurrent tickers thus take disjoint runs instead of racing for the
        same ones. ``exclude``: ids not to claim (runs the caller drives already)."""
        stamp = utc_now()
        params = [now or stamp, dumps(list(exclude)), stale_before, check_limit(limit)]
        if not self._all(_CLAIMABLE, params):
            return []  # a read: no write lock taken when there is nothing to claim
        with self._write() as conn:
            ids = [row[0] for row in conn.execute(_CLAIMABLE, params)]
            for run_id in ids:
                conn.execute(
                    f"UPDATE runs SET {_CLAIM} WHERE id = ?", [owner, stamp, stamp, stamp, run_id]
                )
            rows = [conn.execute(f"{_SELECT} WHERE id = ?", [i]).fetchone() for i in ids]
        return [RUNS.from_row(row) for row in rows]

    def heartbeat(self, fence: RunFence) -> bool:
        """Refresh ``heartbeat_at`` of a run its owner still holds (``RunLost`` if it does
        not). Returns False, refreshing nothing, when the run is no longer ``running``: its
        cancel was asked for by someone else, and the owner should end it."""
        now = utc_now()
        with self._write() as conn:
            self._check_fence(conn, fence)
            cur = conn.execute(
                "UPDATE runs SET heartbeat_at = ?, version = version + 1, updated_at = ?"
                " WHERE id = ? AND status = 'running'",
                [now, now, fence.run_id],
            )
            return cur.rowcount == 1

    def due_runs(self, *, now: str | None = None, limit: int = 10) -> list[Run]:
        """Queued runs whose ``next_attempt_at`` is unset or has come, oldest first."""
        rows = self._all(
            f"{_SELECT} WHERE status = 'queued'"
            " AND (next_attempt_at IS NULL OR next_attempt_at <= ?)"
            " ORDER BY rowid LIMIT ?",
            [now or utc_now(), check_limit(limit)],
        )
        return [RUNS.from_row(r) for r in rows]

    def stale_runs(self, *, heartbeat_before: str, limit: int = 10) -> list[Run]:
        """Running runs whose owner has not heartbeaten since ``heartbeat_before`` (or ever)."""
        rows = self._all(
            f"{_SELECT} WHERE status = 'running'"
            " AND (heartbeat_at IS NULL OR heartbeat_at < ?)"
            " ORDER BY heartbeat_at, rowid LIMIT ?",
            [heartbeat_before, check_limit(limit)],
        )
        return [RUNS.from_row(r) for r in rows]

    def find_replayable_run(self, request_hash: str, *, notebook_path: str | None) -> Run | None:
        """The newest succeeded, error-free run with this request hash (from that notebook)."""
        sql = f"{_SELECT} WHERE request_hash = ? AND status = 'succeeded' AND error IS NULL"
        params: list[Any] = [request_hash]
        if notebook_path is not None:
            sql += " AND notebook_path = ?"
            params.append(notebook_path)
        row = self._one(f"{sql} ORDER BY created_at DESC, rowid DESC LIMIT 1", params)
        return None if row is None else RUNS.from_row(row)

    def get_run_by_response_id(self, response_id: str) -> Run | None:
        row = self._one(f"{_SELECT} WHERE provider_response_id = ?", [response_id])
        return None if row is None else RUNS.from_row(row)

    # --- helpers --------------------------------------------------------------------------

    @staticmethod
    def _update_run(
        conn: sqlite3.Connection, id: str, version: int | None, values: dict[str, Any]
    ) -> bool:
        values = {**values, "updated_at": utc_now()}
        assignments = ", ".join(f"{name} = ?" for name in values)
        if "owner" in values:  # a hand-over: the previous owner's fence stops holding
            assignments += ", epoch = epoch + 1"
        sql = f"UPDATE runs SET {assignments}, version = version + 1 WHERE id = ?"
        params = [*values.values(), id]
        if version is not None:
            sql += " AND version = ?"
            params.append(version)
        return conn.execute(sql, params).rowcount == 1
