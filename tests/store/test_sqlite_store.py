"""The SQLite store: where its file is, that reads create nothing, its connection settings."""

from __future__ import annotations

from pathlib import Path

from agi_jupyter.store import SqliteStore, store_exists


def test_path_is_under_dot_agi(sqlite_store: SqliteStore, project: Path) -> None:
    assert sqlite_store.path == project.resolve() / ".agi" / "agi.sqlite"
    assert sqlite_store.location == str(sqlite_store.path)
    assert sqlite_store.project_dir == project.resolve()


def test_reads_on_a_fresh_project_create_nothing(sqlite_store: SqliteStore, project: Path) -> None:
    assert sqlite_store.list_sessions().items == []
    assert sqlite_store.list_session_run_events("ses_x") == []
    assert sqlite_store.session_events_end("ses_x") == "0"
    assert sqlite_store.claim_due_runs(owner="me", stale_before="2000-01-01T00:00:00.000Z") == []
    assert not store_exists(project)
    assert list(project.iterdir()) == []


def test_first_write_creates_the_database(sqlite_store: SqliteStore, project: Path) -> None:
    assert not sqlite_store.path.exists()
    sqlite_store.create_session()
    assert sqlite_store.path.is_file()
    assert store_exists(project)


def test_connection_settings(sqlite_store: SqliteStore) -> None:
    sqlite_store.create_session()
    with sqlite_store._read() as conn:
        assert conn is not None
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert conn.execute("PRAGMA busy_timeout").fetchone()[0] == 10_000


def test_listen_never_calls_back(sqlite_store: SqliteStore) -> None:
    calls: list[int] = []
    stop = sqlite_store.listen(lambda: calls.append(1))
    session = sqlite_store.create_session()
    sqlite_store.create_run(session.id, execution_mode="background")
    stop()
    assert calls == []


def test_replays_find_runs_by_an_index(sqlite_store: SqliteStore) -> None:
    with sqlite_store._write() as conn:
        plan = conn.execute(
            "EXPLAIN QUERY PLAN SELECT id FROM runs WHERE request_hash = ? AND status = ?",
            ["h1", "succeeded"],
        ).fetchall()
    assert "idx_runs_request_hash_status" in str(plan)


def test_notebook_replies_nobody_took_expire(sqlite_store: SqliteStore) -> None:
    sqlite_store.put_notebook_reply("old", {"ok": True})
    with sqlite_store._write() as conn:
        conn.execute("UPDATE notebook_replies SET created_at = '2020-01-01T00:00:00.000Z'")
    sqlite_store.put_notebook_reply("new", {"ok": True})
    assert sqlite_store.take_notebook_reply("old") is None
    assert sqlite_store.take_notebook_reply("new") == {"ok": True}
