"""The SQLite connection every part of ``SqliteStore`` shares, and its transactions.

One connection per store object, opened lazily with ``check_same_thread=False`` and guarded by a
lock (the kernel's main thread and an event-loop thread share it). The database file is created
on the first write only: a read on a project without ``.agi/agi.sqlite`` sees an empty store and
creates nothing. Writes run in short ``BEGIN IMMEDIATE`` transactions, so a read-modify-write
sequence holds the write lock from its first read and two processes never lose an update; WAL
mode lets readers carry on meanwhile, and a 10 s busy timeout makes writers queue, not fail.
"""

from __future__ import annotations

import shutil
import sqlite3
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from types import TracebackType
from typing import Any, Self, TypeVar

from sqlite_utils import Database

from agi_jupyter.errors import Conflict, RunLost, RunNotFound, SessionNotFound, UsageError
from agi_jupyter.records import Page, RunFence
from agi_jupyter.store.migrations import migrate
from agi_jupyter.store.rows import Mapping, check_limit, decode_cursor, encode_cursor

AGI_DIR = ".agi"
DB_NAME = "agi.sqlite"
ARTIFACTS_DIR = "artifacts"
BUSY_TIMEOUT_MS = 10_000

Params = Sequence[Any]
R = TypeVar("R")


def _no_op() -> None:
    pass


class StoreCore:
    """Connection, transactions and paths; the resource mixins build on these."""

    def __init__(self, project_dir: str | Path, *, artifact_threshold: int = 65536) -> None:
        if artifact_threshold < 0:
            raise UsageError("artifact_threshold must be >= 0")
        self._project_dir = Path(project_dir).resolve()
        self._path = self._project_dir / AGI_DIR / DB_NAME
        self.artifact_threshold = artifact_threshold
        self._lock = threading.RLock()
        self._db: Database | None = None
        self._closed = False

    # --- public ---------------------------------------------------------------------------

    @property
    def path(self) -> Path:
        """The database file (it may not exist yet: it is created on the first write)."""
        return self._path

    @property
    def location(self) -> str:
        return str(self._path)

    @property
    def dialect(self) -> str:
        return "sqlite"

    def listen(self, callback: Callable[[], None]) -> Callable[[], None]:
        """SQLite has no notifications: the callback is never called (ticks poll)."""
        return _no_op

    @property
    def project_dir(self) -> Path:
        return self._project_dir

    @property
    def artifacts_dir(self) -> Path:
        return self._project_dir / AGI_DIR / ARTIFACTS_DIR

    def close(self) -> None:
        """Close the connection; the store cannot be used afterwards. Safe to call twice."""
        with self._lock:
            self._closed = True
            if self._db is not None:
                self._db.close()
                self._db = None

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
        return f"{type(self).__name__}({str(self._project_dir)!r})"

    # --- connection -----------------------------------------------------------------------

    def _connection(self, *, create: bool) -> sqlite3.Connection | None:
        """The open connection; opens it when the file exists (or ``create`` is set)."""
        if self._closed:
            raise UsageError("the store is closed")
        if self._db is None:
            if not create and not self._path.exists():
                return None
            self._db = self._open()
        return self._db.conn

    def _open(self) -> Database:
        self._path.parent.mkdir(parents=True, exist_ok=True)
        conn = sqlite3.connect(self._path, timeout=BUSY_TIMEOUT_MS / 1000, check_same_thread=False)
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
    def _write(self) -> Iterator[sqlite3.Connection]:
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

    @contextmanager
    def _read(self) -> Iterator[sqlite3.Connection | None]:
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

    def _all(self, sql: str, params: Params = ()) -> list[Any]:
        """The rows of one SELECT (a single statement needs no explicit transaction)."""
        with self._lock:
            conn = self._connection(create=False)
            return [] if conn is None else conn.execute(sql, params).fetchall()

    def _one(self, sql: str, params: Params = ()) -> Any:
        with self._lock:
            conn = self._connection(create=False)
            return None if conn is None else conn.execute(sql, params).fetchone()

    def _page(
        self,
        mapping: Mapping[R],
        filters: list[tuple[str, Any]],
        *,
        limit: int,
        cursor: str | None,
    ) -> Page[R]:
        """Newest first, by rowid: a row inserted later always gets a larger rowid, so rows
        added while a client pages never shift the pages still to come. ``filters`` are
        (SQL condition with one ``?``, value) pairs, ANDed."""
        size = check_limit(limit)
        if cursor is not None:
            filters = [*filters, ("rowid < ?", decode_cursor(cursor, mapping.table))]
        where = " AND ".join(condition for condition, _ in filters) or "1"
        rows = self._all(
            f"SELECT {mapping.select()}, rowid FROM {mapping.table} WHERE {where}"
            " ORDER BY rowid DESC LIMIT ?",
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
        """``col = ?, ...`` for column names already validated by a ``rows.Mapping``."""
        return ", ".join(f"{name} = ?" for name in values), list(values.values())

    @staticmethod
    def _insert(conn: sqlite3.Connection, table: str, row: dict[str, Any]) -> None:
        columns = ", ".join(row)
        marks = ", ".join("?" for _ in row)
        conn.execute(f"INSERT INTO {table} ({columns}) VALUES ({marks})", list(row.values()))

    def _remove_artifact_files(self, artifact_ids: Sequence[str]) -> None:
        """Delete the folders of artifacts whose rows are gone (best effort)."""
        for artifact_id in artifact_ids:
            folder = self.artifacts_dir / artifact_id
            if folder.is_dir():
                shutil.rmtree(folder, ignore_errors=True)

    @staticmethod
    def _require_session(conn: sqlite3.Connection, session_id: str) -> None:
        if conn.execute("SELECT 1 FROM sessions WHERE id = ?", [session_id]).fetchone() is None:
            raise SessionNotFound(f"session {session_id!r} not found")

    @staticmethod
    def _check_fence(conn: sqlite3.Connection, fence: RunFence | None) -> None:
        """Inside a write transaction: raise ``RunLost`` unless ``fence`` still holds (the
        run's owner and epoch are the fence's). ``BEGIN IMMEDIATE`` holds the write lock from
        this read on, so no hand-over can come between the check and the write."""
        if fence is None:
            return
        row = conn.execute("SELECT owner, epoch FROM runs WHERE id = ?", [fence.run_id]).fetchone()
        if row is None or row[0] != fence.owner or row[1] != fence.epoch:
            raise RunLost(f"run {fence.run_id} is no longer owned by {fence.owner}")

    @staticmethod
    def _require_run(conn: sqlite3.Connection, run_id: str) -> None:
        if conn.execute("SELECT 1 FROM runs WHERE id = ?", [run_id]).fetchone() is None:
            raise RunNotFound(f"run {run_id!r} not found")
