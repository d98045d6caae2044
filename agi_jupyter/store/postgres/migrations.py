"""PostgreSQL schema migrations: the ordered list of ``schema.MIGRATIONS``, as on SQLite.

``migrate(conn)`` runs, in order, those whose name is not yet in the project schema's
``_migrations`` table. Most are declared once for both backends in ``schema.py`` (where a new
migration goes: see its docstring) and rendered here; the first ones (m001 to m005, m008) were
written for PostgreSQL alone and are below, released and frozen. The caller holds the
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
_OWN: dict[str, Step] = {}


def migration(fn: Step) -> Step:
    """A migration written for PostgreSQL alone (``schema.MIGRATIONS`` names where it goes)."""
    _OWN[fn.__name__] = fn
    return fn


MIGRATIONS_TABLE = "_migrations"
TEXT = schema.TYPES["postgresql"][schema.TEXT]
STAMPS = f"created_at {TEXT} NOT NULL, updated_at {TEXT} NOT NULL"
POS = schema.POS


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


def _table(conn: Connection, name: str, *columns: str) -> None:
    conn.execute(f"CREATE TABLE {name} ({', '.join(columns)})")


@migration
def m001_initial(conn: Connection) -> None:
    """Sessions, their messages, and the ordered parts of each message."""
    _table(
        conn,
        "sessions",
        f"id {TEXT} PRIMARY KEY",
        POS,
        f"title {TEXT}",
        f"agent {TEXT} NOT NULL",
        f"sdk {TEXT} NOT NULL",
        f"provider {TEXT}",
        f"model {TEXT}",
        f"system_prompt {TEXT}",
        f"thinking_level {TEXT}",
        f"queue_mode {TEXT} NOT NULL",
        f"tool_config {TEXT}",
        f"metadata {TEXT}",
        f"notebook_path {TEXT}",
        "message_count bigint DEFAULT 0",
        "input_tokens bigint DEFAULT 0",
        "output_tokens bigint DEFAULT 0",
        "cost_usd double precision DEFAULT 0",
        STAMPS,
    )
    _table(
        conn,
        "messages",
        f"id {TEXT} PRIMARY KEY",
        POS,
        f"session_id {TEXT} NOT NULL",
        f"role {TEXT} NOT NULL",
        f"run_id {TEXT}",
        f"status {TEXT} NOT NULL",
        f"text {TEXT}",
        f"meta {TEXT}",
        STAMPS,
    )
    _table(
        conn,
        "message_parts",
        f"id {TEXT} PRIMARY KEY",
        f"message_id {TEXT} NOT NULL",
        "idx bigint NOT NULL",
        f"type {TEXT} NOT NULL",
        f"content {TEXT} NOT NULL",
    )


@migration
def m002_runs(conn: Connection) -> None:
    """Runs, their events (with the session stream's positions), tool calls."""
    _table(
        conn,
        "runs",
        f"id {TEXT} PRIMARY KEY",
        POS,
        f"session_id {TEXT} NOT NULL",
        *(f"{c} {TEXT} NOT NULL" for c in ("type", "execution_mode", "status")),
        *(f"{c} {TEXT}" for c in ("provider", "model", "thinking_level", "system_prompt")),
        f"input_message_id {TEXT}",
        f"error {TEXT}",
        "attempt bigint DEFAULT 0",
        "max_attempts bigint",
        f"next_attempt_at {TEXT}",
        f"provider_response_id {TEXT}",
        f"last_webhook_event_id {TEXT}",
        f"loop_state {TEXT}",
        "version bigint NOT NULL DEFAULT 0",
        f"owner {TEXT}",
        f"heartbeat_at {TEXT}",
        f"usage {TEXT}",
        "cost_usd double precision DEFAULT 0",
        *(f"{c} {TEXT}" for c in ("notebook_path", "cell_id")),
        "execution_count bigint",
        *(f"{c} {TEXT}" for c in ("request_hash", "replayed_from", "started_at")),
        f"completed_at {TEXT}",
        STAMPS,
    )
    _table(
        conn,
        "run_events",
        f"id {TEXT} PRIMARY KEY",
        POS,
        f"run_id {TEXT} NOT NULL",
        "seq bigint NOT NULL",
        f"type {TEXT} NOT NULL",
        f"payload {TEXT}",
        f"created_at {TEXT} NOT NULL",
        f"session_id {TEXT} NOT NULL",
        "session_pos bigint NOT NULL",
    )
    conn.execute("ALTER TABLE sessions ADD COLUMN event_pos bigint NOT NULL DEFAULT 0")
    _table(
        conn,
        "tool_calls",
        f"id {TEXT} PRIMARY KEY",
        POS,
        f"run_id {TEXT} NOT NULL",
        f"tool_call_id {TEXT} NOT NULL",
        f"name {TEXT} NOT NULL",
        f"message_id {TEXT}",
        f"args {TEXT}",
        f"status {TEXT} NOT NULL",
        f"result {TEXT}",
        "is_error bigint NOT NULL DEFAULT 0",
        f"started_at {TEXT}",
        f"finished_at {TEXT}",
        STAMPS,
    )


@migration
def m003_artifacts_webhooks_tasks_capabilities(conn: Connection) -> None:
    """Artifacts (payloads in the database, readable by every replica), webhook inbox, tasks,
    self-written tools."""
    _table(
        conn,
        "artifacts",
        f"id {TEXT} PRIMARY KEY",
        POS,
        f"kind {TEXT} NOT NULL",
        *(f"{c} {TEXT}" for c in ("run_id", "session_id", "message_part_id", "title", "mime")),
        f"path {TEXT}",
        "size bigint NOT NULL DEFAULT 0",
        f"sha256 {TEXT}",
        f"data {TEXT}",
        f"text {TEXT}",
        "content bytea",
        STAMPS,
    )
    _table(
        conn,
        "webhook_events",
        f"id {TEXT} PRIMARY KEY",
        POS,
        *(f"{c} {TEXT} NOT NULL" for c in ("provider", "event_id", "type")),
        f"response_id {TEXT}",
        f"payload {TEXT}",
        f"received_at {TEXT} NOT NULL",
        f"processed_at {TEXT}",
        f"processing_error {TEXT}",
        STAMPS,
    )
    _table(
        conn,
        "tasks",
        f"id {TEXT} PRIMARY KEY",
        POS,
        f"title {TEXT} NOT NULL",
        f"details {TEXT}",
        f"status {TEXT} NOT NULL",
        f"due_at {TEXT}",
        STAMPS,
    )
    _table(
        conn,
        "capabilities",
        f"id {TEXT} PRIMARY KEY",
        f"name {TEXT} NOT NULL",
        f"description {TEXT}",
        f"file_path {TEXT}",
        f"tool_schema {TEXT}",
        STAMPS,
    )


@migration
def m004_indexes(conn: Connection) -> None:
    """SQLite's indexes (foreign keys, the run queue, histories, uniqueness), plus the orders
    that ``pos`` serves: pages, the session stream, listings in creation order."""
    indexes: list[tuple[str, tuple[str, ...], bool]] = [  # (table, columns, unique)
        ("sessions", ("notebook_path", "pos"), False),
        ("sessions", ("pos",), False),
        ("messages", ("session_id", "created_at", "pos"), False),
        ("messages", ("run_id",), False),
        ("message_parts", ("message_id", "idx"), True),
        ("runs", ("session_id", "pos"), False),
        ("runs", ("pos",), False),
        ("runs", ("status", "next_attempt_at"), False),
        ("runs", ("input_message_id",), False),
        ("runs", ("replayed_from",), False),
        ("runs", ("provider_response_id",), True),
        ("run_events", ("run_id", "seq"), True),
        ("run_events", ("session_id", "session_pos"), True),
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
        kind = "UNIQUE INDEX" if unique else "INDEX"
        name = f"idx_{table}_{'_'.join(columns)}"
        conn.execute(f"CREATE {kind} {name} ON {table} ({', '.join(columns)})")


@migration
def m005_messages_parts_column(conn: Connection) -> None:
    """``messages.parts``: the JSON array of a message's parts, which histories are read from
    in one query (see ``store/rows.py``). Always written, so never NULL."""
    conn.execute(f"ALTER TABLE messages ADD COLUMN parts {TEXT} NOT NULL DEFAULT '[]'")


@migration
def m008_snapshots_and_changes(conn: Connection) -> None:
    """Content-addressed snapshots (``blobs``, the bytes in the database, so every replica can
    undo), the changes runs make to notebooks and files, and the mailbox where a JupyterLab
    tab leaves the answer to a kernel's notebook request (the tab may talk to one replica and
    the kernel's server be another)."""
    _table(
        conn,
        "blobs",
        f"sha256 {TEXT} PRIMARY KEY",
        "size bigint NOT NULL",
        "data bytea NOT NULL",
        f"created_at {TEXT} NOT NULL",
    )
    _table(
        conn,
        "changes",
        f"id {TEXT} PRIMARY KEY",
        POS,
        f"run_id {TEXT}",
        "turn bigint",
        f"tool_call_id {TEXT}",
        f"kind {TEXT} NOT NULL",
        f"path {TEXT} NOT NULL",
        f"before_sha {TEXT}",
        f"after_sha {TEXT}",
        f"created_at {TEXT} NOT NULL",
    )
    conn.execute("CREATE INDEX idx_changes_run_id ON changes (run_id)")
    conn.execute("CREATE INDEX idx_changes_path ON changes (path)")
    # The blob collector's anti-join (``sessions.py``) looks a blob up by either column.
    conn.execute("CREATE INDEX idx_changes_before_sha ON changes (before_sha)")
    conn.execute("CREATE INDEX idx_changes_after_sha ON changes (after_sha)")
    _table(
        conn,
        "notebook_replies",
        f"request_id {TEXT} PRIMARY KEY",
        f"payload {TEXT} NOT NULL",
        f"created_at {TEXT} NOT NULL",
    )


def _shared(migration: schema.Migration) -> Step:
    """A migration of ``schema.MIGRATIONS`` as PostgreSQL statements."""

    def apply(conn: Connection) -> None:
        for step in migration.steps or ():
            for statement in schema.postgres_statements(step):
                conn.execute(statement)

    apply.__name__ = apply.__qualname__ = migration.name
    apply.__doc__ = migration.doc
    return apply


PG_MIGRATIONS: list[Step] = schema.registry(_OWN, _shared)
