"""The PostgreSQL store: schemas per project, migrations, passwords, wake-ups, the session
cursor's commit order, read-only queries, and what its import costs."""

from __future__ import annotations

import subprocess
import sys
import threading
from pathlib import Path

import psycopg
import pytest

from agi_jupyter.errors import ConfigError, NotFound, RunLost, StoreUnavailable, UsageError
from agi_jupyter.records import TextPart
from agi_jupyter.store import MIGRATIONS, Store, create_store
from agi_jupyter.store.postgres import PostgresStore, database
from agi_jupyter.store.postgres.migrations import PG_MIGRATIONS
from agi_jupyter.store.postgres.query import to_format
from agi_jupyter.store.rows import (
    ARTIFACTS,
    CAPABILITIES,
    CHANGES,
    MESSAGES,
    RUN_EVENTS,
    RUNS,
    SESSIONS,
    TASKS,
    TOOL_CALLS,
    WEBHOOK_EVENTS,
)
from tests.postgres_server import SECRET_PASSWORD, SECRET_ROLE, PostgresServer, free_port
from tests.store.conftest import OpenStore, count


def wait_until(event: threading.Event) -> bool:
    return event.wait(timeout=30)  # bounded; the assertion on the result reports a timeout


def test_every_sqlite_migration_has_a_postgres_counterpart() -> None:
    assert [fn.__name__ for fn in PG_MIGRATIONS] == [fn.__name__ for fn in MIGRATIONS]


def test_tables_have_every_record_column(pg_store: Store) -> None:
    for mapping in (SESSIONS, MESSAGES, RUNS, RUN_EVENTS, TOOL_CALLS, ARTIFACTS, CHANGES):
        names = {
            row[0]
            for row in pg_store.query(
                "SELECT column_name FROM information_schema.columns"
                " WHERE table_schema = current_schema() AND table_name = ?",
                [mapping.table],
            ).rows
        }
        assert set(mapping.columns) <= names, mapping.table
    for mapping in (WEBHOOK_EVENTS, TASKS, CAPABILITIES):
        assert count(pg_store, f"SELECT COUNT(*) FROM {mapping.table}") == 0


def test_each_project_key_has_a_schema_of_its_own(postgres_url: str, tmp_path: Path) -> None:
    with (
        create_store(tmp_path / "Team Analysis", database_url=postgres_url) as one,
        create_store(tmp_path / "other", database_url=postgres_url, project_key="k2") as two,
    ):
        assert isinstance(one, PostgresStore)
        assert isinstance(two, PostgresStore)
        assert one.schema.startswith("agi_team_analysis_")
        assert two.schema.startswith("agi_k2_")
        assert one.project_key == str((tmp_path / "Team Analysis").resolve())
        assert f"(schema {one.schema})" in one.location
        mine = one.create_session(title="mine")
        assert two.list_sessions().items == []
        assert [s.id for s in one.list_sessions().items] == [mine.id]
        assert count(one, "SELECT COUNT(*) FROM sessions") == 1
        assert count(two, "SELECT COUNT(*) FROM sessions") == 0


