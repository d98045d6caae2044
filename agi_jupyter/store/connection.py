"""The SQLite connection every repository of ``SqliteStore`` shares, its transactions and its
SQL dialect (``SqliteDialect``).

One connection per store object, opened lazily with ``check_same_thread=False`` and guarded by a
lock (the kernel's main thread and an event-loop thread share it). The database file is created
on the first write only: a read on a project without ``.agi/agi.sqlite`` sees an empty store and
creates nothing. Writes run in short ``BEGIN IMMEDIATE`` transactions, so a read-modify-write
sequence holds the write lock from its first read and two processes never lose an update; WAL
mode lets readers carry on meanwhile, and a 10 s busy timeout makes writers queue, not fail.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from sqlite_utils import Database

from agi_jupyter.errors import Conflict, UsageError
from agi_jupyter.store import sql
from agi_jupyter.store.migrations import migrate
from agi_jupyter.store.rows import check_limit, dumps
from agi_jupyter.store.sql import ClaimParams, Conn, Params, require_run

AGI_DIR = ".agi"
DB_NAME = "agi.sqlite"
ARTIFACTS_DIR = "artifacts"
BUSY_TIMEOUT_MS = 10_000


class SqliteDialect:
    """SQLite's ``sql.Dialect``: one writer at a time (``BEGIN IMMEDIATE``), so no row locks;
    ``rowid`` orders rows and is the session stream's position."""

    name = "sqlite"
    pos = "rowid"  # the column that orders rows by insertion
    for_update = ""  # row-lock clauses (SQLite's writer holds the database's one write lock)
    for_share = ""
    for_key_share = ""
    skip_locked = ""
    rewrites_parts = True  # m005's triggers clear ``messages.parts`` when parts rows change
    stream_position = "e.rowid"  # of ``run_events e`` in the session stream
    stream_of_session = "run_events e JOIN runs r ON r.id = e.run_id WHERE r.session_id = ?"
    stream_columns: tuple[str, ...] = ()  # what ``reserve_stream`` adds to each event row

    def any_of(self, column: str) -> str:
        return f"{column} IN (SELECT value FROM json_each(?))"

    def any_value(self, values: Sequence[Any]) -> Any:
        return dumps(list(values))

    def limit(self, limit: int | None, *, name: str = "limit") -> int | None:
        return check_limit(limit, name=name)

    def text(self, value: str | None) -> str | None:
        return value

    def notify(self, conn: Conn, when: str = "", params: Params = ()) -> None:
        """No notifications: the other processes' ticks poll."""

    def reserve_stream(self, conn: Conn, run_id: str, count: int) -> list[tuple[Any, ...]]:
        require_run(conn, self, run_id)
        return [()] * count

    def stream_cursor(self, position: int) -> str:
        return str(position)

    def stream_position_of(self, cursor: str | None) -> int:
        """The position of a session-stream cursor (its decimal text; None: the start)."""
        if cursor is None:
            return 0
        if not (isinstance(cursor, str) and cursor.isascii() and cursor.isdigit()):
            raise UsageError(
                f"invalid session event cursor {cursor!r} (this SQLite store's cursors are numbers)"
            )
        return int(cursor)

    def claim_due_runs(
        self, db: sql.Database, assignments: str, returning: str, params: ClaimParams
    ) -> list[Any]:
        """Look first without taking the write lock, then claim in one ``UPDATE`` what the
        single writer finds claimable."""
        heads = [params.due, self.any_value(params.exclude), params.stale, params.limit]
        if not db.all(_SQLITE_CLAIMABLE, heads):
            return []  # a read: no write lock taken when there is nothing to claim
        stamps = [params.owner, params.now, params.now, params.now]
        with db.write() as conn:
            return conn.execute(
                f"UPDATE runs SET {assignments} WHERE id IN ({_SQLITE_CLAIMABLE})"
                f" RETURNING {returning}, rowid",
                [*stamps, *heads],
            ).fetchall()


