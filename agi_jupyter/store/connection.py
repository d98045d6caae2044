"""The SQLite connection every repository of ``SqliteStore`` shares, and its transactions.

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
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from sqlite_utils import Database

from agi_jupyter.errors import Conflict, UsageError
from agi_jupyter.store import sql
from agi_jupyter.store.migrations import migrate
from agi_jupyter.store.sql import Dialect, Params

AGI_DIR = ".agi"
DB_NAME = "agi.sqlite"
ARTIFACTS_DIR = "artifacts"
BUSY_TIMEOUT_MS = 10_000


SQLITE = Dialect()


class SqliteDatabase:
    """The ``sql.Database`` of one SQLite file: one connection, opened lazily, behind a lock
    (see the module docstring)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.RLock()
        self._db: Database | None = None
        self._closed = False

    @property
    def dialect(self) -> Dialect:
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


def _implements_database(db: SqliteDatabase) -> sql.Database:
    return db  # mypy checks here that SqliteDatabase is a sql.Database
