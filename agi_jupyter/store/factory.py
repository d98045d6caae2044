"""Which store a project uses: its SQLite file, or a shared PostgreSQL database.

``create_store`` is what the composition root calls with the configured settings; only a
``database_url`` imports the PostgreSQL driver (the ``agi-jupyter[postgres]`` extra).
"""

from __future__ import annotations

from pathlib import Path

from agi_jupyter.errors import ConfigError
from agi_jupyter.store.base import Store
from agi_jupyter.store.connection import AGI_DIR, DB_NAME
from agi_jupyter.store.sqlite import SqliteStore


def create_store(
    project_dir: str | Path,
    *,
    artifact_threshold: int = 65536,
    database_url: str | None = None,
    database_password: str | None = None,
    project_key: str | None = None,
) -> Store:
    """The project's store: SQLite in ``<project>/.agi/`` unless ``database_url`` names a
    PostgreSQL database, where the project is ``project_key`` (default: the folder's path)."""
    if database_url is None:
        return SqliteStore(project_dir, artifact_threshold=artifact_threshold)
    try:
        from agi_jupyter.store.postgres import PostgresStore
    except ImportError:
        raise ConfigError(
            "database_url needs the PostgreSQL driver: pip install 'agi-jupyter[postgres]'"
        ) from None
    return PostgresStore(
        database_url,
        project_key=project_key or str(Path(project_dir).resolve()),
        password=database_password,
        artifact_threshold=artifact_threshold,
    )


def store_exists(project_dir: str | Path, *, database_url: str | None = None) -> bool:
    """Whether a server should tick the project before anyone opens it: its SQLite file
    exists, or (a shared database) always, since other servers may have queued runs in it."""
    if database_url is not None:
        return True
    return (Path(project_dir) / AGI_DIR / DB_NAME).is_file()