def test_concurrent_first_opens_create_and_migrate_once(postgres_url: str) -> None:
    info = database.conninfo(postgres_url, None)
    barrier = threading.Barrier(6)
    schemas: list[str] = []
    errors: list[BaseException] = []

    def open_new() -> None:
        try:
            barrier.wait(timeout=30)
            schemas.append(database.ensure_schema(info, "/race/new-project"))
        except BaseException as e:  # pragma: no cover - reported below
            errors.append(e)

    threads = [threading.Thread(target=open_new) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert len(set(schemas)) == 1
    with psycopg.connect(postgres_url) as conn:
        applied = conn.execute(f'SELECT name FROM "{schemas[0]}"._migrations').fetchall()
        keys = conn.execute(
            "SELECT COUNT(*) FROM agi.projects WHERE key = %s", ["/race/new-project"]
        ).fetchone()
    assert sorted(name for (name,) in applied) == [fn.__name__ for fn in PG_MIGRATIONS]
    assert keys == (1,)


def test_a_password_kept_apart_is_used_and_never_shown(
    postgres_server: PostgresServer, project: Path
) -> None:
    url = postgres_server.url(SECRET_ROLE, user=SECRET_ROLE)
    with create_store(project, database_url=url, database_password=SECRET_PASSWORD) as store:
        store.create_session(title="x")
        assert SECRET_PASSWORD not in store.location
        assert SECRET_PASSWORD not in repr(store)
    with pytest.raises(StoreUnavailable) as info:
        create_store(project, database_url=url, database_password="wrong-password-123")
    assert "wrong-password-123" not in info.value.message
    assert "password authentication failed" in info.value.message
    inline = url.replace(f"{SECRET_ROLE}@", f"{SECRET_ROLE}:{SECRET_PASSWORD}@")
    with create_store(project, database_url=inline) as store:
        assert len(store.list_sessions().items) == 1
        assert SECRET_PASSWORD not in store.location


def test_an_unreachable_database_is_store_unavailable(project: Path) -> None:
    url = f"postgresql://agi:pw-not-shown@127.0.0.1:{free_port()}/nowhere"
    with pytest.raises(StoreUnavailable, match="cannot connect") as info:
        create_store(project, database_url=url)
    assert "pw-not-shown" not in info.value.message
    assert info.value.http_status == 503


def test_a_bad_database_url_is_a_config_error(project: Path) -> None:
    with pytest.raises(ConfigError, match="postgresql://"):
        create_store(project, database_url="mysql://x@y/z")


def test_nul_postgresql_text_cannot_hold_becomes_a_replacement_character(
    pg_store: Store,
) -> None:
    """Found by schemathesis: a session whose model name held NUL was refused on PostgreSQL
    only. Text columns get U+FFFD; JSON (metadata, parts) keeps NUL escaped."""
    session = pg_store.create_session(
        title="nul \x00 byte", model="m\x00", metadata={"k\x00": "v\x00"}
    )
    stored = pg_store.get_session(session.id)
    assert (stored.title, stored.model) == ("nul \ufffd byte", "m\ufffd")
    assert stored.metadata == {"k\x00": "v\x00"}


def test_later_appends_wait_for_an_earlier_one_to_commit(
    make_pg_store: OpenStore, postgres_url: str
) -> None:
    """The session stream's positions are handed out under the session row's lock: while one
    transaction holds a position, no later position can commit (and be read, and skipped)."""
    store = make_pg_store()
    assert isinstance(store, PostgresStore)
    session = store.create_session()
    run = store.create_run(session.id)
    appended = threading.Event()

    def append() -> None:
        store.append_run_event(run.id, "later", {})
        appended.set()

    with psycopg.connect(postgres_url) as slow:  # an append that has not committed yet
        slow.execute(f'SET search_path TO "{store.schema}"')
        slow.execute("UPDATE sessions SET event_pos = event_pos + 1 WHERE id = %s", [session.id])
        writer = threading.Thread(target=append)
        writer.start()
        assert not appended.wait(timeout=0.5), "a later position committed before an earlier one"
        slow.rollback()
    writer.join(timeout=30)
    assert appended.is_set()
    assert [e.type for _, e in store.list_session_run_events(session.id)] == ["later"]


def test_a_takeover_in_flight_makes_the_old_owners_write_wait_then_fail(
    make_pg_store: OpenStore, postgres_url: str
) -> None:
    """The fence is checked on the newest committed row, in the write's own transaction: a
    fenced write that meets an uncommitted hand-over waits for it, then raises ``RunLost``
    and writes nothing (it never lands after the new owner took the run)."""
    store = make_pg_store()
    assert isinstance(store, PostgresStore)
    session = store.create_session()
    run = store.create_run(session.id)
    fence = store.claim_run(run.id, run.version, owner="a")
    assert fence is not None
    outcome: list[BaseException | None] = []
    finished = threading.Event()

    def late_write() -> None:
        try:
            store.add_message(session.id, "assistant", [TextPart(text="late")], fence=fence)
            outcome.append(None)
        except BaseException as e:
            outcome.append(e)
        finished.set()

    with psycopg.connect(postgres_url) as takeover:  # a hand-over that has not committed yet
        takeover.execute(f'SET search_path TO "{store.schema}"')
        takeover.execute(
            "UPDATE runs SET owner = 'b', epoch = epoch + 1, version = version + 1 WHERE id = %s",
            [run.id],
        )
        writer = threading.Thread(target=late_write)
        writer.start()
        assert not finished.wait(timeout=0.5), "the fenced write did not wait for the hand-over"
        takeover.commit()
    writer.join(timeout=30)
    assert finished.is_set()
    assert isinstance(outcome[0], RunLost)
    assert store.list_messages(session.id) == []
    assert store.get_session(session.id).message_count == 0


def test_blobs_being_referenced_are_not_collected(
    make_pg_store: OpenStore, postgres_url: str
) -> None:
    """Deleting a session collects the snapshots no change refers to, but skips a blob that
    an uncommitted ``add_change`` holds (``FOR KEY SHARE``) instead of waiting for it or
    deleting it under that change."""
    store = make_pg_store()
    assert isinstance(store, PostgresStore)
    held, loose = store.put_blob(b"held"), store.put_blob(b"loose")
    doomed = store.create_session()
    with psycopg.connect(postgres_url) as adding:  # an add_change that has not committed yet
        adding.execute(f'SET search_path TO "{store.schema}"')
        adding.execute("SELECT 1 FROM blobs WHERE sha256 = %s FOR KEY SHARE", [held])
        store.delete_session(doomed.id)  # does not wait for the open transaction
        adding.rollback()
    assert store.get_blob(held) == b"held"
    with pytest.raises(NotFound):
        store.get_blob(loose)


def test_notebook_replies_nobody_took_expire(pg_store: Store) -> None:
    assert isinstance(pg_store, PostgresStore)
    pg_store.put_notebook_reply("old", {"ok": True})
    with pg_store._write() as conn:
        conn.execute("UPDATE notebook_replies SET created_at = '2020-01-01T00:00:00.000Z'")
    pg_store.put_notebook_reply("new", {"ok": True})
    assert pg_store.take_notebook_reply("old") is None
    assert pg_store.take_notebook_reply("new") == {"ok": True}


def test_listen_wakes_on_background_runs_of_its_project(
    make_pg_store: OpenStore, postgres_url: str, tmp_path: Path
) -> None:
    listener, writer = make_pg_store(), make_pg_store()
    woken = threading.Event()
    calls: list[int] = []

    def wake() -> None:
        calls.append(1)
        woken.set()

    stop = listener.listen(wake)
    with create_store(tmp_path / "elsewhere", database_url=postgres_url) as other:
        other.create_run(other.create_session().id, execution_mode="background")
    session = writer.create_session()
    writer.create_run(session.id)  # foreground: announced to nobody
    writer.create_run(session.id, execution_mode="background")
    assert wait_until(woken)
    assert calls == [1]  # notifications arrive in commit order: none came before this one
    stop()


def test_queries_see_the_project_only_and_change_nothing(pg_store: Store) -> None:
    pg_store.create_session(title="it's ?")
    result = pg_store.query(
        "SELECT title, '?' AS mark, ? AS param FROM sessions WHERE title LIKE ?", [7, "it%"]
    )
    assert result.columns == ["title", "mark", "param"]
    assert result.rows == [("it's ?", "?", 7)]
    with pytest.raises(UsageError, match="read-only"):
        pg_store.query("UPDATE sessions SET title = 'x'")
    with pytest.raises(UsageError, match="multiple commands"):
        pg_store.query("SELECT 1; SELECT 2")
    pg_store.query("SET search_path TO public")
    assert pg_store.query("SELECT title FROM sessions").rows == [("it's ?",)]
    assert pg_store.query("SELECT 1.50::numeric, '{\"a\": [1]}'::jsonb").rows == [(1.5, {"a": [1]})]


@pytest.mark.parametrize(
    ("sql", "expected"),
    [
        ("SELECT ?", "SELECT %s"),
        ("SELECT '?', \"a?\", ? -- ?\n", "SELECT '?', \"a?\", %s -- ?\n"),
        ("SELECT 50% /* ? */ , $$ ? $$, $t$?$t$, ?", "SELECT 50%% /* ? */ , $$ ? $$, $t$?$t$, %s"),
        ("SELECT 'it''s ?', ?", "SELECT 'it''s ?', %s"),
    ],
)
def test_question_marks_become_placeholders_outside_quotes(sql: str, expected: str) -> None:
    assert to_format(sql) == expected


def test_importing_the_package_does_not_import_the_driver(project: Path) -> None:
    code = (
        "import sys; import agi_jupyter, agi_jupyter.app, agi_jupyter.store\n"
        "from agi_jupyter.store import create_store\n"
        f"create_store({str(project)!r}).create_session()\n"
        "assert 'psycopg' not in sys.modules, 'psycopg was imported'\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)


def test_without_the_driver_a_database_url_says_what_to_install(project: Path) -> None:
    code = (
        "import sys; sys.modules['psycopg'] = None\n"
        "from agi_jupyter.errors import ConfigError\n"
        "from agi_jupyter.store import create_store\n"
        "try:\n"
        f"    create_store({str(project)!r}, database_url='postgresql://x@localhost/db')\n"
        "except ConfigError as e:\n"
        "    print(e.message)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], check=True, timeout=60, capture_output=True, text=True
    )
    assert "agi-jupyter[postgres]" in out.stdout


def test_an_artifact_written_in_pieces_lands_in_the_row_in_chunks(
    make_pg_store: OpenStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Larger than a chunk and than the in-memory spool: the bytes go through a temporary
    file and several ``lo_put`` statements, and no large object is left behind."""
    from agi_jupyter.store.postgres import artifacts

    monkeypatch.setattr(artifacts, "CHUNK", 1000)
    monkeypatch.setattr(artifacts, "SPOOL", 1500)
    store = make_pg_store()
    run = store.create_run(store.create_session().id)
    writer = store.open_artifact("tool_output", run_id=run.id, filename="out.txt")
    pieces = [bytes([i]) * 700 for i in range(7)]
    for piece in pieces:
        writer.write(piece)
    art = writer.commit()
    assert art.path is None
    assert store.read_artifact(art.id) == b"".join(pieces)
    assert count(store, "SELECT COUNT(*) FROM pg_largeobject_metadata") == 0


def test_a_message_with_a_nul_keeps_it_in_its_parts(pg_store: Store) -> None:
    """Prompts may hold NUL (SQLite stores it): the parts keep it, the plain-text column (for
    search and previews) has U+FFFD instead."""
    session = pg_store.create_session()
    message = pg_store.add_message(session.id, "user", [TextPart(text="a\x00b")])
    [stored] = pg_store.list_messages(session.id)
    assert stored.parts == [TextPart(text="a\x00b")]
    assert stored.text == "a\ufffdb"
    updated = pg_store.update_message(message.id, parts=[TextPart(text="\x00")])
    assert updated.parts == [TextPart(text="\x00")]
