"""The store: sessions, messages, runs, events, tool calls and artifacts.

Code above the store uses the ``Store`` protocol. ``create_store`` picks the backend a project
is configured with: ``SqliteStore`` over ``<project>/.agi/agi.sqlite`` (``open_store``, the
default), or ``store.postgres.PostgresStore`` over a shared PostgreSQL database.
"""

from agi_jupyter.store.base import ArtifactWriter, Store
from agi_jupyter.store.factory import create_store, store_exists
from agi_jupyter.store.migrations import MIGRATIONS, migrate
from agi_jupyter.store.sqlite import SqliteStore, open_store

__all__ = [
    "MIGRATIONS",
    "ArtifactWriter",
    "SqliteStore",
    "Store",
    "create_store",
    "migrate",
    "open_store",
    "store_exists",
]
