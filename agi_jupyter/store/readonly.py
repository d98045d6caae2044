"""Read-only SQL on a SQLite database: ``SqliteStore.query`` (``query``) and the ``sql.query``
tool's own data database.

A query runs on a separate connection opened with ``mode=ro`` and ``PRAGMA query_only``, so it
can inspect the store but never change it, whatever the statement; ATTACH is refused, so it
cannot reach other database files. One statement per call (``sqlite3`` refuses more).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from pathlib import Path
from typing import Any
from urllib.parse import quote

from agi_jupyter.errors import UsageError
from agi_jupyter.records import QueryResult
from agi_jupyter.store.connection import BUSY_TIMEOUT_MS


def _deny_attach(action: int, *_: object) -> int:
    if action in (sqlite3.SQLITE_ATTACH, sqlite3.SQLITE_DETACH):
        return sqlite3.SQLITE_DENY
    return sqlite3.SQLITE_OK


def connect(path: Path, *, read_only: bool) -> sqlite3.Connection:
    """A connection with a busy timeout; read-only ones use ``mode=ro`` and ``query_only``.
    A read-only connection to a file that does not exist is a ``UsageError``."""
    if read_only:
        if not path.exists():
            raise UsageError(f"the database {path.name} does not exist yet")
        uri = f"file:{quote(str(path))}?mode=ro"
        conn = sqlite3.connect(uri, uri=True, isolation_level=None, check_same_thread=False)
        conn.execute("PRAGMA query_only=1")
    else:
        path.parent.mkdir(parents=True, exist_ok=True)
        conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    conn.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
    conn.set_authorizer(_deny_attach)
    return conn


def fetch(cursor: sqlite3.Cursor, max_rows: int) -> QueryResult:
    """The columns and at most ``max_rows`` rows of an executed statement."""
    columns = [d[0] for d in cursor.description or ()]
    rows = cursor.fetchmany(max_rows + 1) if columns else []
    return QueryResult(
        columns=columns, rows=[tuple(r) for r in rows[:max_rows]], truncated=len(rows) > max_rows
    )


def query(path: Path, sql: str, params: Sequence[Any], *, max_rows: int) -> QueryResult:
    """One read-only statement on the store file ``path`` (see the module docstring)."""
    if isinstance(max_rows, bool) or not isinstance(max_rows, int) or max_rows < 1:
        raise UsageError(f"max_rows must be a positive integer, got {max_rows!r}")
    if not path.exists():
        raise UsageError("the store is empty: nothing has been written to it yet")
    conn = connect(path, read_only=True)
    try:
        return fetch(conn.execute(sql, list(params)), max_rows)
    except sqlite3.Error as e:
        raise UsageError(f"{type(e).__name__}: {e}") from None
    finally:
        conn.close()
