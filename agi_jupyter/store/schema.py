"""The store's schema, declared once for both backends, and the migrations written once.

``MIGRATIONS`` is the ordered, append-only list of every migration's name. A migration with
``steps`` is written here, once, as backend-neutral steps (``CreateTable``, ``AddColumn``,
``CreateIndex``), which ``sqlite_statements`` and ``postgres_statements`` render (SQLite:
``TEXT``/``INTEGER``/``REAL``/``BLOB``; PostgreSQL: ``text COLLATE "C"``/``bigint``/
``double precision``/``bytea``, and an identity column ``pos`` in every ``ordered`` table,
where SQLite orders by ``rowid``). The first ones (``steps=None``: m001 to m005 and m008) were
written per backend before this module existed and stay so (``migrations.py``,
``postgres/migrations.py``), released and frozen; ``BASE`` declares the tables they make.

``tables(backend)`` is the schema a fresh database of that backend ends with: ``BASE`` plus every
step of every migration, which ``tests/store/test_schema.py`` checks against a fresh SQLite file
and a fresh PostgreSQL schema (their tables and columns).

**Adding a migration** is a one-place change: append to ``MIGRATIONS`` here, e.g.

    Migration(
        "m017_runs_priority",
        "Runs have a priority (higher first).",
        (AddColumn("runs", Column("priority", INTEGER, not_null=True, default="0")),),
    ),

and both backends apply it (``migrate`` of each records the name in its ``_migrations``), fresh
databases and old ones alike; the declaration follows. A record field it adds also goes to
``records`` (``rows.Mapping`` maps fields to columns). Each step is idempotent (``IF NOT
EXISTS``, a column added only when missing). A data migration that SQL of both backends
cannot share is a ``Sql`` step with one statement per backend.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Literal, TypeVar

Backend = Literal["sqlite", "postgresql"]
ColumnType = Literal["text", "integer", "real", "blob"]
TEXT: ColumnType = "text"
INTEGER: ColumnType = "integer"
REAL: ColumnType = "real"
BLOB: ColumnType = "blob"

TYPES: dict[Backend, dict[ColumnType, str]] = {
    "sqlite": {TEXT: "TEXT", INTEGER: "INTEGER", REAL: "REAL", BLOB: "BLOB"},
    "postgresql": {
        TEXT: 'text COLLATE "C"',
        INTEGER: "bigint",
        REAL: "double precision",
        BLOB: "bytea",
    },
}
POS = "pos bigint GENERATED ALWAYS AS IDENTITY"
F = TypeVar("F")


@dataclass(frozen=True)
class Column:
    name: str
    type: ColumnType = TEXT
    not_null: bool = False
    default: str | None = None  # an SQL literal both backends read: 0, 0.0, '[]'
    primary_key: bool = False
    only: Backend | None = None  # a column of one backend's tables only

    def sql(self, backend: Backend) -> str:
        out = f"{self.name} {TYPES[backend][self.type]}"
        if self.primary_key:
            out += " PRIMARY KEY"
        if self.not_null:
            out += " NOT NULL"
        if self.default is not None:
            out += f" DEFAULT {self.default}"
        return out


@dataclass(frozen=True)
class Table:
    name: str
    columns: tuple[Column, ...]
    ordered: bool = True  # PostgreSQL gives it ``pos`` (SQLite's ``rowid``: insertion order)

    def column_names(self, backend: Backend) -> list[str]:
        names = [c.name for c in self.columns if c.only in (None, backend)]
        return [*names, "pos"] if self.ordered and backend == "postgresql" else names


@dataclass(frozen=True)
class CreateTable:
    table: Table


@dataclass(frozen=True)
class AddColumn:
    table: str
    column: Column


@dataclass(frozen=True)
class CreateIndex:
    table: str
    columns: tuple[str, ...]
    unique: bool = False
    where: str | None = None  # a partial index's condition

    @property
    def name(self) -> str:
        return f"idx_{self.table}_{'_'.join(self.columns)}"


@dataclass(frozen=True)
class Sql:
    """Statements that differ per backend (a data migration): run in order."""

    sqlite: tuple[str, ...]
    postgresql: tuple[str, ...]


Step = CreateTable | AddColumn | CreateIndex | Sql


@dataclass(frozen=True)
class Migration:
    name: str
    doc: str
    steps: tuple[Step, ...] | None = field(default=None)  # None: written per backend


# --- rendering ---------------------------------------------------------------------------------


def sqlite_statements(step: Step, columns_of: Callable[[str], set[str]]) -> list[str]:
    """The SQLite statements of one step (``columns_of``: a table's present columns)."""
    return _statements(step, "sqlite", columns_of)


def postgres_statements(step: Step) -> list[str]:
    return _statements(step, "postgresql", lambda table: set())


def _statements(step: Step, backend: Backend, columns_of: Callable[[str], set[str]]) -> list[str]:
    if isinstance(step, CreateTable):
        table = step.table
        columns = [c.sql(backend) for c in table.columns if c.only in (None, backend)]
        if table.ordered and backend == "postgresql":
            columns.insert(1, POS)
        return [f"CREATE TABLE IF NOT EXISTS {table.name} ({', '.join(columns)})"]
    if isinstance(step, AddColumn):
        if step.column.only not in (None, backend) or step.column.name in columns_of(step.table):
            return []
        exists = " IF NOT EXISTS" if backend == "postgresql" else ""
        return [f"ALTER TABLE {step.table} ADD COLUMN{exists} {step.column.sql(backend)}"]
    if isinstance(step, CreateIndex):
        unique = "UNIQUE " if step.unique else ""
        where = f" WHERE {step.where}" if step.where else ""
        return [
            f"CREATE {unique}INDEX IF NOT EXISTS {step.name}"
            f" ON {step.table} ({', '.join(step.columns)}){where}"
        ]
    return list(step.sqlite if backend == "sqlite" else step.postgresql)


# --- the declaration ---------------------------------------------------------------------------

_STAMPS = (Column("created_at", not_null=True), Column("updated_at", not_null=True))


def _id(*columns: Column) -> tuple[Column, ...]:
    return (Column("id", primary_key=True), *columns)


def _texts(*names: str) -> tuple[Column, ...]:
    return tuple(Column(name) for name in names)


# The tables as the migrations written per backend (m001 to m005, m008) make them.
BASE: tuple[Table, ...] = (
    Table(
        "sessions",
        _id(
            Column("title"),
            Column("agent", not_null=True),
            Column("sdk", not_null=True),
            *_texts("provider", "model", "system_prompt", "thinking_level"),
            Column("queue_mode", not_null=True),
            *_texts("tool_config", "metadata", "notebook_path"),
            Column("message_count", INTEGER, default="0"),
            Column("input_tokens", INTEGER, default="0"),
            Column("output_tokens", INTEGER, default="0"),
            Column("cost_usd", REAL, default="0"),
            *_STAMPS,
            # The session stream's counter (see ``events.py``).
            Column("event_pos", INTEGER, not_null=True, default="0", only="postgresql"),
        ),
    ),
    Table(
        "messages",
        _id(
            Column("session_id", not_null=True),
            Column("role", not_null=True),
            Column("run_id"),
            Column("status", not_null=True),
            *_texts("text", "meta"),
            *_STAMPS,
            Column("parts"),  # m005 (NOT NULL DEFAULT '[]' on PostgreSQL)
        ),
    ),
    Table(
        "message_parts",
        _id(
            Column("message_id", not_null=True),
            Column("idx", INTEGER, not_null=True),
            Column("type", not_null=True),
            Column("content", not_null=True),
        ),
        ordered=False,
    ),
    Table(
        "runs",
        _id(
            Column("session_id", not_null=True),
            Column("type", not_null=True),
            Column("execution_mode", not_null=True),
            Column("status", not_null=True),
            *_texts("provider", "model", "thinking_level", "system_prompt"),
            *_texts("input_message_id", "error"),
            Column("attempt", INTEGER, default="0"),
            Column("max_attempts", INTEGER),
            *_texts("next_attempt_at", "provider_response_id", "last_webhook_event_id"),
            Column("loop_state"),
            Column("version", INTEGER, not_null=True, default="0"),
            *_texts("owner", "heartbeat_at", "usage"),
            Column("cost_usd", REAL, default="0"),
            *_texts("notebook_path", "cell_id"),
            Column("execution_count", INTEGER),
            *_texts("request_hash", "replayed_from", "started_at", "completed_at"),
            *_STAMPS,
        ),
    ),
    Table(
        "run_events",
        _id(
            Column("run_id", not_null=True),
            Column("seq", INTEGER, not_null=True),
            Column("type", not_null=True),
            Column("payload"),
            Column("created_at", not_null=True),
            # The session stream's position (see ``events.py``).
            Column("session_id", not_null=True, only="postgresql"),
            Column("session_pos", INTEGER, not_null=True, only="postgresql"),
        ),
    ),
    Table(
        "tool_calls",
        _id(
            Column("run_id", not_null=True),
            Column("tool_call_id", not_null=True),
            Column("name", not_null=True),
            Column("message_id"),
            Column("args"),
            Column("status", not_null=True),
            Column("result"),
            Column("is_error", INTEGER, not_null=True, default="0"),
            *_texts("started_at", "finished_at"),
            *_STAMPS,
        ),
    ),
    Table(
        "artifacts",
        _id(
            Column("kind", not_null=True),
            *_texts("run_id", "session_id", "message_part_id", "title", "mime", "path"),
            Column("size", INTEGER, not_null=True, default="0"),
            *_texts("sha256", "data", "text"),
            Column("content", BLOB),
            *_STAMPS,
        ),
    ),
    Table(
        "webhook_events",
        _id(
            Column("provider", not_null=True),
            Column("event_id", not_null=True),
            Column("type", not_null=True),
            *_texts("response_id", "payload"),
            Column("received_at", not_null=True),
            *_texts("processed_at", "processing_error"),
            *_STAMPS,
        ),
    ),
    Table(
        "tasks",
        _id(
            Column("title", not_null=True),
            Column("details"),
            Column("status", not_null=True),
            Column("due_at"),
            *_STAMPS,
        ),
    ),
    Table(
        "capabilities",
        _id(
            Column("name", not_null=True),
            *_texts("description", "file_path", "tool_schema"),
            *_STAMPS,
        ),
        ordered=False,
    ),
    Table(
        "blobs",
        (
            Column("sha256", primary_key=True),
            Column("size", INTEGER, not_null=True),
            Column("data", BLOB, not_null=True),
            Column("created_at", not_null=True),
        ),
        ordered=False,
    ),
    Table(
        "changes",
        _id(
            Column("run_id"),
            Column("turn", INTEGER),
            Column("tool_call_id"),
            Column("kind", not_null=True),
            Column("path", not_null=True),
            *_texts("before_sha", "after_sha"),
            Column("created_at", not_null=True),
        ),
    ),
    Table(
        "notebook_replies",
        (
            Column("request_id", primary_key=True),
            Column("payload", not_null=True),
            Column("created_at", not_null=True),
        ),
        ordered=False,
    ),
)

MIGRATIONS: list[Migration] = [
    Migration("m001_initial", "Sessions, their messages, and the ordered parts of each message."),
    Migration("m002_runs", "Runs (one agent turn or background job), their events, tool calls."),
    Migration(
        "m003_artifacts_webhooks_tasks_capabilities",
        "Artifacts, the webhook inbox, the task list, self-written tools.",
    ),
    Migration("m004_indexes", "Indexes on every foreign key, the run queue, histories, uniques."),
    Migration("m005_messages_parts_column", "``messages.parts``: a message's parts as one array."),
    Migration(
        "m006_runs_request_hash_index",
        "Replays find the recorded run of a cell by its request hash in one indexed lookup.",
        (CreateIndex("runs", ("request_hash", "status")),),
    ),
    Migration(
        "m007_run_leases",
        "Fencing of run owners: ``runs.epoch`` counts the hand-overs of a run (claim, takeover"
        " by recovery, release), and every write of an owner checks ``(owner, epoch)`` in its"
        " own transaction. The index serves claiming the due head of each session's queue.",
        (
            AddColumn("runs", Column("epoch", INTEGER, not_null=True, default="0")),
            CreateIndex("runs", ("session_id", "status")),
        ),
    ),
    Migration("m008_snapshots_and_changes", "Snapshots (blobs), changes, notebook replies."),
    Migration(
        "m009_webhook_delivery_id",
        "``webhook_events.delivery_id``: the ``webhook-id`` header of the delivery, unique, so a"
        " redelivery is recognised by it as well as by the payload's event id.",
        (
            AddColumn("webhook_events", Column("delivery_id")),
            CreateIndex(
                "webhook_events", ("delivery_id",), unique=True, where="delivery_id IS NOT NULL"
            ),
        ),
    ),
    Migration(
        "m013_runs_agent",
        "A run can have its own agent (``%%agi -a X`` changes the agent for one cell only).",
        (AddColumn("runs", Column("agent")),),
    ),
    Migration(
        "m014_tool_call_approvals",
        "``tool_calls.approval``: a person's decision on a call that waited for one (a run in"
        " ``waiting_approval`` resumes once each of its waiting calls has one).",
        (AddColumn("tool_calls", Column("approval")),),
    ),
    Migration(
        "m015_sessions_budget",
        'A session\'s token/cost budget (JSON ``{"max_tokens", "max_usd"}``, NULL: none).',
        (AddColumn("sessions", Column("budget")),),
    ),
    Migration(
        "m016_notebook_budgets",
        "Notebook budgets set from a front door (``%agi budget --notebook``, REST): by the"
        ' notebook\'s path relative to the project, JSON ``{"max_tokens", "max_usd"}``; they win'
        " over ``budgets.notebooks`` of the config (a store row: every process sees it at once).",
        (
            CreateTable(
                Table(
                    "notebook_budgets",
                    (
                        Column("path", primary_key=True),
                        Column("budget", not_null=True),
                        Column("updated_at", not_null=True),
                    ),
                    ordered=False,
                )
            ),
        ),
    ),
]


def tables() -> dict[str, Table]:
    """The schema every migration leads to: ``BASE`` with every step applied, by name."""
    out = {table.name: table for table in BASE}
    for migration in MIGRATIONS:
        for step in migration.steps or ():
            if isinstance(step, CreateTable):
                out[step.table.name] = step.table
            elif isinstance(step, AddColumn):
                table = out[step.table]
                out[step.table] = replace(table, columns=(*table.columns, step.column))
    return out


def registry(own: dict[str, F], shared: Callable[[Migration], F]) -> list[F]:
    """A backend's ordered migration functions: its ``own`` for the migrations written per
    backend (by name; a missing one is an error here, at import), ``shared(migration)`` for
    the others. The function's ``__name__`` is the migration's name (``_migrations.name``)."""
    missing = [m.name for m in MIGRATIONS if m.steps is None and m.name not in own]
    if missing:
        raise TypeError(f"migrations written per backend are missing: {', '.join(missing)}")
    return [own[m.name] if m.steps is None else shared(m) for m in MIGRATIONS]
