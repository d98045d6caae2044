"""``PostgresStore``: the ``Store`` protocol over a PostgreSQL database that several servers
share (JupyterHub user servers, replicas of one service).

Importing this package imports ``psycopg`` (the ``agi-jupyter[postgres]`` extra); nothing else
in the package does until a ``database_url`` is configured (``store.create_store``). See
``database.py`` for schemas and pools, ``core.py`` for transactions, ``runs.py`` for claims and
``events.py`` for the session stream's cursor.
"""

from __future__ import annotations

from agi_jupyter.store.base import Store
from agi_jupyter.store.postgres.artifacts import PgArtifactsMixin
from agi_jupyter.store.postgres.changes import PgChangesMixin
from agi_jupyter.store.postgres.events import PgEventsMixin
from agi_jupyter.store.postgres.messages import PgMessagesMixin
from agi_jupyter.store.postgres.misc import (
    PgCapabilitiesMixin,
    PgStatsMixin,
    PgTasksMixin,
    PgWebhooksMixin,
)
from agi_jupyter.store.postgres.query import PgQueryMixin
from agi_jupyter.store.postgres.runs import PgRunsMixin
from agi_jupyter.store.postgres.sessions import PgSessionsMixin

__all__ = ["PostgresStore"]


class PostgresStore(
    PgSessionsMixin,
    PgMessagesMixin,
    PgRunsMixin,
    PgEventsMixin,
    PgArtifactsMixin,
    PgWebhooksMixin,
    PgTasksMixin,
    PgCapabilitiesMixin,
    PgStatsMixin,
    PgQueryMixin,
    PgChangesMixin,
):
    """One project's data in a shared PostgreSQL database (its own schema, named by
    ``project_key``). Safe to share between threads (a connection pool) and to use from any
    number of processes and hosts at once. Opening it creates and migrates the schema."""


def _implements_protocol(store: PostgresStore) -> Store:
    return store  # mypy checks here that PostgresStore satisfies the Store protocol
