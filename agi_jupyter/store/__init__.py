"""The store: sessions, messages, runs, events, tool calls and artifacts in SQLite.

Code above the store uses the ``Store`` protocol; ``open_store(project_dir)`` returns the SQLite
implementation for ``<project>/.agi/agi.sqlite``.
"""

from agi_jupyter.store.base import ArtifactWriter, Store
from agi_jupyter.store.migrations import MIGRATIONS, migrate
from agi_jupyter.store.sqlite import SqliteStore, open_store

__all__ = ["MIGRATIONS", "ArtifactWriter", "SqliteStore", "Store", "migrate", "open_store"]
