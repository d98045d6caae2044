"""Runs: the durable record of one agent turn or background job, and its concurrency control.

Every update bumps ``version``; ``update_run_if`` / ``claim_run`` are compare-and-set updates
(``UPDATE ... WHERE id = ? AND version = ?``, which PostgreSQL re-checks against the newest
committed row after waiting for a concurrent writer), so of two workers holding the same version
exactly one wins, whether they are threads, processes or hosts. ``heartbeat`` bumps the version
too: a recovery decided on a stale read of a run whose owner is in fact alive loses its CAS.

Ownership is fenced (m007): ``epoch`` is bumped by every change of ``owner`` (a claim, a takeover
by recovery, a release), and an owner's writes pass ``fence=RunFence(run_id, owner, epoch)``.
Writes to the run row itself check it in their ``UPDATE``'s ``WHERE``; writes elsewhere check it
first in their transaction (``sql.check_fence``). Once the run changed hands, the old owner's
writes raise ``RunLost`` and change nothing.

``claim_due_runs`` hands out the queue: the dialect claims (``Dialect.claim_due_runs``: SQLite
in one write transaction; PostgreSQL with ``FOR UPDATE SKIP LOCKED``, so replicas calling it at
once each lock different runs). A new queued background run is announced (``Dialect.notify``:
``pg_notify``, delivered at commit, wakes the other replicas' ticks), and so is the end of a run
whose session has queued runs (the replica whose tick found that session busy may be idle).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from agi_jupyter.errors import RunLost, RunNotFound
from agi_jupyter.records import TERMINAL_RUN_STATUSES, Page, Run, RunFence, new_id, utc_now
from agi_jupyter.store.rows import RUNS, check_limit
from agi_jupyter.store.sql import ClaimParams, Conn, Database, insert, page, require_session

_SELECT = f"SELECT {RUNS.select()} FROM runs"
_FIXED = ("id", "session_id", "version", "epoch", "created_at", "updated_at")
# A claim's assignments (parameters: owner, heartbeat_at, started_at, updated_at).
CLAIM = (
    "status = 'running', owner = ?, epoch = epoch + 1, attempt = attempt + 1,"
    " next_attempt_at = NULL, heartbeat_at = ?, started_at = COALESCE(started_at, ?),"
    " version = version + 1, updated_at = ?"
)
# The session of a run has queued runs (parameter: the run's id).
_SESSION_HAS_QUEUED = (
    "EXISTS (SELECT 1 FROM runs WHERE status = 'queued'"
    " AND session_id = (SELECT session_id FROM runs WHERE id = ?))"
)


def _not_found(run_id: str) -> RunNotFound:
    return RunNotFound(f"run {run_id!r} not found")


class Runs:
    """The ``runs`` table: creation, compare-and-set updates, claims, heartbeats, queues."""

    def __init__(self, db: Database) -> None:
        self._db = db
        self._dialect = db.dialect

    def create_run(self, session_id: str, /, **fields: Any) -> Run:
        """A new run of a session; ``fields`` are fields of ``records.Run``."""
        RUNS.check_new(fields, fixed=_FIXED)
        now = utc_now()
        run = Run(id=new_id("run"), session_id=session_id, created_at=now, updated_at=now, **fields)
        row = RUNS.to_row(run)
        with self._db.write() as conn:
            require_session(conn, self._dialect, session_id)
            insert(conn, "runs", row)
            if run.status == "queued" and run.execution_mode == "background":
                self._dialect.notify(conn)
        return run

    def get_run(self, id: str) -> Run:
        row = self._db.one(f"{_SELECT} WHERE id = ?", [id])
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
            filters.append((self._dialect.any_of("status"), self._dialect.any_value(wanted)))
        return page(self._db, RUNS, filters, limit=limit, cursor=cursor)

    def update_run(self, id: str, /, *, fence: RunFence | None = None, **changes: Any) -> Run:
        """Change fields of a run (bumps ``version`` and ``updated_at``; ``epoch`` too when
        ``owner`` changes). With ``fence``: only while the fence holds, else ``RunLost``."""
        values = RUNS.changes(changes)
        if fence is not None and fence.run_id != id:
            raise RunLost(f"run {id} is not fenced by a fence of run {fence.run_id}")
        with self._db.write() as conn:
            row = self._update(conn, id, None, values, fence=fence)
            if row is not None:
                self._announce_next(conn, id, values)
        if row is None:
            if fence is not None:
                raise RunLost(f"run {id} is no longer owned by {fence.owner}")
            raise _not_found(id)
        return RUNS.from_row(row)

    def update_run_if(self, id: str, expected_version: int, /, **changes: Any) -> bool:
        """Compare-and-set: apply ``changes`` only if the run is still at ``expected_version``.
        Returns whether this caller won (False also when the run does not exist)."""
        values = RUNS.changes(changes)
        with self._db.write() as conn:
            won = self._update(conn, id, expected_version, values) is not None
            if won:
                self._announce_next(conn, id, values)
            return won

    def claim_run(self, id: str, expected_version: int, *, owner: str) -> RunFence | None:
        """Take a run (CAS on version): status running, ``owner``, a new ``epoch``, the next
        ``attempt`` (``next_attempt_at`` cleared), a fresh heartbeat, and ``started_at`` if it
        was never started. Returns the new owner's fence, or None when another caller got it
        first."""
        now = utc_now()
        with self._db.atomic() as conn:
            row = conn.execute(
                f"UPDATE runs SET {CLAIM} WHERE id = ? AND version = ? RETURNING epoch",
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
        """Claim, atomically, up to ``limit`` due queued runs for ``owner`` (as ``claim_run``
        does, so each comes back running with its new ``epoch``): only the oldest queued run
        of each session, and only of sessions with no running run whose owner heartbeated at
        or after ``stale_before``, so a session's runs execute one at a time and in order.
        Concurrent tickers thus take disjoint runs instead of racing for the same ones.
        ``exclude``: ids not to claim (runs the caller drives already)."""
        stamp = utc_now()
        params = ClaimParams(
            owner=owner,
            now=stamp,
            due=now or stamp,
            exclude=list(exclude),
            stale=stale_before,
            limit=check_limit(limit),
        )
        rows = self._dialect.claim_due_runs(self._db, CLAIM, RUNS.select("runs"), params)
        return [RUNS.from_row(row[:-1]) for row in sorted(rows, key=lambda r: r[-1])]

    def heartbeat(self, fence: RunFence) -> bool:
        """Refresh ``heartbeat_at`` of a run its owner still holds (``RunLost`` if it does
        not). Returns False, refreshing nothing, when the run is no longer ``running``: its
        cancel was asked for by someone else, and the owner should end it."""
        now = utc_now()
        held = [fence.run_id, fence.owner, fence.epoch]
        with self._db.atomic() as conn:
            cur = conn.execute(
                "UPDATE runs SET heartbeat_at = ?, version = version + 1, updated_at = ?"
                " WHERE id = ? AND owner = ? AND epoch = ? AND status = 'running'",
                [now, now, *held],
            )
            if cur.rowcount == 1:
                return True
            # Not running any more (a cancel asked for elsewhere), or lost: which one?
            still = conn.execute(
                "SELECT 1 FROM runs WHERE id = ? AND owner = ? AND epoch = ?", held
            ).fetchone()
        if still is None:
            raise RunLost(f"run {fence.run_id} is no longer owned by {fence.owner}")
        return False

    def due_runs(self, *, now: str | None = None, limit: int = 10) -> list[Run]:
        """Queued runs whose ``next_attempt_at`` is unset or has come, oldest first."""
        rows = self._db.all(
            f"{_SELECT} WHERE status = 'queued'"
            f" AND (next_attempt_at IS NULL OR next_attempt_at <= ?) ORDER BY {self._dialect.pos}"
            " LIMIT ?",
            [now or utc_now(), self._dialect.limit(limit)],
        )
        return [RUNS.from_row(r) for r in rows]

    def stale_runs(self, *, heartbeat_before: str, limit: int = 10) -> list[Run]:
        """Running runs whose owner has not heartbeaten since ``heartbeat_before`` (or ever)."""
        rows = self._db.all(
            f"{_SELECT} WHERE status = 'running' AND (heartbeat_at IS NULL OR heartbeat_at < ?)"
            f" ORDER BY heartbeat_at NULLS FIRST, {self._dialect.pos} LIMIT ?",
            [heartbeat_before, self._dialect.limit(limit)],
        )
        return [RUNS.from_row(r) for r in rows]

    def find_replayable_run(self, request_hash: str, *, notebook_path: str | None) -> Run | None:
        """The newest succeeded, error-free run with this request hash (from that notebook)."""
        sql = f"{_SELECT} WHERE request_hash = ? AND status = 'succeeded' AND error IS NULL"
        params: list[Any] = [request_hash]
        if notebook_path is not None:
            sql += " AND notebook_path = ?"
            params.append(notebook_path)
        order = f"ORDER BY created_at DESC, {self._dialect.pos} DESC LIMIT 1"
        row = self._db.one(f"{sql} {order}", params)
        return None if row is None else RUNS.from_row(row)

    def get_run_by_response_id(self, response_id: str) -> Run | None:
        row = self._db.one(f"{_SELECT} WHERE provider_response_id = ?", [response_id])
        return None if row is None else RUNS.from_row(row)

    # --- helpers --------------------------------------------------------------------------

    def _announce_next(self, conn: Conn, id: str, values: dict[str, Any]) -> None:
        """A run that ends frees its session, and a run put back in the queue (released by a
        server that stops, or taken over) is work: if the session has queued runs, wake the
        other replicas (one of them may be idle, its last tick having found nothing)."""
        status = values.get("status")
        if status == "queued" or status in TERMINAL_RUN_STATUSES:
            self._dialect.notify(conn, _SESSION_HAS_QUEUED, [id])

    @staticmethod
    def _update(
        conn: Conn,
        id: str,
        version: int | None,
        values: dict[str, Any],
        *,
        fence: RunFence | None = None,
    ) -> Any:
        """The updated row, None if nothing matched (the run, its ``version``, or its
        ``fence``). A change of ``owner`` is a hand-over: it bumps ``epoch``, so the previous
        owner's fence stops holding."""
        values = {**values, "updated_at": utc_now()}
        assignments = ", ".join(f"{name} = ?" for name in values)
        if "owner" in values:
            assignments += ", epoch = epoch + 1"
        sql = f"UPDATE runs SET {assignments}, version = version + 1 WHERE id = ?"
        params = [*values.values(), id]
        if version is not None:
            sql += " AND version = ?"
            params.append(version)
        if fence is not None:
            sql += " AND owner = ? AND epoch = ?"
            params.extend([fence.owner, fence.epoch])
        return conn.execute(f"{sql} RETURNING {RUNS.select()}", params).fetchone()
