"""PostgreSQL schema migrations: the ordered list of ``schema.MIGRATIONS``, as on SQLite.

``migrate(conn)`` runs, in order, those whose name is not yet in the project schema's
``_migrations`` table. They are declared once for both backends in ``schema.py`` (where a new
migration goes: see its docstring) and rendered here. The caller holds the
database's migration lock inside a transaction whose ``search_path`` is the project's schema:
DDL is transactional, so a failed migration leaves nothing behind.

The tables are SQLite's, column for column, with PostgreSQL types: JSON columns are ``text``
holding JSON (exactly what was written, like SQLite; ``::jsonb`` reads them in SQL), booleans
0/1 integers, times ISO-8601 strings. Text is ``COLLATE "C"`` (byte order, as SQLite compares),
whatever the database's locale. Additions that only PostgreSQL needs:

- ``pos`` (an identity column) where SQLite orders by ``rowid``: insertion order for listings
  and page cursors;
- ``run_events.session_id`` / ``session_pos`` and ``sessions.event_pos``: the session stream's
  position, handed out under the session row's lock so that positions become visible in
  order (see ``events.py``); identity values are not (transactions commit in any order);
- no triggers on ``message_parts``: only the store writes it, always with ``messages.parts``
  (``NOT NULL`` here), so readers never fall back to the parts rows.
"""

from __future__ import annotations

from collections.abc import Callable

import psycopg

from agi_jupyter.records import utc_now
from agi_jupyter.store import schema

Connection = psycopg.Connection[tuple[object, ...]]

Step = Callable[[Connection], None]
MIGRATIONS_TABLE = "_migrations"
TEXT = schema.TYPES["postgresql"][schema.TEXT]


def _unknown(table: str) -> set[str]:
    return set()  # the columns present: ``ADD COLUMN IF NOT EXISTS`` checks them here


def migrate(conn: Connection) -> list[str]:
    """Apply the pending migrations (see the module docstring); returns their names."""
    conn.execute(
        f"CREATE TABLE IF NOT EXISTS {MIGRATIONS_TABLE}"
        f" (name {TEXT} PRIMARY KEY, applied_at {TEXT} NOT NULL)"
    )
    done = {row[0] for row in conn.execute(f"SELECT name FROM {MIGRATIONS_TABLE}")}
    applied: list[str] = []
    for fn in PG_MIGRATIONS:
        if fn.__name__ in done:
            continue
        fn(conn)
        conn.execute(
            f"INSERT INTO {MIGRATIONS_TABLE} (name, applied_at) VALUES (%s, %s)",
            [fn.__name__, utc_now()],
        )
        applied.append(fn.__name__)
    return applied


def _migration(migration: schema.Migration, extra: Step | None) -> Step:
    """A migration of ``schema.MIGRATIONS`` on PostgreSQL."""

    def apply(conn: Connection) -> None:
        for step in migration.steps:
            for statement in schema.statements(step, "postgresql", _unknown):
                conn.execute(statement)
        if extra is not None:
            extra(conn)

    apply.__name__ = apply.__qualname__ = migration.name
    apply.__doc__ = migration.doc
    return apply


PG_MIGRATIONS: list[Step] = schema.registry(_migration, {})
