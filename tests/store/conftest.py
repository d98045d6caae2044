"""Fixtures of the store tests: a store on an empty temporary project, closed afterwards."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from agi_jupyter.records import Run, Session
from agi_jupyter.store import SqliteStore, open_store

OpenStore = Callable[..., SqliteStore]


@pytest.fixture
def project(tmp_path: Path) -> Path:
    folder = tmp_path / "project"
    folder.mkdir()
    return folder


@pytest.fixture
def make_store(project: Path) -> Iterator[OpenStore]:
    """Open (more) stores on the test project; all are closed after the test."""
    opened: list[SqliteStore] = []

    def make(**kwargs: object) -> SqliteStore:
        store = open_store(project, **kwargs)  # type: ignore[arg-type]
        opened.append(store)
        return store

    yield make
    for store in opened:
        store.close()


@pytest.fixture
def store(make_store: OpenStore) -> SqliteStore:
    return make_store()


@pytest.fixture
def session(store: SqliteStore) -> Session:
    return store.create_session(title="test")


@pytest.fixture
def run(store: SqliteStore, session: Session) -> Run:
    return store.create_run(session.id, model="fake")
