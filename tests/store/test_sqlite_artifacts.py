"""The SQLite store keeps a payload over the threshold in a file under ``.agi/artifacts/``."""

from __future__ import annotations

import pytest

from agi_jupyter.errors import ArtifactNotFound, RunNotFound
from agi_jupyter.records import Run, Session
from agi_jupyter.store import SqliteStore
from agi_jupyter.store.artifacts import sanitize_filename
from tests.store.conftest import OpenStore

THRESHOLD = 100


@pytest.fixture
def small_store(make_sqlite_store: OpenStore) -> SqliteStore:
    store = make_sqlite_store(artifact_threshold=THRESHOLD)
    assert isinstance(store, SqliteStore)
    return store


@pytest.fixture
def store(sqlite_store: SqliteStore) -> SqliteStore:
    return sqlite_store


def test_inline_payloads_make_no_files(small_store: SqliteStore, run: Run) -> None:
    small_store.create_artifact("file", run_id=run.id, content=bytes(THRESHOLD))
    assert not small_store.artifacts_dir.exists()


def test_content_over_the_threshold_goes_to_a_file(small_store: SqliteStore, run: Run) -> None:
    payload = bytes(range(256)) * 2
    art = small_store.create_artifact("file", run_id=run.id, content=payload, filename="out.bin")
    assert art.path == f".agi/artifacts/{art.id}/out.bin"
    assert (small_store.project_dir / art.path).read_bytes() == payload
    with small_store._read() as conn:
        assert conn is not None
        row = conn.execute("SELECT content, text FROM artifacts WHERE id = ?", [art.id]).fetchone()
    assert row == (None, None)
    big = small_store.create_artifact("report", run_id=run.id, text="é" * THRESHOLD)
    assert big.path == f".agi/artifacts/{big.id}/content"


def test_default_threshold_is_64_kib(sqlite_store: SqliteStore, session: Session) -> None:
    assert sqlite_store.artifact_threshold == 65536
    at = sqlite_store.create_artifact("x", session_id=session.id, content=b"a" * 65536)
    over = sqlite_store.create_artifact("x", session_id=session.id, content=b"a" * 65537)
    assert at.path is None
    assert over.path is not None


@pytest.mark.parametrize(
    ("name", "safe"),
    [
        (None, "content"),
        ("", "content"),
        ("report.md", "report.md"),
        ("../../etc/passwd", "passwd"),
        ("C:\\temp\\x.txt", "x.txt"),
        ("a b?*.txt", "a_b_.txt"),
        (".hidden", "hidden"),
        ("..", "content"),
        ("ünï.txt", "_n_.txt"),
    ],
)
def test_sanitize_filename(name: str | None, safe: str) -> None:
    assert sanitize_filename(name) == safe


def test_file_names_are_sanitised(small_store: SqliteStore, session: Session) -> None:
    art = small_store.create_artifact(
        "file", session_id=session.id, content=b"x" * 500, filename="../../escape.txt"
    )
    assert art.path == f".agi/artifacts/{art.id}/escape.txt"
    assert (small_store.artifacts_dir / art.id / "escape.txt").is_file()
    assert not (small_store.project_dir.parent / "escape.txt").exists()


def test_bad_arguments_leave_no_files(small_store: SqliteStore, session: Session) -> None:
    with pytest.raises(RunNotFound):
        small_store.create_artifact("x", run_id="run_nope", content=b"x" * 500)
    assert list(small_store.artifacts_dir.iterdir()) == []


def test_missing_artifact_files(small_store: SqliteStore, session: Session) -> None:
    art = small_store.create_artifact("x", session_id=session.id, content=b"x" * 500)
    assert art.path is not None
    (small_store.project_dir / art.path).unlink()
    with pytest.raises(ArtifactNotFound, match="missing"):
        small_store.read_artifact(art.id)


def test_an_artifact_written_in_pieces_is_a_file(small_store: SqliteStore, run: Run) -> None:
    writer = small_store.open_artifact("tool_output", run_id=run.id, filename="stdout.txt")
    writer.write(b"some output")
    art = writer.commit()
    assert art.path == f".agi/artifacts/{art.id}/stdout.txt"
    assert sorted(p.name for p in (small_store.artifacts_dir / art.id).iterdir()) == ["stdout.txt"]
    aborted = small_store.open_artifact("tool_output", run_id=run.id)
    aborted.write(b"never mind")
    aborted.abort()
    assert sorted(p.name for p in small_store.artifacts_dir.iterdir()) == [art.id]
