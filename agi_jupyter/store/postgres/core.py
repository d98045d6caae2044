"""Connections and transactions of one ``PostgresStore``; the resource mixins build on these.

Connections come from the project's pool in autocommit mode: a single-statement read is one
round trip; a write runs in an explicit transaction (``_write``) at READ COMMITTED, where every
read-modify-write either is one statement (``UPDATE ... WHERE version = %s``: PostgreSQL
re-checks the condition on the newest row version) or first locks the rows it depends on
(``FOR UPDATE`` / ``FOR KEY SHARE``), so concurrent writers in any number of processes and
hosts serialise exactly where SQLite's single writer would. Database errors become the
package's: a uniqueness violation ``Conflict``, a NOT NULL or bad value ``UsageError``, a lost
or refused connection ``StoreUnavailable``.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Sequence
from types import TracebackType
from typing import Any, Self, TypeVar

import psycopg
from psycopg import errors as pg_errors
from psycopg_pool import PoolClosed, PoolTimeout

from agi_jupyter.errors import (
    Conflict,
    RunLost,
    RunNotFound,
    SessionNotFound,
    StoreUnavailable,
    UsageError,
)
from agi_jupyter.records import Page, RunFence
from agi_jupyter.store.postgres import database
from agi_jupyter.store.rows import Mapping, check_limit, decode_cursor, encode_cursor

Connection = psycopg.Connection[tuple[Any, ...]]
Params = Sequence[Any]
R = TypeVar("R")


def limit_value(limit: int | None, *, name: str = "limit") -> int | None:
    """A LIMIT parameter: ``check_limit``'s -1 (no limit) is NULL in PostgreSQL."""
    size = check_limit(limit, name=name)
    return None if size < 0 else size


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


