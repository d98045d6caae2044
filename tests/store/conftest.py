"""Fixtures of the store tests.

The conformance tests (``test_conformance_*.py``) take ``store`` / ``make_store`` and run once
per backend (``backend``, from ``tests/postgres_server.py``: ``sqlite``, ``postgres``): they
use the ``Store`` protocol only, so every backend must pass them. ``Store.query`` stands in
for raw SQL where a test counts rows.
The backend-specific tests (``test_sqlite_*``, ``test_postgres_*``) take ``sqlite_store`` /
``make_sqlite_store`` or ``pg_store`` / ``make_pg_store``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from agi_jupyter.records import Run, Session
from agi_jupyter.store import SqliteStore, Store, create_store, open_store

OpenStore = Callable[..., Store]


@pytest.fixture
def project(tmp_path: Path) -> Path:
    folder = tmp_path / "project"
    folder.mkdir()
    return folder


def _opener(make: Callable[..., Store]) -> Iterator[Callable[..., Store]]:
    opened: list[Store] = []

    def open_one(**kwargs: Any) -> Store:
        store = make(**kwargs)
        opened.append(store)
        return store

    yield open_one
    for store in opened:
        store.close()


@pytest.fixture
def make_store(backend: str, project: Path, request: pytest.FixtureRequest) -> Iterator[OpenStore]:
    """Open (more) stores of the test project on the test's backend; all are closed after the
    test. Stores opened twice share their data (the same file, or the same schema)."""
    if backend == "postgres":
        url = request.getfixturevalue("postgres_url")
        yield from _opener(lambda **kw: create_store(project, database_url=url, **kw))
    else:
        yield from _opener(lambda **kw: open_store(project, **kw))


@pytest.fixture
def store(make_store: OpenStore) -> Store:
    return make_store()


@pytest.fixture
def make_sqlite_store(project: Path) -> Iterator[Callable[..., SqliteStore]]:
    yield from _opener(lambda **kw: open_store(project, **kw))  # type: ignore[misc]


@pytest.fixture
def sqlite_store(make_sqlite_store: Callable[..., SqliteStore]) -> SqliteStore:
    return make_sqlite_store()


@pytest.fixture
def make_pg_store(project: Path, postgres_url: str) -> Iterator[OpenStore]:
    yield from _opener(lambda **kw: create_store(project, database_url=postgres_url, **kw))


@pytest.fixture
def pg_store(make_pg_store: OpenStore) -> Store:
    return make_pg_store()


@pytest.fixture
def session(store: Store) -> Session:
    return store.create_session(title="test")


@pytest.fixture
def run(store: Store, session: Session) -> Run:
    return store.create_run(session.id, model="fake")


def count(store: Store, sql: str, *params: Any) -> int:
    """The single number a counting query returns (through the protocol's ``query``)."""
    return int(store.query(sql, params).rows[0][0])


def slots_set(record: object) -> list[str]:
    """The names of the record's slots that hold a value, in order (read without decoding)."""
    names = [n for cls in type(record).__mro__ for n in cls.__dict__.get("__slots__", ())]
    held = []
    for name in names:
        try:
            object.__getattribute__(record, name)
        except AttributeError:
            continue
        held.append(name)
    return held
