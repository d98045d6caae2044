"""SQLite schema migrations: the ordered list of ``schema.MIGRATIONS``, recorded in
``_migrations``.

The pattern of simonw/llm: ``migrate(db)`` runs, in order, the migrations whose name is not yet
in ``_migrations(name, applied_at)``, in one ``BEGIN IMMEDIATE`` transaction, so two processes
opening a fresh store at once cannot both apply a migration; each is idempotent on its own
(``if_not_exists``). They are declared once for both backends in ``schema.py`` (where a new
migration goes: see its docstring) and rendered here, tables with sqlite-utils; m005's backfill
and triggers are SQLite's alone (``EXTRA``).

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
MIGRATIONS_TABLE = "_migrations"
_PY_TYPES: dict[schema.ColumnType, type] = {
    schema.TEXT: str,
    schema.INTEGER: int,
    schema.REAL: float,
    schema.BLOB: bytes,
}


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


def m005_backfill(db: Database) -> None:
    """After m005's ``messages.parts`` column: the triggers that keep it from going stale, and
    its value for the existing messages."""
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


def _create_table(db: Database, table: schema.Table) -> None:
    columns = table.columns_of("sqlite")
    db.table(table.name).create(
        {c.name: _PY_TYPES[c.type] for c in columns},
        pk=next(c.name for c in columns if c.primary_key),
        foreign_keys=[(c.name, c.references, "id") for c in columns if c.references],
        not_null={c.name for c in columns if c.not_null},
        defaults={c.name: c.default for c in columns if c.default is not None},
        if_not_exists=True,
    )


def _migration(migration: schema.Migration, extra: Step | None) -> Step:
    """A migration of ``schema.MIGRATIONS`` on SQLite."""

    def apply(db: Database) -> None:
        for step in migration.steps:
            if isinstance(step, schema.CreateTable):
                _create_table(db, step.table)
                continue
            present = lambda table: set(db.table(table).columns_dict)  # noqa: E731
            for statement in schema.statements(step, "sqlite", present):
                db.execute(statement)
        if extra is not None:
            extra(db)

    apply.__name__ = apply.__qualname__ = migration.name
    apply.__doc__ = migration.doc
    return apply


# What SQLite alone does in a migration, after its steps.
EXTRA: dict[str, Step] = {"m005_messages_parts_column": m005_backfill}
MIGRATIONS: list[Step] = schema.registry(_migration, EXTRA)