class PgCore:
    """The pool of one project's schema, transactions, and the helpers the mixins share."""

    def __init__(
        self,
        database_url: str,
        *,
        project_key: str,
        password: str | None = None,
        artifact_threshold: int = 65536,
    ) -> None:
        if artifact_threshold < 0:
            raise UsageError("artifact_threshold must be >= 0")
        if not project_key:
            raise UsageError("project_key must not be empty")
        self.artifact_threshold = artifact_threshold
        self._project = database.open_project(
            database.conninfo(database_url, password), project_key
        )
        self._pool = self._project.pool
        self._closed = False
        self._unsubscribe: list[Callable[[], None]] = []

    # --- public ---------------------------------------------------------------------------

    @property
    def location(self) -> str:
        return self._project.location

    @property
    def dialect(self) -> str:
        return "postgresql"

    @property
    def schema(self) -> str:
        """The project's schema in the shared database."""
        return self._project.schema

    @property
    def project_key(self) -> str:
        return self._project.key

    def listen(self, callback: Callable[[], None]) -> Callable[[], None]:
        """Wake-ups through LISTEN/NOTIFY: called when another process queues a background
        run of this project (from the listener thread)."""
        self._check_open()
        unsubscribe = database.listen(self._project.info, self.schema, callback)
        self._unsubscribe.append(unsubscribe)
        return unsubscribe

    def close(self) -> None:
        """Release the pool (shared with other stores of the project). Safe to call twice."""
        if self._closed:
            return
        self._closed = True
        for unsubscribe in self._unsubscribe:
            unsubscribe()
        database.release(self._project)

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.location!r})"

    # --- transactions ---------------------------------------------------------------------

    def _check_open(self) -> None:
        if self._closed:
            raise UsageError("the store is closed")

    @contextlib.contextmanager
    def _connection(self) -> Iterator[Connection]:
        """A pooled connection in autocommit mode (each statement its own transaction)."""
        self._check_open()
        with mapped_errors(), self._pool.connection() as conn:
            yield conn

    @contextlib.contextmanager
    def _write(self) -> Iterator[Connection]:
        """One transaction, committed on success, rolled back on any error."""
        with self._connection() as conn, conn.transaction():
            yield conn

    @contextlib.contextmanager
    def _read(self) -> Iterator[Connection]:
        """A consistent snapshot for several reads (REPEATABLE READ, read-only)."""
        with self._connection() as conn:
            conn.execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
            try:
                yield conn
            finally:
                conn.execute("ROLLBACK")

    def _all(self, sql: str, params: Params = ()) -> list[Any]:
        with self._connection() as conn:
            return conn.execute(sql, params).fetchall()

    def _one(self, sql: str, params: Params = ()) -> Any:
        with self._connection() as conn:
            return conn.execute(sql, params).fetchone()

    def _page(
        self,
        mapping: Mapping[R],
        filters: list[tuple[str, Any]],
        *,
        limit: int,
        cursor: str | None,
    ) -> Page[R]:
        """Newest first, by ``pos`` (the cursor encodes the last ``pos`` seen, as SQLite's
        encodes a rowid). ``filters`` are (condition with one ``%s``, value) pairs, ANDed."""
        size = check_limit(limit)
        if cursor is not None:
            filters = [*filters, ("pos < %s", decode_cursor(cursor, mapping.table))]
        where = " AND ".join(condition for condition, _ in filters) or "TRUE"
        rows = self._all(
            f"SELECT {mapping.select()}, pos FROM {mapping.table} WHERE {where}"
            " ORDER BY pos DESC LIMIT %s",
            [*(value for _, value in filters), size + 1],
        )
        items = [mapping.from_row(row[:-1]) for row in rows[:size]]
        more = len(rows) > size
        return Page(
            items=items,
            next_cursor=encode_cursor(mapping.table, rows[size - 1][-1]) if more else None,
        )

    # --- helpers for the mixins -----------------------------------------------------------

    @staticmethod
    def _set_clause(values: dict[str, Any]) -> tuple[str, list[Any]]:
        """``col = %s, ...`` for column names already validated by a ``rows.Mapping``."""
        return ", ".join(f"{name} = %s" for name in values), list(values.values())

    @staticmethod
    def _insert(conn: Connection, table: str, row: dict[str, Any]) -> None:
        columns = ", ".join(row)
        marks = ", ".join("%s" for _ in row)
        conn.execute(f"INSERT INTO {table} ({columns}) VALUES ({marks})", list(row.values()))

    @staticmethod
    def _require_session(conn: Connection, session_id: str) -> None:
        """The session exists, and stays until this transaction ends (a concurrent delete
        waits): what a foreign key would guarantee."""
        found = conn.execute(
            "SELECT 1 FROM sessions WHERE id = %s FOR KEY SHARE", [session_id]
        ).fetchone()
        if found is None:
            raise SessionNotFound(f"session {session_id!r} not found")

    @staticmethod
    def _check_fence(conn: Connection, fence: RunFence | None) -> None:
        """Inside a write transaction, before its writes: raise ``RunLost`` unless ``fence``
        holds (the run's owner and epoch are the fence's). ``FOR SHARE`` keeps it holding
        until this transaction ends: a hand-over (an ``UPDATE`` of the run's owner) waits for
        the write to commit, as SQLite's single writer would make it. Writes that update the
        run row itself fence in their ``UPDATE``'s ``WHERE`` instead (two share locks both
        upgrading would deadlock)."""
        if fence is None:
            return
        row = conn.execute(
            "SELECT 1 FROM runs WHERE id = %s AND owner = %s AND epoch = %s FOR SHARE",
            [fence.run_id, fence.owner, fence.epoch],
        ).fetchone()
        if row is None:
            raise RunLost(f"run {fence.run_id} is no longer owned by {fence.owner}")

    @staticmethod
    def _require_run(conn: Connection, run_id: str) -> str:
        """The run exists (and stays, as ``_require_session``); returns its session id."""
        row = conn.execute("SELECT session_id FROM runs WHERE id = %s FOR KEY SHARE", [run_id])
        found = row.fetchone()
        if found is None:
            raise RunNotFound(f"run {run_id!r} not found")
        return str(found[0])
