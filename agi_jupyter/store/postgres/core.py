"""The PostgreSQL ``sql.Database`` of one project, and the PostgreSQL ``Dialect``.

Connections come from the project's pool in autocommit mode: a single-statement read is one
round trip; a write runs in an explicit transaction (``write``) at READ COMMITTED, where every
read-modify-write either is one statement (``UPDATE ... WHERE version = ?``: PostgreSQL
re-checks the condition on the newest row version) or first locks the rows it depends on
(``FOR UPDATE`` / ``FOR KEY SHARE``), so concurrent writers in any number of processes and
hosts serialise exactly where SQLite's single writer would. The shared SQL's ``?`` placeholders
become psycopg's ``%s`` (``query.to_format``, once per statement text). Database errors become
the package's: a uniqueness violation ``Conflict``, a NOT NULL or bad value ``UsageError``, a
lost or refused connection ``StoreUnavailable``.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import psycopg
from psycopg import errors as pg_errors
from psycopg_pool import PoolClosed, PoolTimeout

from agi_jupyter.errors import Conflict, RunNotFound, StoreUnavailable, UsageError
from agi_jupyter.store import sql
from agi_jupyter.store.postgres import database
from agi_jupyter.store.postgres.query import to_format
from agi_jupyter.store.rows import check_limit
from agi_jupyter.store.sql import ClaimParams, Conn, Cursor, Database, Params

Connection = psycopg.Connection[tuple[Any, ...]]

_format = functools.lru_cache(maxsize=1024)(to_format)


@contextlib.contextmanager
def mapped_errors() -> Iterator[None]:
    """Database errors as the package's (see the module docstring)."""
    try:
        yield
    except pg_errors.UniqueViolation as e:
        raise Conflict(f"conflicting write: {_detail(e)}") from None
    except pg_errors.NotNullViolation as e:
        column = f"{e.diag.table_name}.{e.diag.column_name}"
        raise UsageError(f"invalid write: NOT NULL constraint failed: {column}") from None
    except (pg_errors.DataError, pg_errors.IntegrityError) as e:
        raise UsageError(f"invalid write: {_detail(e)}") from None
    except (psycopg.OperationalError, PoolTimeout) as e:
        raise StoreUnavailable(f"the store's database is unavailable: {_detail(e)}") from None
    except PoolClosed:
        raise UsageError("the store is closed") from None


def _detail(error: Exception) -> str:
    lines = str(error).strip().splitlines()
    return lines[0] if lines else type(error).__name__


class PgConn:
    """A pooled connection speaking the shared SQL (``?`` placeholders)."""

    def __init__(self, conn: Connection) -> None:
        self.raw = conn

    def execute(self, sql: str, parameters: Params = (), /) -> Cursor:
        return self.raw.execute(_format(sql), parameters)

    def executemany(self, sql: str, seq_of_parameters: Sequence[Params], /) -> object:
        with self.raw.cursor() as cur:
            cur.executemany(_format(sql), seq_of_parameters)
        return None


class PostgresDialect:
    """PostgreSQL's spelling (see ``sql.Dialect``) for the project in ``schema``."""

    name = "postgresql"
    pos = "pos"
    for_update = " FOR UPDATE"
    for_share = " FOR SHARE"
    for_key_share = " FOR KEY SHARE"
    skip_locked = " SKIP LOCKED"
    rewrites_parts = False  # no triggers: ``messages.parts`` is written with the row
    stream_position = "e.session_pos"
    stream_of_session = "run_events e WHERE e.session_id = ?"
    stream_columns: tuple[str, ...] = ("session_id", "session_pos")

    def __init__(self, schema: str) -> None:
        self.schema = schema

    def any_of(self, column: str) -> str:
        return f"{column} = ANY(?)"

    def any_value(self, values: Sequence[Any]) -> Any:
        return list(values)

    def limit(self, limit: int | None, *, name: str = "limit") -> int | None:
        size = check_limit(limit, name=name)
        return None if size < 0 else size

    def text(self, value: str | None) -> str | None:
        """PostgreSQL's text cannot hold NUL, which a prompt may contain (SQLite takes it):
        it becomes U+FFFD (as every string parameter does, ``database._NulFreeStr``)."""
        return None if value is None else value.replace("\x00", "\ufffd")

    def notify(self, conn: Conn, when: str = "", params: Params = ()) -> None:
        condition = f" WHERE {when}" if when else ""
        conn.execute(f"SELECT pg_notify(?, ?){condition}", [database.CHANNEL, self.schema, *params])

    def reserve_stream(self, conn: Conn, run_id: str, count: int) -> list[tuple[Any, ...]]:
        """Bump the session's ``event_pos`` counter (``UPDATE ... RETURNING``), which locks
        the session row until the transaction ends: appends to the runs of one session take
        turns, and each sees every earlier append committed (see ``events.py``)."""
        row = conn.execute(
            "UPDATE sessions SET event_pos = event_pos + ?"
            " WHERE id = (SELECT session_id FROM runs WHERE id = ?) RETURNING id, event_pos",
            [count, run_id],
        ).fetchone()
        if row is None:
            raise RunNotFound(f"run {run_id!r} not found")
        session_id, end = row
        return [(session_id, end - count + 1 + i) for i in range(count)]

    def stream_cursor(self, position: int) -> str:
        return f"p{position}"

    def stream_position_of(self, cursor: str | None) -> int:
        if cursor is None:
            return 0
        body = cursor[1:] if isinstance(cursor, str) and cursor.startswith("p") else ""
        if not (body.isascii() and body.isdigit()):
            hint = " (a number is a SQLite store's cursor)" if str(cursor).isdigit() else ""
            raise UsageError(f"invalid session event cursor {cursor!r}{hint}")
        return int(body)

    def claim_due_runs(
        self, db: Database, assignments: str, returning: str, params: ClaimParams
    ) -> list[Any]:
        """One statement: the head (oldest queued run) of each session's queue, if it is
        due, not excluded, and its session has no running run heartbeated since ``stale``;
        locked unless another caller holds it, then claimed if still queued. DISTINCT ON
        keeps one run per session, so a second caller finds that session's head locked and
        skips the session instead of taking the next one."""
        with db.atomic() as conn:
            return conn.execute(
                f"{_HEADS} UPDATE runs SET {assignments} FROM picked"
                " WHERE runs.id = picked.id AND runs.status = 'queued'"
                f" RETURNING {returning}, runs.pos",
                [
                    params.due,
                    params.exclude,
                    params.stale,
                    params.limit,
                    params.owner,
                    params.now,
                    params.now,
                    params.now,
                ],
            ).fetchall()


