"""``PostgresStore``: the ``Store`` protocol over a PostgreSQL database that several servers
share (JupyterHub user servers, replicas of one service).

Importing this package imports ``psycopg`` (the ``agi-jupyter[postgres]`` extra); nothing else
in the package does until a ``database_url`` is configured (``store.create_store``). The
repositories are ``SqlStore``'s, in the shared SQL; here are what only PostgreSQL has:
``database.py`` (schemas, pools, the LISTEN thread), ``core.py`` (transactions and the
``PostgresDialect``: locks, wake-ups, the session stream's positions, claims with
``SKIP LOCKED``), ``artifacts.py`` (payloads in the rows), ``query.py`` and ``migrations.py``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from psycopg_pool import ConnectionPool

from agi_jupyter.errors import UsageError
from agi_jupyter.records import QueryResult
from agi_jupyter.store.base import Store
from agi_jupyter.store.postgres import query
from agi_jupyter.store.postgres.artifacts import RowPayloads
from agi_jupyter.store.postgres.core import PgDatabase
from agi_jupyter.store.sql_store import SqlStore

__all__ = ["PostgresStore"]


class PostgresStore(SqlStore):
    """One project's data in a shared PostgreSQL database (its own schema, named by
    ``project_key``). Safe to share between threads (a connection pool) and to use from any
    number of processes and hosts at once. Opening it creates and migrates the schema."""

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
        self._database = PgDatabase(database_url, project_key=project_key, password=password)
        super().__init__(
            self._database, RowPayloads(self._database), artifact_threshold=artifact_threshold
        )
        # Raw transactions, for tests and benchmarks that read or set rows behind the store.
        self._write = self._database.write
        self._read = self._database.read

    @property
    def location(self) -> str:
        return self._database.project.location

    @property
    def schema(self) -> str:
        """The project's schema in the shared database."""
        return self._database.project.schema

    @property
    def project_key(self) -> str:
        return self._database.project.key

    @property
    def _pool(self) -> ConnectionPool[Any]:
        return self._database.pool

    def listen(self, callback: Callable[[], None]) -> Callable[[], None]:
        return self._database.listen(callback)

    def query(self, sql: str, params: Sequence[Any] = (), *, max_rows: int = 200) -> QueryResult:
        """One read-only statement in the project's schema (``query.query``)."""
        self._database.check_open()
        return query.query(self._database.project, sql, params, max_rows=max_rows)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.location!r})"


def _implements_protocol(store: PostgresStore) -> Store:
    return store  # mypy checks here that PostgresStore satisfies the Store protocol
