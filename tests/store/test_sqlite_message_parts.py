"""The ``messages.parts`` column (migration m005) and the ``message_parts`` rows stay in sync.

A store written before m005 reads back the same after migrating; every write path keeps the
two copies equal; a change to ``message_parts`` made behind the store's back (plain SQL, an
older version of the package) makes readers fall back to ``message_parts``, never return stale
parts.
"""

from __future__ import annotations

import gc
import json
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from sqlite_utils import Database

from agi_jupyter.records import (
    ArtifactRefPart,
    ErrorPart,
    ImagePart,
    Message,
    Part,
    ReasoningPart,
    Role,
    Session,
    TextPart,
    ToolCallPart,
    ToolResultPart,
    new_id,
    part_to_dict,
    parts_text,
    utc_now,
)
from agi_jupyter.runtime.history import history_view
from agi_jupyter.store import MIGRATIONS, SqliteStore, migrations, open_store, rows
from agi_jupyter.store.migrations import MIGRATIONS_TABLE, applied_names
from agi_jupyter.store.rows import MESSAGES, dumps, part_row, parts_json
from tests.store.conftest import slots_set

ALL_PARTS: list[Part] = [
    ReasoningPart(text="think", signature="sig", provider_data={"id": "rs_1", "n": [1, 2.5]}),
    TextPart(text="Hello "),
    ToolCallPart(tool_call_id="call_1", name="fs.read", arguments={"path": "a.txt"}),
    ToolResultPart(tool_call_id="call_1", name="fs.read", output='a\nb\t"c"', is_error=True),
    ImagePart(mime="image/png", data_base64="iVBOR"),
    ErrorPart(code="E", message="boom"),
    ArtifactRefPart(artifact_id="art_1", kind="file", title="t"),
    TextPart(text="world ✓ \u2028 \\n"),
]
BEFORE_M005 = [fn for fn in MIGRATIONS if fn.__name__ < "m005"]


@pytest.fixture
def store(sqlite_store: SqliteStore) -> SqliteStore:
    """These tests are about SQLite's tables and triggers: the SQLite backend only."""
    return sqlite_store


# --- helpers --------------------------------------------------------------------------------


def query(store: SqliteStore, sql: str, *params: Any) -> list[Any]:
    with store._read() as conn:
        assert conn is not None
        return conn.execute(sql, params).fetchall()


def parts_column(store: SqliteStore, message_id: str) -> str | None:
    value: str | None = query(store, "SELECT parts FROM messages WHERE id = ?", message_id)[0][0]
    return value


def assert_in_sync(store: SqliteStore) -> None:
    """Every message's ``parts`` column is set and holds what its message_parts rows hold."""
    for (message_id,) in query(store, "SELECT id FROM messages"):
        column = parts_column(store, message_id)
        assert column is not None, message_id
        part_rows = query(
            store,
            "SELECT type, content FROM message_parts WHERE message_id = ? ORDER BY idx",
            message_id,
        )
        assert json.loads(column) == [{**json.loads(c), "type": t} for t, c in part_rows]


def assert_same_objects(loaded: list[Message], expected: list[Message]) -> None:
    """Equal records, with the same slots set as ``__init__`` sets, and parts with the same
    instance dicts (keys in the same order): the fast reader builds them without it (and a
    lazy read, once compared, which reads every field, has decoded them)."""
    assert loaded == expected
    for got, want in zip(loaded, expected, strict=True):
        assert type(got) is Message
        assert slots_set(got) == slots_set(want)  # fields only: nothing left undecoded
        for got_part, want_part in zip(got.parts, want.parts, strict=True):
            assert type(got_part) is type(want_part)
            assert list(vars(got_part).items()) == list(vars(want_part).items())


def old_store(project: Path) -> Database:
    """A store file at migration m004, as released before the ``parts`` column."""
    path = project / ".agi" / "agi.sqlite"
    path.parent.mkdir(parents=True, exist_ok=True)
    db = Database(path)
    db.execute("PRAGMA synchronous = OFF")  # a throwaway file: no fsync per commit
    db.table(MIGRATIONS_TABLE).create({"name": str, "applied_at": str}, pk="name")
    for fn in BEFORE_M005:
        fn(db)
        db.table(MIGRATIONS_TABLE).insert({"name": fn.__name__, "applied_at": utc_now()})
    return db


