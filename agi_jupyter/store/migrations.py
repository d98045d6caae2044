"""SQLite schema migrations: the ordered list of ``schema.MIGRATIONS``, recorded in
``_migrations``.

The pattern of simonw/llm: ``migrate(db)`` runs, in order, the migrations whose name is not yet
in ``_migrations(name, applied_at)``, in one ``BEGIN IMMEDIATE`` transaction, so two processes
opening a fresh store at once cannot both apply a migration; each is idempotent on its own
(``if_not_exists``). Most are declared once for both backends in ``schema.py`` (where a new
migration goes: see its docstring) and rendered here; the first ones (m001 to m005, m008) were
written for SQLite alone and are below, released and frozen: never edit or reorder them.

JSON columns are TEXT holding JSON, booleans are 0/1 integers, times are ISO-8601 UTC strings.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from itertools import groupby
from operator import itemgetter
from typing import Any

from sqlite_utils import Database

from agi_jupyter.records import utc_now
from agi_jupyter.store import schema

Step = Callable[[Database], None]
_OWN: dict[str, Step] = {}


def migration(fn: Step) -> Step:
    """A migration written for SQLite alone (``schema.MIGRATIONS`` names where it goes)."""
    _OWN[fn.__name__] = fn
    return fn


MIGRATIONS_TABLE = "_migrations"
_STAMPS = ("created_at", "updated_at")


def migrate(db: Database) -> list[str]:
    """Apply the pending migrations; returns the names applied (empty when up to date)."""
    if not pending(db):
        return []
    if db.conn.in_transaction:
        return _apply_pending(db)
    db.conn.execute("BEGIN IMMEDIATE")
    try:
        applied = _apply_pending(db)
    except BaseException:
        db.conn.rollback()
        raise
    db.conn.commit()
    return applied


def pending(db: Database) -> list[str]:
    """Names of the migrations not yet applied (a read; writes nothing)."""
    done = applied_names(db)
    return [fn.__name__ for fn in MIGRATIONS if fn.__name__ not in done]


def applied_names(db: Database) -> set[str]:
    if not db.table(MIGRATIONS_TABLE).exists():
        return set()
    return {row[0] for row in db.execute(f"SELECT name FROM {MIGRATIONS_TABLE}").fetchall()}


def _apply_pending(db: Database) -> list[str]:
    db.table(MIGRATIONS_TABLE).create(
        {"name": str, "applied_at": str}, pk="name", if_not_exists=True
    )
    done = applied_names(db)  # again: another process may have migrated meanwhile
    applied: list[str] = []
    for fn in MIGRATIONS:
        if fn.__name__ in done:
            continue
        fn(db)
        db.execute(
            f"INSERT INTO {MIGRATIONS_TABLE} (name, applied_at) VALUES (?, ?)",
            [fn.__name__, utc_now()],
        )
        applied.append(fn.__name__)
    return applied


@migration
def m001_initial(db: Database) -> None:
    """Sessions, their messages, and the ordered parts of each message."""
    db.table("sessions").create(
        {
            "id": str,
            "title": str,
            "agent": str,
            "sdk": str,
            "provider": str,
            "model": str,
            "system_prompt": str,
            "thinking_level": str,
            "queue_mode": str,
            "tool_config": str,  # json
            "metadata": str,  # json
            "notebook_path": str,
            "message_count": int,
            "input_tokens": int,
            "output_tokens": int,
            "cost_usd": float,
            "created_at": str,
            "updated_at": str,
        },
        pk="id",
        not_null={"agent", "sdk", "queue_mode", *_STAMPS},
        defaults={"message_count": 0, "input_tokens": 0, "output_tokens": 0, "cost_usd": 0.0},
        if_not_exists=True,
    )
    db.table("messages").create(
        {
            "id": str,
            "session_id": str,
            "role": str,
            "run_id": str,
            "status": str,
            "text": str,
            "meta": str,  # json
            "created_at": str,
            "updated_at": str,
        },
        pk="id",
        foreign_keys=[("session_id", "sessions", "id")],
        not_null={"session_id", "role", "status", *_STAMPS},
        if_not_exists=True,
    )
    db.table("message_parts").create(
        {"id": str, "message_id": str, "idx": int, "type": str, "content": str},  # content: json
        pk="id",
        foreign_keys=[("message_id", "messages", "id")],
        not_null={"message_id", "idx", "type", "content"},
        if_not_exists=True,
    )


@migration
def m002_runs(db: Database) -> None:
    """Runs (the state machine of one agent turn or background job), their events, tool calls."""
    db.table("runs").create(
        {
            "id": str,
            "session_id": str,
            "type": str,
            "execution_mode": str,
            "status": str,
            "provider": str,
            "model": str,
            "thinking_level": str,
            "system_prompt": str,
            "input_message_id": str,
            "error": str,  # json
            "attempt": int,
            "max_attempts": int,
            "next_attempt_at": str,
            "provider_response_id": str,
            "last_webhook_event_id": str,
            "loop_state": str,  # json
            "version": int,
            "owner": str,
            "heartbeat_at": str,
            "usage": str,  # json
            "cost_usd": float,
            "notebook_path": str,
            "cell_id": str,
            "execution_count": int,
            "request_hash": str,
            "replayed_from": str,
            "started_at": str,
            "completed_at": str,
            "created_at": str,
            "updated_at": str,
        },
        pk="id",
        foreign_keys=[("session_id", "sessions", "id")],
        not_null={"session_id", "type", "execution_mode", "status", "version", *_STAMPS},
        defaults={"attempt": 0, "version": 0, "cost_usd": 0.0},
        if_not_exists=True,
    )
    db.table("run_events").create(
        {"id": str, "run_id": str, "seq": int, "type": str, "payload": str, "created_at": str},
        pk="id",
        foreign_keys=[("run_id", "runs", "id")],
        not_null={"run_id", "seq", "type", "created_at"},
        if_not_exists=True,
    )
    db.table("tool_calls").create(
        {
            "id": str,
            "run_id": str,
            "tool_call_id": str,
            "name": str,
            "message_id": str,
            "args": str,  # json
            "status": str,
            "result": str,  # json
            "is_error": int,  # 0/1
            "started_at": str,
            "finished_at": str,
            "created_at": str,
            "updated_at": str,
        },
        pk="id",
        foreign_keys=[("run_id", "runs", "id"), ("message_id", "messages", "id")],
        not_null={"run_id", "tool_call_id", "name", "status", "is_error", *_STAMPS},
        defaults={"is_error": 0},
        if_not_exists=True,
    )


@migration
def m003_artifacts_webhooks_tasks_capabilities(db: Database) -> None:
    """Artifacts (large payloads as files), webhook inbox, the task list, self-written tools."""
    db.table("artifacts").create(
        {
            "id": str,
            "kind": str,
            "run_id": str,
            "session_id": str,
            "message_part_id": str,
            "title": str,
            "mime": str,
            "path": str,  # relative to the project, when the payload is a file
            "size": int,
            "sha256": str,
            "data": str,  # json
            "text": str,
            "content": bytes,  # small binary payloads kept inline
            "created_at": str,
            "updated_at": str,
        },
        pk="id",
        foreign_keys=[("run_id", "runs", "id"), ("session_id", "sessions", "id")],
        not_null={"kind", "size", *_STAMPS},
        defaults={"size": 0},
        if_not_exists=True,
    )
    db.table("webhook_events").create(
        {
            "id": str,
            "provider": str,
            "event_id": str,
            "type": str,
            "response_id": str,
            "payload": str,  # json
            "received_at": str,
            "processed_at": str,
            "processing_error": str,
            "created_at": str,
            "updated_at": str,
        },
        pk="id",
        not_null={"provider", "event_id", "type", "received_at", *_STAMPS},
        if_not_exists=True,
    )
    db.table("tasks").create(
        {
            "id": str,
            "title": str,
            "details": str,
            "status": str,
            "due_at": str,
            "created_at": str,
            "updated_at": str,
        },
        pk="id",
        not_null={"title", "status", *_STAMPS},
        if_not_exists=True,
    )
    db.table("capabilities").create(
        {
            "id": str,
            "name": str,
            "description": str,
            "file_path": str,
            "tool_schema": str,  # json
            "created_at": str,
            "updated_at": str,
        },
        pk="id",
        not_null={"name", *_STAMPS},
        if_not_exists=True,
    )


@migration
def m004_indexes(db: Database) -> None:
    """Indexes on every foreign key, the run queue, histories, and the unique constraints.

    A foreign key column counts as indexed when it leads an index.
    """
    indexes: list[tuple[str, tuple[str, ...], bool]] = [  # (table, columns, unique)
        ("sessions", ("notebook_path",), False),
        ("messages", ("session_id", "created_at"), False),
        ("messages", ("run_id",), False),
        ("message_parts", ("message_id", "idx"), True),
        ("runs", ("session_id",), False),
        ("runs", ("status", "next_attempt_at"), False),
        ("runs", ("input_message_id",), False),
        ("runs", ("replayed_from",), False),
        ("runs", ("provider_response_id",), True),
        ("run_events", ("run_id", "seq"), True),
        ("tool_calls", ("run_id", "tool_call_id"), True),
        ("tool_calls", ("message_id",), False),
        ("artifacts", ("run_id",), False),
        ("artifacts", ("session_id",), False),
        ("artifacts", ("message_part_id",), False),
        ("webhook_events", ("event_id",), True),
        ("webhook_events", ("processed_at",), False),
        ("webhook_events", ("response_id",), False),
        ("tasks", ("status", "due_at"), False),
        ("capabilities", ("name",), True),
    ]
    for table, columns, unique in indexes:
        db.table(table).create_index(
            list(columns),
            index_name=f"idx_{table}_{'_'.join(columns)}",
            unique=unique,
            if_not_exists=True,
        )


# Any change to a message's ``message_parts`` rows made outside ``store.messages`` (an older
# version of this package, which writes no ``parts`` column, or plain SQL) turns the message's
# ``parts`` column into NULL, which readers take as "read message_parts": the copy can be
# missing but never stale. ``store.messages`` writes the rows first and the column after them.
# (A trigger that rebuilt the column in SQL would need SQLite's JSON functions, which do not
# keep every value Python's json writes, such as NaN, and before SQLite 3.44 cannot order
# json_group_array.)
_PARTS_TRIGGERS = {
    "message_parts_insert": "AFTER INSERT ON message_parts BEGIN"
    " UPDATE messages SET parts = NULL WHERE id = NEW.message_id AND parts IS NOT NULL; END",
    "message_parts_update": "AFTER UPDATE ON message_parts BEGIN"
    " UPDATE messages SET parts = NULL"
    " WHERE id IN (OLD.message_id, NEW.message_id) AND parts IS NOT NULL; END",
    "message_parts_delete": "AFTER DELETE ON message_parts BEGIN"
    " UPDATE messages SET parts = NULL WHERE id = OLD.message_id AND parts IS NOT NULL; END",
}


@migration
def m005_messages_parts_column(db: Database) -> None:
    """``messages.parts``: a copy of a message's parts as one JSON array of their dicts, so a
    history is read with one query and no join over ``message_parts`` (which stays, with the
    same rows: artifacts and SQL queries refer to them). Filled in for existing messages."""
    if "parts" not in db.table("messages").columns_dict:
        db.execute("ALTER TABLE messages ADD COLUMN parts TEXT")  # json
    for name, body in _PARTS_TRIGGERS.items():
        db.execute(f"CREATE TRIGGER IF NOT EXISTS {name} {body}")
    # In batches of messages, each read in full before it is written: memory stays bounded
    # on a large store, and no statement scans a table that is being updated.
    after = ""
    while True:
        ids = [
            row[0]
            for row in db.execute(
                "SELECT id FROM messages WHERE parts IS NULL AND id > ? ORDER BY id LIMIT ?",
                [after, _BACKFILL_BATCH],
            ).fetchall()
        ]
        if not ids:
            return
        rows = db.execute(
            "SELECT m.id, p.type, p.content FROM messages m"
            " LEFT JOIN message_parts p ON p.message_id = m.id"
            f" WHERE m.id IN ({', '.join('?' for _ in ids)}) ORDER BY m.id, p.idx",
            ids,
        ).fetchall()
        db.conn.executemany(
            "UPDATE messages SET parts = ? WHERE id = ?",
            [
                (parts, message_id)
                for message_id, group in groupby(rows, key=itemgetter(0))
                if (parts := _parts_column(group)) is not None
            ],
        )
        after = ids[-1]


_BACKFILL_BATCH = 500


def _parts_column(rows: Iterable[tuple[str, str | None, str | None]]) -> str | None:
    """The ``parts`` column of one message from its ``message_parts`` rows (a message without
    parts is one row of NULLs), as ``store.messages`` writes it; None if a row does not hold a
    JSON object (the message then keeps reading ``message_parts``, as it did before)."""
    dicts: list[dict[str, Any]] = []
    for _, kind, content in rows:
        if kind is None:
            continue
        try:
            data = json.loads(content or "")
        except ValueError:
            return None
        if not isinstance(data, dict):
            return None
        dicts.append({**data, "type": kind})
    return json.dumps(dicts, ensure_ascii=False, separators=(",", ":"))


@migration
def m008_snapshots_and_changes(db: Database) -> None:
    """Content-addressed snapshots (``blobs``) and the changes runs make to notebooks and
    files (``changes``: the sha256 of the content before and after), which undo restores;
    and ``notebook_replies``, where a JupyterLab tab leaves the answer to a kernel's notebook
    request (a busy kernel cannot read comm messages, so the tab answers through the server)."""
    db.table("blobs").create(
        {"sha256": str, "size": int, "data": bytes, "created_at": str},
        pk="sha256",
        not_null={"size", "data", "created_at"},
        if_not_exists=True,
    )
    db.table("changes").create(
        {
            "id": str,
            "run_id": str,
            "turn": int,
            "tool_call_id": str,
            "kind": str,
            "path": str,
            "before_sha": str,
            "after_sha": str,
            "created_at": str,
        },
        pk="id",
        foreign_keys=[("run_id", "runs", "id")],
        not_null={"kind", "path", "created_at"},
        if_not_exists=True,
    )
    db.table("changes").create_index(["run_id"], if_not_exists=True)
    db.table("changes").create_index(["path"], if_not_exists=True)
    db.table("notebook_replies").create(
        {"request_id": str, "payload": str, "created_at": str},
        pk="request_id",
        not_null={"payload", "created_at"},
        if_not_exists=True,
    )


def _shared(migration: schema.Migration) -> Step:
    """A migration of ``schema.MIGRATIONS`` as SQLite statements."""

    def apply(db: Database) -> None:
        for step in migration.steps or ():
            for statement in schema.sqlite_statements(
                step, lambda table: set(db.table(table).columns_dict)
            ):
                db.execute(statement)

    apply.__name__ = apply.__qualname__ = migration.name
    apply.__doc__ = migration.doc
    return apply


MIGRATIONS: list[Step] = schema.registry(_OWN, _shared)
