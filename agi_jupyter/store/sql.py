"""What the store's repositories share: the SQL dialect, the database interface, and helpers.

The store's logic (``sessions.py``, ``runs.py``, ... ) is written once, in SQL both backends
run, with ``?`` placeholders (the PostgreSQL connection turns them into ``%s``). Where the two
databases spell something differently, the statement asks the ``Dialect``:

- the insertion-order column (SQLite ``rowid``, PostgreSQL ``pos``) and its page cursors;
- row locks (``FOR UPDATE`` / ``FOR SHARE`` / ``FOR KEY SHARE`` / ``SKIP LOCKED`` on
  PostgreSQL; nothing on SQLite, whose ``BEGIN IMMEDIATE`` already holds the one write lock);
- "one of these values" (``json_each`` of a JSON text, ``= ANY`` of an array), LIMIT without a
  limit, text NUL (PostgreSQL's text cannot hold it);
- wake-ups (``pg_notify``; SQLite has none: ticks poll);
- the session stream's position (SQLite: the event's ``rowid``; PostgreSQL: ``session_pos``,
  handed out under the session row's lock, see ``postgres/core.py``);
- the one statement that is genuinely different: claiming due runs.

The connection and its transactions are the backend's ``Database`` (``connection.py``:
``sqlite3`` and one lock; ``postgres/core.py``: a psycopg pool), which also maps the driver's
errors into the package's.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

from agi_jupyter.errors import RunLost, RunNotFound, SessionNotFound
from agi_jupyter.records import Page, RunFence
from agi_jupyter.store.rows import Mapping, check_limit, decode_cursor, encode_cursor

R = TypeVar("R")
Params = Sequence[Any]


class Cursor(Protocol):
    """An executed statement of either driver (``sqlite3`` or ``psycopg`` cursor)."""

    @property
    def rowcount(self) -> int: ...
    def fetchone(self) -> Any: ...
    def fetchall(self) -> list[Any]: ...
    def fetchmany(self, size: int = ..., /) -> list[Any]: ...
    def __iter__(self) -> Iterator[Any]: ...


class Conn(Protocol):
    """A connection inside a transaction; SQL with ``?`` placeholders."""

    def execute(self, sql: str, parameters: Params = (), /) -> Cursor: ...
    def executemany(self, sql: str, seq_of_parameters: Sequence[Params], /) -> object: ...


class Database(Protocol):
    """One backend's connection(s) and transactions, and its dialect."""

    @property
    def dialect(self) -> Dialect: ...

    def close(self) -> None: ...

    def write(self) -> AbstractContextManager[Conn]:
        """One transaction, committed on success, rolled back on any error."""
        ...

    def read(self) -> AbstractContextManager[Conn | None]:
        """A consistent snapshot for several reads (None: SQLite before its first write)."""
        ...

    def atomic(self) -> AbstractContextManager[Conn]:
        """A connection whose statements are each atomic on their own (PostgreSQL:
        autocommit, one round trip each; SQLite: a write transaction)."""
        ...

    def all(self, sql: str, params: Params = ()) -> list[Any]:
        """The rows of one SELECT (empty: no store yet)."""
        ...

    def one(self, sql: str, params: Params = ()) -> Any:
        """The first row of one statement, or None."""
        ...


class Dialect(Protocol):
    """How one backend spells what the shared SQL needs (see the module docstring):
    ``connection.SqliteDialect`` and ``postgres.core.PostgresDialect``."""

    name: str  # ``Store.dialect``
    pos: str  # the column that orders a table's rows by insertion
    for_update: str  # row-lock clauses appended to a SELECT ("" where the writer is alone)
    for_share: str
    for_key_share: str
    skip_locked: str
    rewrites_parts: bool  # triggers clear ``messages.parts`` when parts rows change (m005)
    stream_position: str  # the session stream's position of ``run_events e``
    stream_of_session: str  # ``run_events e`` of the session given as a parameter
    stream_columns: tuple[str, ...]  # what ``reserve_stream`` adds to each event row

    def any_of(self, column: str) -> str:
        """SQL: ``column`` is one of the values of the parameter ``any_value`` makes."""
        ...

    def any_value(self, values: Sequence[Any]) -> Any: ...

    def limit(self, limit: int | None, *, name: str = "limit") -> int | None:
        """A LIMIT parameter (``None``: no limit)."""
        ...

    def text(self, value: str | None) -> str | None:
        """A text column's value as this database can store it (NUL)."""
        ...

    def notify(self, conn: Conn, when: str = "", params: Params = ()) -> None:
        """Wake the other servers' ticks (at commit), if the condition ``when`` holds."""
        ...

    def reserve_stream(self, conn: Conn, run_id: str, count: int) -> list[tuple[Any, ...]]:
        """Before appending ``count`` events to a run: the values of ``stream_columns`` for
        each (``RunNotFound`` for an unknown run)."""
        ...

    def stream_cursor(self, position: int) -> str: ...

    def stream_position_of(self, cursor: str | None) -> int:
        """The position of a session-stream cursor (None: the start; malformed, or another
        backend's: ``UsageError``)."""
        ...

    def claim_due_runs(
        self, db: Database, assignments: str, returning: str, params: ClaimParams
    ) -> list[Any]:
        """Claim the due queue heads (``Runs.claim_due_runs``) with the claim's
        ``assignments`` (parameters: owner, then the time three times): the claimed rows
        (``returning``), each with its position last."""
        ...


