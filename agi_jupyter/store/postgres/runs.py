"""Runs on PostgreSQL, and the claims of several replicas.

Every update bumps ``version``; ``update_run_if`` / ``claim_run`` are one ``UPDATE ... WHERE
version = %s`` each, which PostgreSQL re-checks against the newest committed row after waiting
for a concurrent writer, so of two callers holding the same version exactly one wins, on any
host. ``claim_due_runs`` hands out the queue with ``FOR UPDATE SKIP LOCKED``: replicas calling
it at once each lock different runs instead of queueing behind one another, and the claiming
``UPDATE`` re-checks ``status = 'queued'``, so a run claimed meanwhile by ``claim_run`` is not
taken twice.

Ownership is fenced (m007): every change of ``owner`` bumps ``epoch``, and an owner's writes
carry ``fence=RunFence(run_id, owner, epoch)``. Writes to the run row itself check it in their
``UPDATE``'s ``WHERE`` (``owner = %s AND epoch = %s``, re-checked on the newest row version);
writes elsewhere hold the run row ``FOR SHARE`` (``PgCore._check_fence``) until they commit, so a
takeover waits for them. A write whose fence no longer holds changes nothing: ``RunLost``.

A new queued background run is announced with ``pg_notify`` (delivered at commit)
to wake the other replicas' ticks at once, and so is the end of a run whose session has
queued runs (the replica whose tick found that session busy may be idle).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from agi_jupyter.errors import RunLost, RunNotFound
from agi_jupyter.records import TERMINAL_RUN_STATUSES, Page, Run, RunFence, new_id, utc_now
from agi_jupyter.store.postgres.core import Connection, PgCore, limit_value
from agi_jupyter.store.postgres.database import CHANNEL
from agi_jupyter.store.rows import RUNS, check_limit

_SELECT = f"SELECT {RUNS.select()} FROM runs"
_RETURNING = f"RETURNING {RUNS.select()}"
_FIXED = ("id", "session_id", "version", "epoch", "created_at", "updated_at")
_CLAIM = (
    "status = 'running', owner = %(owner)s, epoch = epoch + 1, attempt = attempt + 1,"
    " next_attempt_at = NULL, heartbeat_at = %(now)s, started_at = COALESCE(started_at, %(now)s),"
    " version = version + 1, updated_at = %(now)s"
)
# The head (oldest queued run) of each session's queue, if it is due, not excluded, and its
# session has no running run heartbeated since ``stale``; locked unless another caller holds
# it, then claimed if still queued. DISTINCT ON keeps one run per session, so a second caller
# finds that session's head locked and skips the session instead of taking the next one.
_CLAIM_DUE = (
    "WITH heads AS (SELECT DISTINCT ON (session_id) id, session_id, pos, next_attempt_at"
    " FROM runs WHERE status = 'queued' ORDER BY session_id, pos),"
    " due AS (SELECT h.id, h.pos FROM heads h"
    " WHERE (h.next_attempt_at IS NULL OR h.next_attempt_at <= %(due)s)"
    " AND NOT h.id = ANY(%(exclude)s)"
    " AND NOT EXISTS (SELECT 1 FROM runs b WHERE b.session_id = h.session_id"
    " AND b.status = 'running' AND b.heartbeat_at >= %(stale)s)"
    " AND NOT EXISTS (SELECT 1 FROM runs w WHERE w.session_id = h.session_id"
    " AND w.status = 'waiting_approval' AND w.pos < h.pos)),"
    " picked AS (SELECT r.id FROM runs r JOIN due ON due.id = r.id ORDER BY due.pos"
    " LIMIT %(limit)s FOR UPDATE OF r SKIP LOCKED)"
    f" UPDATE runs SET {_CLAIM} FROM picked WHERE runs.id = picked.id AND runs.status = 'queued'"
    f" RETURNING {RUNS.select('runs')}, runs.pos"
)


def _not_found(run_id: str) -> RunNotFound:
    return RunNotFound(f"run {run_id!r} not found")


class PgRunsMixin(PgCore):
    def create_run(self, session_id: str, /, **fields: Any) -> Run:
        RUNS.check_new(fields, fixed=_FIXED)
        now = utc_now()
        run = Run(id=new_id("run"), session_id=session_id, created_at=now, updated_at=now, **fields)
        row = RUNS.to_row(run)
        with self._write() as conn:
            self._require_session(conn, session_id)
            self._insert(conn, "runs", row)
            if run.status == "queued" and run.execution_mode == "background":
                conn.execute("SELECT pg_notify(%s, %s)", [CHANNEL, self.schema])
        return run

    def get_run(self, id: str) -> Run:
        row = self._one(f"{_SELECT} WHERE id = %s", [id])
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
        filters: list[tuple[str, Any]] = []
        if session_id is not None:
            filters.append(("session_id = %s", session_id))
        if statuses is not None:
            wanted = [RUNS.encode({"status": status})["status"] for status in statuses]
            filters.append(("status = ANY(%s)", wanted))
        return self._page(RUNS, filters, limit=limit, cursor=cursor)

    def update_run(self, id: str, /, *, fence: RunFence | None = None, **changes: Any) -> Run:
        values = RUNS.changes(changes)
        if fence is not None and fence.run_id != id:
            raise RunLost(f"run {id} is not fenced by a fence of run {fence.run_id}")
        with self._write() as conn:
            row = self._update_run(conn, id, None, values, returning=True, fence=fence)
            if row is not None:
                self._announce_next(conn, id, values)
        if row is None:
            if fence is not None:
                raise RunLost(f"run {id} is no longer owned by {fence.owner}")
            raise _not_found(id)
        return RUNS.from_row(row)

    def update_run_if(self, id: str, expected_version: int, /, **changes: Any) -> bool:
        values = RUNS.changes(changes)
        with self._write() as conn:
            won = self._update_run(conn, id, expected_version, values) is not None
            if won:
                self._announce_next(conn, id, values)
            return won

    def claim_run(self, id: str, expected_version: int, *, owner: str) -> RunFence | None:
        with self._connection() as conn:
            row = conn.execute(
                f"UPDATE runs SET {_CLAIM} WHERE id = %(id)s AND version = %(version)s"
                " RETURNING epoch",
                {"owner": owner, "now": utc_now(), "id": id, "version": expected_version},
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
        stamp = utc_now()
        params = {
            "owner": owner,
            "now": stamp,
            "due": now or stamp,
            "stale": stale_before,
            "exclude": list(exclude),
            "limit": check_limit(limit),
        }
        with self._connection() as conn:
            rows = conn.execute(_CLAIM_DUE, params).fetchall()
        return [RUNS.from_row(row[:-1]) for row in sorted(rows, key=lambda r: r[-1])]

    def heartbeat(self, fence: RunFence) -> bool:
        now = utc_now()
        held = [fence.run_id, fence.owner, fence.epoch]
        with self._connection() as conn:
            cur = conn.execute(
                "UPDATE runs SET heartbeat_at = %s, version = version + 1, updated_at = %s"
                " WHERE id = %s AND owner = %s AND epoch = %s AND status = 'running'",
                [now, now, *held],
            )
            if cur.rowcount == 1:
                return True
            # Not running any more (a cancel asked for elsewhere), or lost: which one?
            still = conn.execute(
                "SELECT 1 FROM runs WHERE id = %s AND owner = %s AND epoch = %s", held
            ).fetchone()
        if still is None:
            raise RunLost(f"run {fence.run_id} is no longer owned by {fence.owner}")
        return False

    def due_runs(self, *, now: str | None = None, limit: int = 10) -> list[Run]:
        rows = self._all(
            f"{_SELECT} WHERE status = 'queued'"
            " AND (next_attempt_at IS NULL OR next_attempt_at <= %s) ORDER BY pos LIMIT %s",
            [now or utc_now(), limit_value(limit)],
        )
        return [RUNS.from_row(r) for r in rows]

    def stale_runs(self, *, heartbeat_before: str, limit: int = 10) -> list[Run]:
        rows = self._all(
            f"{_SELECT} WHERE status = 'running'"
            " AND (heartbeat_at IS NULL OR heartbeat_at < %s)"
            " ORDER BY heartbeat_at NULLS FIRST, pos LIMIT %s",
            [heartbeat_before, limit_value(limit)],
        )
        return [RUNS.from_row(r) for r in rows]

    def find_replayable_run(self, request_hash: str, *, notebook_path: str | None) -> Run | None:
        sql = f"{_SELECT} WHERE request_hash = %s AND status = 'succeeded' AND error IS NULL"
        params: list[Any] = [request_hash]
        if notebook_path is not None:
            sql += " AND notebook_path = %s"
            params.append(notebook_path)
        row = self._one(f"{sql} ORDER BY created_at DESC, pos DESC LIMIT 1", params)
        return None if row is None else RUNS.from_row(row)

    def get_run_by_response_id(self, response_id: str) -> Run | None:
        row = self._one(f"{_SELECT} WHERE provider_response_id = %s", [response_id])
        return None if row is None else RUNS.from_row(row)

    # --- helpers --------------------------------------------------------------------------

    def _announce_next(self, conn: Connection, id: str, values: dict[str, Any]) -> None:
        """A run that ends frees its session, and a run put back in the queue (released by a
        server that stops, or taken over) is work: if the session has queued runs, wake the
        other replicas (one of them may be idle, its last tick having found nothing)."""
        status = values.get("status")
        if status != "queued" and status not in TERMINAL_RUN_STATUSES:
            return
        conn.execute(
            "SELECT pg_notify(%s, %s) WHERE EXISTS (SELECT 1 FROM runs WHERE status = 'queued'"
            " AND session_id = (SELECT session_id FROM runs WHERE id = %s))",
            [CHANNEL, self.schema, id],
        )

    @staticmethod
    def _update_run(
        conn: Connection,
        id: str,
        version: int | None,
        values: dict[str, Any],
        *,
        returning: bool = False,
        fence: RunFence | None = None,
    ) -> Any:
        """The updated row (or ``(1,)`` without ``returning``), None if nothing matched (the
        run, its ``version``, or its ``fence``). A change of ``owner`` is a hand-over: it bumps
        ``epoch``, so the previous owner's fence stops holding."""
        values = {**values, "updated_at": utc_now()}
        assignments = ", ".join(f"{name} = %s" for name in values)
        if "owner" in values:
            assignments += ", epoch = epoch + 1"
        sql = f"UPDATE runs SET {assignments}, version = version + 1 WHERE id = %s"
        params = [*values.values(), id]
        if version is not None:
            sql += " AND version = %s"
            params.append(version)
        if fence is not None:
            sql += " AND owner = %s AND epoch = %s"
            params.extend([fence.owner, fence.epoch])
        sql += f" {_RETURNING}" if returning else " RETURNING 1"
        return conn.execute(sql, params).fetchone()
