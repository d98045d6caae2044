"""``SqliteStore``: the ``Store`` protocol over ``<project>/.agi/agi.sqlite``.

The class only assembles the per-resource mixins; the connection and transactions are in
``connection.py``, the row mapping in ``rows.py`` and the schema in ``migrations.py``.
"""

from __future__ import annotations

from pathlib import Path

from agi_jupyter.store.artifacts import ArtifactsMixin
from agi_jupyter.store.base import Store
from agi_jupyter.store.changes import ChangesMixin
from agi_jupyter.store.events import EventsMixin
from agi_jupyter.store.messages import MessagesMixin
from agi_jupyter.store.misc import CapabilitiesMixin, StatsMixin, TasksMixin, WebhooksMixin
from agi_jupyter.store.readonly import QueryMixin
from agi_jupyter.store.runs import RunsMixin
from agi_jupyter.store.sessions import SessionsMixin


class SqliteStore(
    SessionsMixin,
    MessagesMixin,
    RunsMixin,
    EventsMixin,
    ArtifactsMixin,
    WebhooksMixin,
    TasksMixin,
    CapabilitiesMixin,
    StatsMixin,
    QueryMixin,
    ChangesMixin,
):
    """The SQLite store of one project. Nothing touches the disk until the first write.

    Safe to share between threads (one connection behind a lock) and to open from several
    processes at once (WAL, busy timeout, ``BEGIN IMMEDIATE`` for every write).
    """


def open_store(project_dir: str | Path, *, artifact_threshold: int = 65536) -> SqliteStore:
    """The store of the project in ``project_dir`` (``.agi/agi.sqlite`` is made on first write)."""
    return SqliteStore(project_dir, artifact_threshold=artifact_threshold)


def _implements_protocol(store: SqliteStore) -> Store:
    return store  # mypy checks here that SqliteStore satisfies the Store protocol
