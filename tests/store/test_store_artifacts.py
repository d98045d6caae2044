"""Artifacts: inline below the threshold, files above it, with size and sha256 either way."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable

import pytest

from agi_jupyter.errors import ArtifactNotFound, RunNotFound, SessionNotFound, UsageError
from agi_jupyter.records import Run, Session
from agi_jupyter.store import SqliteStore
from agi_jupyter.store.artifacts import sanitize_filename

OpenStore = Callable[..., SqliteStore]
THRESHOLD = 100


@pytest.fixture
def small_store(make_store: OpenStore) -> SqliteStore:
    return make_store(artifact_threshold=THRESHOLD)


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def test_content_at_the_threshold_stays_inline(small_store: SqliteStore, run: Run) -> None:
    payload = bytes(range(THRESHOLD))
    art = small_store.create_artifact("file", run_id=run.id, content=payload, filename="a.bin")
    assert (art.path, art.size, art.sha256, art.text) == (None, THRESHOLD, sha(payload), None)
    assert small_store.get_artifact(art.id) == art
    assert small_store.read_artifact(art.id) == payload
    assert not small_store.artifacts_dir.exists()


def test_content_over_the_threshold_goes_to_a_file(small_store: SqliteStore, run: Run) -> None:
    payload = bytes(range(256)) * 2
    art = small_store.create_artifact("file", run_id=run.id, content=payload, filename="out.bin")
    assert art.path == f".agi/artifacts/{art.id}/out.bin"
    assert (art.size, art.sha256) == (len(payload), sha(payload))
    assert (small_store.project_dir / art.path).read_bytes() == payload
    assert small_store.get_artifact(art.id) == art
    assert small_store.read_artifact(art.id) == payload
    with small_store._read() as conn:
        assert conn is not None
        row = conn.execute("SELECT content, text FROM artifacts WHERE id = ?", [art.id]).fetchone()
    assert row == (None, None)


def test_text_threshold_counts_utf8_bytes(small_store: SqliteStore, session: Session) -> None:
    inline_text = "é" * (THRESHOLD // 2)  # exactly THRESHOLD bytes
    inline = small_store.create_artifact("note", session_id=session.id, text=inline_text)
    assert (inline.text, inline.path, inline.size) == (inline_text, None, THRESHOLD)
    assert inline.sha256 == sha(inline_text.encode())
    big_text = "é" * (THRESHOLD // 2 + 1)
    big = small_store.create_artifact("report", session_id=session.id, text=big_text)
    assert big.text is None
    assert big.path == f".agi/artifacts/{big.id}/content"
    assert (big.size, big.sha256) == (THRESHOLD + 2, sha(big_text.encode()))
    assert small_store.read_artifact(big.id).decode() == big_text
    assert small_store.read_artifact(inline.id).decode() == inline_text


def test_default_threshold_is_64_kib(store: SqliteStore, session: Session) -> None:
    assert store.artifact_threshold == 65536
    at = store.create_artifact("x", session_id=session.id, content=b"a" * 65536)
    over = store.create_artifact("x", session_id=session.id, content=b"a" * 65537)
    assert at.path is None
    assert over.path is not None


def test_metadata_only_artifacts(store: SqliteStore, session: Session) -> None:
    art = store.create_artifact(
        "file_diff", session_id=session.id, title="diff", data={"files": ["a.py"]}
    )
    assert (art.size, art.sha256, art.data, art.title) == (0, None, {"files": ["a.py"]}, "diff")
    assert json.loads(store.read_artifact(art.id)) == {"files": ["a.py"]}
    empty = store.create_artifact("marker", session_id=session.id)
    assert store.read_artifact(empty.id) == b""


def test_mime_is_kept_or_guessed(store: SqliteStore, session: Session) -> None:
    given = store.create_artifact("x", session_id=session.id, text="a", mime="text/markdown")
    guessed = store.create_artifact("x", session_id=session.id, text="a", filename="r.json")
    unknown = store.create_artifact("x", session_id=session.id, text="a")
    assert (given.mime, guessed.mime, unknown.mime) == ("text/markdown", "application/json", None)


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


def test_session_is_taken_from_the_run(store: SqliteStore, run: Run) -> None:
    art = store.create_artifact("x", run_id=run.id, text="t")
    assert art.session_id == run.session_id
    assert store.get_artifact(art.id).session_id == run.session_id


def test_bad_arguments_leave_no_files(small_store: SqliteStore, session: Session) -> None:
    with pytest.raises(UsageError):
        small_store.create_artifact("x", session_id=session.id, text="a", content=b"a")
    with pytest.raises(RunNotFound):
        small_store.create_artifact("x", run_id="run_nope", content=b"x" * 500)
    with pytest.raises(SessionNotFound):
        small_store.create_artifact("x", session_id="ses_nope", content=b"x" * 500)
    assert list(small_store.artifacts_dir.iterdir()) == []
    assert small_store.list_artifacts() == []


def test_unknown_or_missing_artifacts(small_store: SqliteStore, session: Session) -> None:
    with pytest.raises(ArtifactNotFound) as info:
        small_store.get_artifact("art_nope")
    assert info.value.code == "ARTIFACT_NOT_FOUND"
    with pytest.raises(ArtifactNotFound):
        small_store.read_artifact("art_nope")
    art = small_store.create_artifact("x", session_id=session.id, content=b"x" * 500)
    assert art.path is not None
    (small_store.project_dir / art.path).unlink()
    with pytest.raises(ArtifactNotFound, match="missing"):
        small_store.read_artifact(art.id)


def test_list_artifacts(store: SqliteStore, session: Session) -> None:
    other = store.create_session()
    run = store.create_run(session.id)
    by_session = store.create_artifact("a", session_id=session.id, text="1")
    by_run = store.create_artifact("b", run_id=run.id, text="2")
    elsewhere = store.create_artifact("c", session_id=other.id, text="3")
    assert store.list_artifacts(session_id=session.id) == [by_session, by_run]
    assert store.list_artifacts(run_id=run.id) == [by_run]
    assert store.list_artifacts() == [by_session, by_run, elsewhere]


def test_an_artifact_written_in_pieces(small_store: SqliteStore, run: Run) -> None:
    pieces = [b"first piece\n", bytes(range(256)), b"last"]
    writer = small_store.open_artifact(
        "tool_output", run_id=run.id, title="out", mime="text/plain", filename="stdout.txt"
    )
    for piece in pieces:
        writer.write(piece)
    art = writer.commit()
    whole = b"".join(pieces)
    assert (art.size, art.sha256, art.session_id) == (len(whole), sha(whole), run.session_id)
    assert art.path == f".agi/artifacts/{art.id}/stdout.txt"
    assert small_store.get_artifact(art.id) == art
    assert small_store.read_artifact(art.id) == whole
    assert sorted(p.name for p in (small_store.artifacts_dir / art.id).iterdir()) == ["stdout.txt"]
    aborted = small_store.open_artifact("tool_output", run_id=run.id)
    aborted.write(b"never mind")
    aborted.abort()
    assert [a.id for a in small_store.list_artifacts(run_id=run.id)] == [art.id]
    assert sorted(p.name for p in small_store.artifacts_dir.iterdir()) == [art.id]