@dataclass(frozen=True)
class ClaimParams:
    """What ``Dialect.claim_due_runs`` claims for whom (see ``Store.claim_due_runs``)."""

    owner: str
    now: str
    due: str
    exclude: list[str]
    stale: str
    limit: int


# --- helpers of the repositories ------------------------------------------------------------


def set_clause(values: dict[str, Any]) -> tuple[str, list[Any]]:
    """``col = ?, ...`` for column names already validated by a ``rows.Mapping``."""
    return ", ".join(f"{name} = ?" for name in values), list(values.values())


def insert(conn: Conn, table: str, row: dict[str, Any]) -> None:
    columns = ", ".join(row)
    marks = ", ".join("?" for _ in row)
    conn.execute(f"INSERT INTO {table} ({columns}) VALUES ({marks})", list(row.values()))


def require_session(conn: Conn, dialect: Dialect, session_id: str) -> None:
    """The session exists, and stays until this transaction ends (a concurrent delete waits):
    what a foreign key would guarantee."""
    found = conn.execute(
        f"SELECT 1 FROM sessions WHERE id = ?{dialect.for_key_share}", [session_id]
    ).fetchone()
    if found is None:
        raise SessionNotFound(f"session {session_id!r} not found")


def require_run(conn: Conn, dialect: Dialect, run_id: str) -> str:
    """The run exists (and stays, as ``require_session``); returns its session id."""
    found = conn.execute(
        f"SELECT session_id FROM runs WHERE id = ?{dialect.for_key_share}", [run_id]
    ).fetchone()
    if found is None:
        raise RunNotFound(f"run {run_id!r} not found")
    return str(found[0])


def check_fence(conn: Conn, dialect: Dialect, fence: RunFence | None) -> None:
    """Inside a write transaction, before its writes: raise ``RunLost`` unless ``fence`` holds
    (the run's owner and epoch are the fence's), and keep it holding until the transaction
    ends: SQLite's ``BEGIN IMMEDIATE`` holds the write lock from this read on; PostgreSQL's
    ``FOR SHARE`` makes a hand-over (an ``UPDATE`` of the run's owner) wait for the commit.
    Writes that update the run row itself fence in their ``UPDATE``'s ``WHERE`` instead (two
    share locks both upgrading would deadlock)."""
    if fence is None:
        return
    row = conn.execute(
        f"SELECT 1 FROM runs WHERE id = ? AND owner = ? AND epoch = ?{dialect.for_share}",
        [fence.run_id, fence.owner, fence.epoch],
    ).fetchone()
    if row is None:
        raise RunLost(f"run {fence.run_id} is no longer owned by {fence.owner}")


def page(
    db: Database,
    mapping: Mapping[R],
    filters: list[tuple[str, Any]],
    *,
    limit: int,
    cursor: str | None,
) -> Page[R]:
    """Newest first, by the insertion-order column: a row inserted later always gets a larger
    one, so rows added while a client pages never shift the pages still to come (the cursor
    encodes the last position seen). ``filters`` are (condition with one ``?``, value)
    pairs, ANDed."""
    size = check_limit(limit)
    pos = db.dialect.pos
    if cursor is not None:
        filters = [*filters, (f"{pos} < ?", decode_cursor(cursor, mapping.table))]
    where = " AND ".join(condition for condition, _ in filters) or "TRUE"
    rows = db.all(
        f"SELECT {mapping.select()}, {pos} FROM {mapping.table} WHERE {where}"
        f" ORDER BY {pos} DESC LIMIT ?",
        [*(value for _, value in filters), size + 1],
    )
    items = [mapping.from_row(row[:-1]) for row in rows[:size]]
    more = len(rows) > size
    return Page(
        items=items,
        next_cursor=encode_cursor(mapping.table, rows[size - 1][-1]) if more else None,
    )
