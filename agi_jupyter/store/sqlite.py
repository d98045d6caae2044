"""``SqliteStore``: the ``Store`` protocol over ``<project>/.agi/agi.sqlite``.

The repositories are ``SqlStore``'s; the connection and transactions are in ``connection.py``
(``SqliteDatabase``), the row mapping in ``rows.py``, the schema in ``migrations.py`` and
artifacts' large payloads in files (``artifacts.FilePayloads``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from agi_jupyter.errors import UsageError
from agi_jupyter.records import QueryResult
from agi_jupyter.store import readonly
from agi_jupyter.store.artifacts import FilePayloads
from agi_jupyter.store.base import Store
from agi_jupyter.store.connection import AGI_DIR, DB_NAME, SqliteDatabase
from agi_jupyter.store.sql_store import SqlStore


def _no_op() -> None:
    pass


class SqliteStore(SqlStore):
    """The SQLite store of one project. Nothing touches the disk until the first write.

    Safe to share between threads (one connection behind a lock) and to open from several
    processes at once (WAL, busy timeout, ``BEGIN IMMEDIATE`` for every write).
    """

    def __init__(self, project_dir: str | Path, *, artifact_threshold: int = 65536) -> None:
        if artifact_threshold < 0:
            raise UsageError("artifact_threshold must be >= 0")
        self.project_dir = Path(project_dir).resolve()
        self.path = self.project_dir / AGI_DIR / DB_NAME
        self._database = SqliteDatabase(self.path)
        self._files = FilePayloads(self.project_dir)
        super().__init__(self._database, self._files, artifact_threshold=artifact_threshold)
        # Raw transactions, for tests and benchmarks that read or set rows behind the store.
        self._write = self._database.write
        self._read = self._database.read

    @property
    def location(self) -> str:
        return str(self.path)

    @property
    def artifacts_dir(self) -> Path:
        return self._files.folder

    def listen(self, callback: Callable[[], None]) -> Callable[[], None]:
        """SQLite has no notifications: the callback is never called (ticks poll)."""
        return _no_op

    def query(self, sql: str, params: Sequence[Any] = (), *, max_rows: int = 200) -> QueryResult:
        """One read-only statement on the store file (``readonly.query``)."""
        return readonly.query(self.path, sql, params, max_rows=max_rows)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({str(self.project_dir)!r})"


def open_store(project_dir: str | Path, *, artifact_threshold: int = 65536) -> SqliteStore:
    """The store of the project in ``project_dir`` (``.agi/agi.sqlite`` is made on first write)."""
    return SqliteStore(project_dir, artifact_threshold=artifact_threshold)


def _implements_protocol(store: SqliteStore) -> Store:
    return store  # mypy checks here that SqliteStore satisfies the Store protocol