_HEADS = (
    "WITH heads AS (SELECT DISTINCT ON (session_id) id, session_id, pos, next_attempt_at"
    " FROM runs WHERE status = 'queued' ORDER BY session_id, pos),"
    " due AS (SELECT h.id, h.pos FROM heads h"
    " WHERE (h.next_attempt_at IS NULL OR h.next_attempt_at <= ?)"
    " AND NOT h.id = ANY(?)"
    " AND NOT EXISTS (SELECT 1 FROM runs b WHERE b.session_id = h.session_id"
    " AND b.status = 'running' AND b.heartbeat_at >= ?)"
    " AND NOT EXISTS (SELECT 1 FROM runs w WHERE w.session_id = h.session_id"
    " AND w.status IN ('waiting_approval', 'waiting_execution') AND w.pos < h.pos)),"
    " picked AS (SELECT r.id FROM runs r JOIN due ON due.id = r.id ORDER BY due.pos"
    " LIMIT ? FOR UPDATE OF r SKIP LOCKED)"
)


class PgDatabase:
    """The pool of one project's schema (shared with the other stores of the project in this
    process), its transactions, and its wake-up subscriptions."""

    def __init__(self, database_url: str, *, project_key: str, password: str | None) -> None:
        if not project_key:
            raise UsageError("project_key must not be empty")
        self.project = database.open_project(database.conninfo(database_url, password), project_key)
        self.pool = self.project.pool
        self._dialect = PostgresDialect(self.project.schema)
        self._closed = False
        self._unsubscribe: list[Callable[[], None]] = []

    @property
    def dialect(self) -> PostgresDialect:
        return self._dialect

    def listen(self, callback: Callable[[], None]) -> Callable[[], None]:
        """Wake-ups through LISTEN/NOTIFY: called when another process queues a background
        run of this project (from the listener thread)."""
        self.check_open()
        unsubscribe = database.listen(self.project.info, self.project.schema, callback)
        self._unsubscribe.append(unsubscribe)
        return unsubscribe

    def close(self) -> None:
        """Release the pool (shared with other stores of the project). Safe to call twice."""
        if self._closed:
            return
        self._closed = True
        for unsubscribe in self._unsubscribe:
            unsubscribe()
        database.release(self.project)

    def check_open(self) -> None:
        if self._closed:
            raise UsageError("the store is closed")

    @contextlib.contextmanager
    def atomic(self) -> Iterator[PgConn]:
        """A pooled connection in autocommit mode (each statement its own transaction)."""
        self.check_open()
        with mapped_errors(), self.pool.connection() as conn:
            yield PgConn(conn)

    @contextlib.contextmanager
    def write(self) -> Iterator[PgConn]:
        """One transaction, committed on success, rolled back on any error."""
        with self.atomic() as conn, conn.raw.transaction():
            yield conn

    @contextlib.contextmanager
    def read(self) -> Iterator[PgConn]:
        """A consistent snapshot for several reads (REPEATABLE READ, read-only)."""
        with self.atomic() as conn:
            conn.raw.execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
            try:
                yield conn
            finally:
                conn.raw.execute("ROLLBACK")

    def all(self, sql: str, params: Params = ()) -> list[Any]:
        with self.atomic() as conn:
            return conn.execute(sql, params).fetchall()

    def one(self, sql: str, params: Params = ()) -> Any:
        with self.atomic() as conn:
            return conn.execute(sql, params).fetchone()


def _implements_protocols(db: PgDatabase) -> tuple[sql.Database, sql.Dialect]:
    return db, db.dialect  # mypy checks here that they implement the protocols