def old_add_message(
    db: Database, session_id: str, role: Role, parts: list[Part], **fields: Any
) -> Message:
    """``add_message`` as it was before m005: a messages row and message_parts rows only
    (committed)."""
    now = utc_now()
    message = Message(
        id=new_id("msg"),
        session_id=session_id,
        role=role,
        text=parts_text(parts),
        parts=list(parts),
        created_at=now,
        updated_at=now,
        **fields,
    )
    db.table("messages").insert(MESSAGES.to_row(message))
    for idx, part in enumerate(parts):
        kind, content = part_row(part_to_dict(part))
        db.table("message_parts").insert(
            {
                "id": new_id("prt"),
                "message_id": message.id,
                "idx": idx,
                "type": kind,
                "content": content,
            }
        )
    db.execute("UPDATE sessions SET message_count = message_count + 1 WHERE id = ?", [session_id])
    db.conn.commit()
    return message


def old_session(db: Database) -> str:
    session_id = new_id("ses")
    now = utc_now()
    db.table("sessions").insert(
        {
            "id": session_id,
            "agent": "general",
            "sdk": "native",
            "queue_mode": "queue",
            "created_at": now,
            "updated_at": now,
        }
    )
    return session_id


@pytest.fixture
def gc_state() -> Iterator[None]:
    enabled = gc.isenabled()
    yield
    if enabled:
        gc.enable()
    else:
        gc.disable()


# --- migration of a store written before m005 -----------------------------------------------


def test_a_store_written_before_m005_reads_back_identically(project: Path) -> None:
    db = old_store(project)
    session_id, other_id = old_session(db), old_session(db)
    written = [
        old_add_message(db, session_id, "user", [TextPart(text="hi")]),
        old_add_message(db, session_id, "assistant", ALL_PARTS, meta={"model": "m"}),
        old_add_message(db, session_id, "assistant", [], status="pending", run_id="run_x"),
        old_add_message(
            db, session_id, "tool", [ToolResultPart(tool_call_id="c", name="n", output="o")]
        ),
    ]
    other = old_add_message(db, other_id, "user", [TextPart(text="other")])
    db.close()

    with open_store(project) as store:
        assert_same_objects(store.list_messages(session_id), written)
        assert store._database.utils is not None
        assert "m005_messages_parts_column" in applied_names(store._database.utils)
        assert store.get_message(other.id) == other
        assert_in_sync(store)
        # byte for byte what add_message writes now
        for message in [*written, other]:
            expected = parts_json([part_to_dict(p) for p in message.parts])
            assert parts_column(store, message.id) == expected
        assert parts_column(store, written[2].id) == "[]"
        assert store.get_session(session_id).message_count == 4
        # and it goes on as a new store
        added = store.add_message(session_id, "user", [TextPart(text="after")])
        assert store.list_messages(session_id) == [*written, added]
        assert_in_sync(store)