# The due heads of idle sessions' queues (a run waiting for an approval holds the runs queued
# after it in its session) (parameters: now, excluded ids as JSON, the oldest heartbeat still
# alive, limit).
_SQLITE_CLAIMABLE = (
    "SELECT r.id FROM runs r WHERE r.status = 'queued'"
    " AND (r.next_attempt_at IS NULL OR r.next_attempt_at <= ?)"
    " AND r.id NOT IN (SELECT value FROM json_each(?))"
    " AND NOT EXISTS (SELECT 1 FROM runs p WHERE p.session_id = r.session_id"
    "  AND p.status = 'queued' AND p.rowid < r.rowid)"
    " AND NOT EXISTS (SELECT 1 FROM runs b WHERE b.session_id = r.session_id"
    "  AND b.status = 'running' AND b.heartbeat_at >= ?)"
    " AND NOT EXISTS (SELECT 1 FROM runs w WHERE w.session_id = r.session_id"
    "  AND w.status IN ('waiting_approval', 'waiting_execution') AND w.rowid < r.rowid)"
    " ORDER BY r.rowid LIMIT ?"
)


SQLITE = SqliteDialect()


class SqliteDatabase:
    """The ``sql.Database`` of one SQLite file: one connection, opened lazily, behind a lock
    (see the module docstring)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.RLock()
        self._db: Database | None = None
        self._closed = False

    @property
    def dialect(self) -> SqliteDialect:
        return SQLITE

    @property
    def utils(self) -> Database | None:
        """The ``sqlite_utils`` database of the open connection (None: not opened yet)."""
        return self._db

    def close(self) -> None:
        """Close the connection; the store cannot be used afterwards. Safe to call twice."""
        with self._lock:
            self._closed = True
            if self._db is not None:
                self._db.close()
                self._db = None

    def _connection(self, *, create: bool) -> sqlite3.Connection | None:
        """The open connection; opens it when the file exists (or ``create`` is set)."""
        if self._closed:
            raise UsageError("the store is closed")
        if self._db is None:
            if not create and not self.path.exists():
                return None
            self._db = self._open()
        return self._db.conn

    def _open(self) -> Database:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        conn = sqlite3.connect(self.path, timeout=BUSY_TIMEOUT_MS / 1000, check_same_thread=False)
        try:
            conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
            db = Database(conn, execute_plugins=False)
            db.enable_wal()
            # WAL + NORMAL: a commit survives a crash of the process; a power cut may lose the
            # last few commits, never corrupt the file.
            conn.execute("PRAGMA synchronous = NORMAL")
            migrate(db)
        except BaseException:
            conn.close()
            raise
        return db

    @contextmanager
    def write(self) -> Iterator[sqlite3.Connection]:
        """A ``BEGIN IMMEDIATE`` transaction, committed on success (creates the store)."""
        with self._lock:
            conn = self._connection(create=True)
            assert conn is not None
            conn.execute("BEGIN IMMEDIATE")
            try:
                yield conn
            except sqlite3.IntegrityError as e:
                conn.rollback()
                if "UNIQUE" in str(e):
                    raise Conflict(f"conflicting write: {e}") from e
                raise UsageError(f"invalid write: {e}") from e  # e.g. NOT NULL
            except BaseException:
                conn.rollback()
                raise
            conn.commit()

    atomic = write

    @contextmanager
    def read(self) -> Iterator[sqlite3.Connection | None]:
        """A read transaction (one consistent snapshot); ``None`` when there is no store yet."""
        with self._lock:
            conn = self._connection(create=False)
            if conn is None:
                yield None
                return
            conn.execute("BEGIN")
            try:
                yield conn
            finally:
                conn.rollback()

    def all(self, sql: str, params: Params = ()) -> list[Any]:
        """The rows of one SELECT (a single statement needs no explicit transaction)."""
        with self._lock:
            conn = self._connection(create=False)
            return [] if conn is None else conn.execute(sql, params).fetchall()

    def one(self, sql: str, params: Params = ()) -> Any:
        with self._lock:
            conn = self._connection(create=False)
            return None if conn is None else conn.execute(sql, params).fetchone()


def _implements_protocols(db: SqliteDatabase) -> tuple[sql.Database, sql.Dialect]:
    return db, db.dialect  # mypy checks here that they implement the protocols
