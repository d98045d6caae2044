"""Every backend: artifacts keep their payload (inline below the threshold, out of line above
it), with size and sha256 either way."""

from __future__ import annotations

import hashlib
import json

import pytest

from agi_jupyter.errors import ArtifactNotFound, RunNotFound, SessionNotFound, UsageError
from agi_jupyter.records import Run, Session
from agi_jupyter.store import Store
from tests.store.conftest import OpenStore

THRESHOLD = 100


@pytest.fixture
def small_store(make_store: OpenStore) -> Store:
    return make_store(artifact_threshold=THRESHOLD)


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def test_content_at_the_threshold_stays_inline(small_store: Store, run: Run) -> None:
    payload = bytes(range(THRESHOLD))
    art = small_store.create_artifact("file", run_id=run.id, content=payload, filename="a.bin")
    assert (art.path, art.size, art.sha256, art.text) == (None, THRESHOLD, sha(payload), None)
    assert small_store.get_artifact(art.id) == art
    assert small_store.read_artifact(art.id) == payload


def test_content_over_the_threshold_reads_back(small_store: Store, run: Run) -> None:
    payload = bytes(range(256)) * 2
    art = small_store.create_artifact("file", run_id=run.id, content=payload, filename="out.bin")
    assert (art.size, art.sha256, art.text) == (len(payload), sha(payload), None)
    assert small_store.get_artifact(art.id) == art
    assert small_store.read_artifact(art.id) == payload


def test_text_threshold_counts_utf8_bytes(small_store: Store, session: Session) -> None:
    inline_text = "é" * (THRESHOLD // 2)  # exactly THRESHOLD bytes
    inline = small_store.create_artifact("note", session_id=session.id, text=inline_text)
    assert (inline.text, inline.path, inline.size) == (inline_text, None, THRESHOLD)
    assert inline.sha256 == sha(inline_text.encode())
    big_text = "é" * (THRESHOLD // 2 + 1)
    big = small_store.create_artifact("report", session_id=session.id, text=big_text)
    assert big.text is None
    assert small_store.get_artifact(big.id).text is None
    assert (big.size, big.sha256) == (THRESHOLD + 2, sha(big_text.encode()))
    assert small_store.read_artifact(big.id).decode() == big_text
    assert small_store.read_artifact(inline.id).decode() == inline_text


def test_a_large_binary_payload_round_trips(store: Store, session: Session) -> None:
    payload = bytes(range(256)) * 4096  # 1 MiB, every byte value
    art = store.create_artifact("file", session_id=session.id, content=payload)
    assert store.read_artifact(art.id) == payload
    assert art.sha256 == sha(payload)


def test_metadata_only_artifacts(store: Store, session: Session) -> None:
    art = store.create_artifact(
        "file_diff", session_id=session.id, title="diff", data={"files": ["a.py"]}
    )
    assert (art.size, art.sha256, art.data, art.title) == (0, None, {"files": ["a.py"]}, "diff")
    assert json.loads(store.read_artifact(art.id)) == {"files": ["a.py"]}
    empty = store.create_artifact("marker", session_id=session.id)
    assert store.read_artifact(empty.id) == b""


def test_mime_is_kept_or_guessed(store: Store, session: Session) -> None:
    given = store.create_artifact("x", session_id=session.id, text="a", mime="text/markdown")
    guessed = store.create_artifact("x", session_id=session.id, text="a", filename="r.json")
    unknown = store.create_artifact("x", session_id=session.id, text="a")
    assert (given.mime, guessed.mime, unknown.mime) == ("text/markdown", "application/json", None)


def test_session_is_taken_from_the_run(store: Store, run: Run) -> None:
    art = store.create_artifact("x", run_id=run.id, text="t")
    assert art.session_id == run.session_id
    assert store.get_artifact(art.id).session_id == run.session_id


def test_bad_arguments_store_nothing(small_store: Store, session: Session) -> None:
    with pytest.raises(UsageError):
        small_store.create_artifact("x", session_id=session.id, text="a", content=b"a")
    with pytest.raises(RunNotFound):
        small_store.create_artifact("x", run_id="run_nope", content=b"x" * 500)
    with pytest.raises(SessionNotFound):
        small_store.create_artifact("x", session_id="ses_nope", content=b"x" * 500)
    assert small_store.list_artifacts() == []


def test_unknown_artifacts(store: Store, session: Session) -> None:
    with pytest.raises(ArtifactNotFound) as info:
        store.get_artifact("art_nope")
    assert info.value.code == "ARTIFACT_NOT_FOUND"
    with pytest.raises(ArtifactNotFound):
        store.read_artifact("art_nope")


def test_list_artifacts(store: Store, session: Session) -> None:
    other = store.create_session()
    run = store.create_run(session.id)
    by_session = store.create_artifact("a", session_id=session.id, text="1")
    by_run = store.create_artifact("b", run_id=run.id, text="2")
    elsewhere = store.create_artifact("c", session_id=other.id, text="3")
    assert store.list_artifacts(session_id=session.id) == [by_session, by_run]
    assert store.list_artifacts(run_id=run.id) == [by_run]
    assert store.list_artifacts() == [by_session, by_run, elsewhere]


def test_an_artifact_written_in_pieces(small_store: Store, run: Run) -> None:
    pieces = [b"first piece\n", bytes(range(256)), b"last"]
    writer = small_store.open_artifact(
        "tool_output", run_id=run.id, title="out", mime="text/plain", filename="stdout.txt"
    )
    for piece in pieces:
        writer.write(piece)
    art = writer.commit()
    whole = b"".join(pieces)
    assert (art.size, art.sha256, art.session_id) == (len(whole), sha(whole), run.session_id)
    assert small_store.get_artifact(art.id) == art
    assert small_store.read_artifact(art.id) == whole
    aborted = small_store.open_artifact("tool_output", run_id=run.id)
    aborted.write(b"never mind")
    aborted.abort()
    assert [a.id for a in small_store.list_artifacts(run_id=run.id)] == [art.id]


def test_a_written_artifact_of_an_unknown_run_leaves_nothing(store: Store) -> None:
    writer = store.open_artifact("tool_output", run_id="run_nope")
    writer.write(b"x" * 1000)
    with pytest.raises(RunNotFound):
        writer.commit()
    assert store.list_artifacts() == []