def test_migration_backfills_in_batches_and_keeps_what_it_cannot_parse(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(migrations, "_BACKFILL_BATCH", 7)
    db = old_store(project)
    session_id, broken_id = old_session(db), old_session(db)
    written = [
        old_add_message(db, session_id, "user", [TextPart(text=f"m{i}"), TextPart(text="!")])
        for i in range(30)  # several backfill batches
    ]
    broken = old_add_message(db, broken_id, "user", [TextPart(text="x")])
    newer = old_add_message(db, broken_id, "user", [TextPart(text="y")])
    db.execute("UPDATE message_parts SET content = 'not json' WHERE message_id = ?", [broken.id])
    db.execute(  # another version's part with a field this one does not know
        "UPDATE message_parts SET content = ? WHERE message_id = ?",
        ['{"text":"y","added_later":1}', newer.id],
    )
    db.conn.commit()
    db.close()

    with open_store(project) as store:
        assert store.list_messages(session_id) == written
        assert parts_column(store, broken.id) is None  # read from message_parts, as before
        with pytest.raises(json.JSONDecodeError):
            store.get_message(broken.id)
        assert parts_column(store, newer.id) == '[{"text":"y","added_later":1,"type":"text"}]'
        assert store.get_message(newer.id).parts == [TextPart(text="y")]


def test_m005_schema_and_rerun(project: Path) -> None:
    db = old_store(project)
    session_id = old_session(db)
    message = old_add_message(db, session_id, "user", [TextPart(text="x")])
    m005 = MIGRATIONS[len(BEFORE_M005)]
    m005(db)
    assert "parts" in db.table("messages").columns_dict
    triggers = {t.name for t in db.triggers}
    assert {"message_parts_insert", "message_parts_update", "message_parts_delete"} <= triggers
    column = db.execute("SELECT parts FROM messages WHERE id = ?", [message.id]).fetchone()[0]
    schema = db.schema
    m005(db)
    assert db.schema == schema
    assert db.execute("SELECT parts FROM messages").fetchone()[0] == column
    db.close()


# --- every write path keeps the copies equal -------------------------------------------------


def test_add_message_writes_both_copies(store: SqliteStore, session: Session) -> None:
    m = store.add_message(session.id, "assistant", ALL_PARTS)
    empty = store.add_message(session.id, "user", [])
    assert parts_column(store, m.id) == parts_json([part_to_dict(p) for p in ALL_PARTS])
    assert parts_column(store, empty.id) == "[]"
    assert_in_sync(store)
    assert_same_objects(store.list_messages(session.id), [m, empty])


def test_update_message_rewrites_both_copies(store: SqliteStore, session: Session) -> None:
    m = store.add_message(session.id, "assistant", ALL_PARTS, status="pending")
    updated = store.update_message(m.id, parts=[TextPart(text="final")], status="complete")
    assert_in_sync(store)
    assert updated.parts == [TextPart(text="final")]
    again = store.update_message(m.id, meta={"k": 1})  # parts untouched
    assert_in_sync(store)
    assert again.parts == [TextPart(text="final")]
    cleared = store.update_message(m.id, parts=[])
    assert_in_sync(store)
    assert (cleared.parts, cleared.text, cleared.created_at) == ([], "", m.created_at)
    assert store.list_messages(session.id) == [cleared]


def test_failed_writes_leave_no_parts_behind(store: SqliteStore, session: Session) -> None:
    m = store.add_message(session.id, "user", [TextPart(text="a")])
    with pytest.raises(Exception, match="not found"):
        store.update_message("msg_nope", parts=[TextPart(text="b")])
    with pytest.raises(Exception, match="not found"):
        store.add_message("ses_nope", "user", [TextPart(text="c")])
    assert query(store, "SELECT message_id FROM message_parts") == [(m.id,)]
    assert_in_sync(store)


def test_parts_rows_stay_addressable_for_artifacts_and_delete_with_the_session(
    store: SqliteStore, session: Session
) -> None:
    kept_session = store.create_session()
    m = store.add_message(session.id, "assistant", ALL_PARTS)
    kept = store.add_message(kept_session.id, "user", [TextPart(text="kept")])
    part_ids = [
        r[0]
        for r in query(
            store, "SELECT id FROM message_parts WHERE message_id = ? ORDER BY idx", m.id
        )
    ]
    assert len(part_ids) == len(ALL_PARTS)
    artifact = store.create_artifact("note", message_part_id=part_ids[1], text="about it")
    assert store.get_message(m.id) == m  # an artifact changes no message
    assert_in_sync(store)

    store.delete_session(session.id)
    assert query(store, "SELECT COUNT(*) FROM message_parts WHERE message_id = ?", m.id) == [(0,)]
    assert artifact.id not in {a.id for a in store.list_artifacts()}
    assert store.list_messages(kept_session.id) == [kept]
    assert_in_sync(store)


# --- changes behind the store's back ------------------------------------------------------------


@pytest.mark.parametrize(
    "change",
    [
        'UPDATE message_parts SET content = \'{"text":"changed"}\' WHERE idx = 0',
        "DELETE FROM message_parts WHERE idx = 1",
        "INSERT INTO message_parts (id, message_id, idx, type, content)"
        " SELECT 'prt_x', message_id, 9, 'text', '{\"text\":\"more\"}' FROM message_parts"
        " WHERE idx = 0",
    ],
)
def test_sql_changes_to_parts_rows_are_read_not_hidden(
    store: SqliteStore, session: Session, change: str
) -> None:
    m = store.add_message(session.id, "user", [TextPart(text="a"), TextPart(text="b")])
    with store._write() as conn:
        conn.execute(change)
    assert parts_column(store, m.id) is None
    expected = [
        TextPart(text=json.loads(content)["text"])
        for (content,) in query(
            store, "SELECT content FROM message_parts WHERE message_id = ? ORDER BY idx", m.id
        )
    ]
    assert store.get_message(m.id).parts == expected
    assert store.list_messages(session.id)[0].parts == expected
    # the next write through the store makes the column whole again
    store.update_message(m.id, parts=expected)
    assert_in_sync(store)


def test_messages_of_an_older_writer_read_from_parts_rows(
    store: SqliteStore, project: Path, session: Session
) -> None:
    """An older version of the package writes no ``parts`` column."""
    made = []
    db = Database(project / ".agi" / "agi.sqlite")
    for i in range(23):
        parts: list[Part] = [TextPart(text=f"m{i}"), ToolCallPart(tool_call_id=str(i), name="x")]
        if i % 4 == 0:
            made.append(old_add_message(db, session.id, "user", parts))
        else:
            made.append(store.add_message(session.id, "assistant", parts))
    db.close()
    assert store.list_messages(session.id) == made
    assert store.list_messages(session.id, lazy=True) == made
    assert store.list_messages(session.id, after_id=made[3].id, limit=9) == made[4:13]
    old = made[0]
    assert parts_column(store, old.id) is None
    assert store.update_message(old.id, status="error").parts == old.parts
    assert parts_column(store, old.id) is None  # the column is only written with the parts
    store.update_message(old.id, parts=old.parts)
    assert parts_column(store, old.id) is not None


def test_parts_column_written_by_another_version_still_loads(
    store: SqliteStore, session: Session
) -> None:
    m = store.add_message(
        session.id, "user", [TextPart(text="x"), ErrorPart(code="c", message="m")]
    )
    newer = '[{"text":"x","type":"text","added_later":1},{"code":"c","message":"m","type":"error"}]'
    with store._write() as conn:
        conn.execute("UPDATE messages SET parts = ? WHERE id = ?", [newer, m.id])
    assert store.get_message(m.id).parts == m.parts


# --- the fast reader --------------------------------------------------------------------------


def test_reader_without_the_dict_shortcut_gives_the_same_records(
    store: SqliteStore, session: Session, monkeypatch: pytest.MonkeyPatch
) -> None:
    made = [
        store.add_message(session.id, "assistant", ALL_PARTS, meta={"a": [1]}),
        store.add_message(session.id, "user", [TextPart(text="x")]),
    ]
    with store._write() as conn:  # updated later than created (the reader shares equal ones)
        conn.execute("UPDATE messages SET updated_at = ? WHERE id = ?", ["9999", made[1].id])
    made[1] = replace(made[1], updated_at="9999")
    fast = store.list_messages(session.id)
    monkeypatch.setattr(rows, "_DIRECT_PARTS", {})
    slow = store.list_messages(session.id)
    slow_lazy = store.list_messages(session.id, lazy=True)
    assert_same_objects(fast, made)
    assert_same_objects(slow, made)
    assert_same_objects(slow_lazy, made)


def test_listing_restores_the_garbage_collector(
    store: SqliteStore, session: Session, gc_state: None
) -> None:
    store.add_message(session.id, "user", [TextPart(text="x")])
    gc.enable()
    store.list_messages(session.id)
    assert gc.isenabled()
    gc.disable()
    store.list_messages(session.id)
    assert not gc.isenabled()


def test_dumps_of_a_part_dict_is_the_column_format() -> None:
    dicts = [part_to_dict(p) for p in ALL_PARTS]
    assert parts_json(dicts) == dumps(dicts)
    assert json.loads(parts_json(dicts)) == dicts


def test_history_views_of_a_stored_history(store: SqliteStore, session: Session) -> None:
    """``history_view`` (what ``Agi.history`` returns) over what the store reads: the simple
    view is the user and assistant text parts, copied as ``dataclasses.replace`` would."""
    store.add_message(session.id, "user", [TextPart(text="question")])
    store.add_message(session.id, "assistant", ALL_PARTS)
    store.add_message(session.id, "tool", [TextPart(text="not shown")])
    store.add_message(session.id, "assistant", [ToolCallPart(tool_call_id="c", name="n")])
    store.add_message(session.id, "user", [TextPart(text=""), TextPart(text="x")])
    messages = store.list_messages(session.id)
    before = [replace(m, parts=list(m.parts)) for m in messages]

    assert history_view(messages, "full") == messages
    simple = history_view(messages, "simple")
    expected = [
        replace(m, parts=[p for p in m.parts if isinstance(p, TextPart) and p.text])
        for m in before
        if m.role in ("user", "assistant")
        and any(isinstance(p, TextPart) and p.text for p in m.parts)
    ]
    assert_same_objects(simple, expected)
    assert [m.text for m in simple] == ["question", "Hello world ✓ \u2028 \\n", "x"]
    assert messages == before  # the full history is left as it was


def test_text_only_listing_is_the_simple_view(store: SqliteStore, session: Session) -> None:
    """``list_messages(text_only=True)`` filters in SQL what ``history_view`` filters in
    Python, including for a message whose ``parts`` column is NULL (read from the rows)."""
    store.add_message(session.id, "user", [TextPart(text="question")])
    store.add_message(session.id, "assistant", ALL_PARTS)
    store.add_message(session.id, "tool", [TextPart(text="not shown")])
    store.add_message(session.id, "assistant", [ToolCallPart(tool_call_id="c", name="n")])
    fallback = store.add_message(session.id, "user", [TextPart(text=""), TextPart(text="x")])
    with store._write() as conn:  # as an older writer would leave it
        conn.execute("UPDATE messages SET parts = NULL WHERE id = ?", [fallback.id])

    text_only = store.list_messages(session.id, text_only=True)
    assert [m.role for m in text_only] == ["user", "assistant", "assistant", "user"]
    assert [[p.text for p in m.parts if isinstance(p, TextPart)] for m in text_only] == [
        ["question"],
        ["Hello ", "world ✓ \u2028 \\n"],
        [],
        ["x"],
    ]
    assert all(isinstance(p, TextPart) for m in text_only for p in m.parts)
    simple = history_view(store.list_messages(session.id), "simple")
    assert history_view(text_only, "simple") == simple
    lazy = store.list_messages(session.id, text_only=True, lazy=True)
    assert history_view(lazy, "simple") == simple
    assert lazy == text_only


def test_values_only_json_reads_still_load(store: SqliteStore, session: Session) -> None:
    """The fast decoder (orjson) refuses NaN, Infinity and integers over 64 bits, which
    ``json.dumps`` writes; such histories load through ``json`` instead."""
    odd = {"nan": float("nan"), "inf": float("inf"), "big": 2**70}
    store.add_message(session.id, "user", [TextPart(text="plain")])
    store.add_message(
        session.id, "assistant", [ToolCallPart(tool_call_id="c", name="n", arguments=odd)]
    )
    (plain, weird) = store.list_messages(session.id)
    assert plain.text == "plain"
    (call,) = weird.parts
    assert isinstance(call, ToolCallPart)
    assert call.arguments["big"] == 2**70
    assert call.arguments["inf"] == float("inf")
    assert call.arguments["nan"] != call.arguments["nan"]  # NaN


def test_list_messages_is_one_query_without_message_parts(
    store: SqliteStore, session: Session
) -> None:
    for i in range(20):
        store.add_message(session.id, "user", [TextPart(text=str(i)), TextPart(text="!")])
    statements: list[str] = []
    with store._read() as conn:
        assert conn is not None
        conn.set_trace_callback(statements.append)
    try:
        assert len(store.list_messages(session.id)) == 20
    finally:
        with store._read() as conn:
            assert conn is not None
            conn.set_trace_callback(None)
    selects = [s for s in statements if s.lstrip().upper().startswith("SELECT")]
    assert len(selects) == 1
    assert "message_parts" not in selects[0]


def test_parts_written_by_another_version_still_load(store: SqliteStore, session: Session) -> None:
    m = store.add_message(session.id, "user", [TextPart(text="x")])
    with store._write() as conn:
        conn.execute(
            "UPDATE message_parts SET content = ? WHERE message_id = ?",
            ['{"text": "x", "added_later": 1}', m.id],
        )
    assert store.get_message(m.id).parts == [TextPart(text="x")]
