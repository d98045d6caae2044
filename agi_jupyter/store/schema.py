"""The store's schema and its migrations, declared once for both backends.

``MIGRATIONS`` is the ordered, append-only list of the migrations, each a name (recorded in a
database's ``_migrations`` once applied) and backend-neutral steps: ``CreateTable``,
``AddColumn``, ``CreateIndex``. Each backend renders them (``migrations.py`` for SQLite, with
sqlite-utils for its tables; ``postgres/migrations.py``): SQLite ``TEXT``/``INTEGER``/``REAL``/
``BLOB`` and foreign keys (``references``); PostgreSQL ``text COLLATE "C"`` (byte order, as
SQLite compares), ``bigint``, ``double precision``, ``bytea``, and an identity column ``pos``
in every ``ordered`` table, where SQLite orders by ``rowid``. What one backend alone has is
marked ``only=`` (PostgreSQL's session-stream positions, its indexes on ``pos``); a data
migration one backend needs (SQLite's m005 backfill and triggers) is that backend's ``extra``
function of the same name, run after the steps. The names and steps of m001 to m016 are what
the per-backend migration functions before this module did: databases they made open and
carry on from where they are.

``tables()`` is the schema that every migration leads to: ``tests/store/test_schema.py`` checks
that a fresh SQLite file and a fresh PostgreSQL schema have exactly its tables and columns.

**Adding a migration** is a one-place change: append to ``MIGRATIONS`` here, e.g.

    Migration(
        "m017_runs_priority",
        "Runs have a priority (higher first).",
        (AddColumn("runs", Column("priority", INTEGER, not_null=True, default=0)),),
    ),

and both backends apply it, to fresh databases and old ones alike (list its name in
``tests/store/test_sqlite_migrations.py``'s ``test_migrations_are_numbered_in_order``); a
record field it adds also goes to ``records`` (``rows.Mapping`` maps fields to columns). Never
edit or reorder a released migration. Every step is idempotent (``IF NOT EXISTS``; a column is
added only when missing).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
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
    default: int | float | str | None = None
    primary_key: bool = False
    references: str | None = None  # a table whose ``id`` this is (SQLite declares it)
    only: Backend | None = None  # a column of one backend's tables only

    def sql(self, backend: Backend) -> str:
        out = f"{self.name} {TYPES[backend][self.type]}"
        if self.primary_key:
            out += " PRIMARY KEY"
        if self.not_null:
            out += " NOT NULL"
        if self.default is not None:
            value = self.default
            literal = (
                "'" + value.replace("'", "''") + "'" if isinstance(value, str) else f"{value:g}"
            )
            out += f" DEFAULT {literal}"
        if self.references is not None and backend == "sqlite":
            out += f" REFERENCES {self.references}(id)"
        return out


@dataclass(frozen=True)
class Table:
    name: str
    columns: tuple[Column, ...]
    ordered: bool = True  # PostgreSQL gives it ``pos`` (SQLite's ``rowid``: insertion order)

    def columns_of(self, backend: Backend) -> list[Column]:
        return [c for c in self.columns if c.only in (None, backend)]

    def column_names(self, backend: Backend) -> list[str]:
        names = [c.name for c in self.columns_of(backend)]
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
    only: Backend | None = None  # an index of one backend only

    @property
    def name(self) -> str:
        return f"idx_{self.table}_{'_'.join(self.columns)}"


Step = CreateTable | AddColumn | CreateIndex


@dataclass(frozen=True)
class Migration:
    name: str
    doc: str
    steps: tuple[Step, ...]


def statements(step: Step, backend: Backend, present: Callable[[str], set[str]]) -> list[str]:
    """The statements of one step on ``backend`` (``present``: a table's columns now), each
    idempotent: nothing for a column already there, ``IF NOT EXISTS`` otherwise."""
    if isinstance(step, CreateTable):
        table = step.table
        columns = [c.sql(backend) for c in table.columns_of(backend)]
        if table.ordered and backend == "postgresql":
            columns.insert(1, POS)
        return [f"CREATE TABLE IF NOT EXISTS {table.name} ({', '.join(columns)})"]
    if isinstance(step, AddColumn):
        column = step.column
        if column.only not in (None, backend) or column.name in present(step.table):
            return []
        exists = " IF NOT EXISTS" if backend == "postgresql" else ""
        return [f"ALTER TABLE {step.table} ADD COLUMN{exists} {column.sql(backend)}"]
    if step.only not in (None, backend):
        return []
    unique = "UNIQUE " if step.unique else ""
    where = f" WHERE {step.where}" if step.where else ""
    return [
        f"CREATE {unique}INDEX IF NOT EXISTS {step.name}"
        f" ON {step.table} ({', '.join(step.columns)}){where}"
    ]


# --- the declaration ---------------------------------------------------------------------------

_STAMPS = (Column("created_at", not_null=True), Column("updated_at", not_null=True))


def _id(*columns: Column) -> tuple[Column, ...]:
    return (Column("id", primary_key=True), *columns)


def _texts(*names: str) -> tuple[Column, ...]:
    return tuple(Column(name) for name in names)


def _indexes(
    table: str, *columns: tuple[str, ...], unique: bool = False, only: Backend | None = None
) -> tuple[CreateIndex, ...]:
    return tuple(CreateIndex(table, c, unique=unique, only=only) for c in columns)


_PG: Backend = "postgresql"
_SQLITE: Backend = "sqlite"

MIGRATIONS: list[Migration] = [
    Migration(
        "m001_initial",
        "Sessions, their messages, and the ordered parts of each message.",
        (
            CreateTable(
                Table(
                    "sessions",
                    _id(
                        Column("title"),
                        Column("agent", not_null=True),
                        Column("sdk", not_null=True),
                        *_texts("provider", "model", "system_prompt", "thinking_level"),
                        Column("queue_mode", not_null=True),
                        *_texts("tool_config", "metadata", "notebook_path"),  # JSON, JSON
                        Column("message_count", INTEGER, default=0),
                        Column("input_tokens", INTEGER, default=0),
                        Column("output_tokens", INTEGER, default=0),
                        Column("cost_usd", REAL, default=0.0),
                        *_STAMPS,
                    ),
                )
            ),
            CreateTable(
                Table(
                    "messages",
                    _id(
                        Column("session_id", not_null=True, references="sessions"),
                        Column("role", not_null=True),
                        Column("run_id"),
                        Column("status", not_null=True),
                        *_texts("text", "meta"),  # meta: JSON
                        *_STAMPS,
                    ),
                )
            ),
            CreateTable(
                Table(
                    "message_parts",
                    _id(
                        Column("message_id", not_null=True, references="messages"),
                        Column("idx", INTEGER, not_null=True),
                        Column("type", not_null=True),
                        Column("content", not_null=True),  # JSON
                    ),
                    ordered=False,
                )
            ),
        ),
    ),
    Migration(
        "m002_runs",
        "Runs (the state machine of one agent turn or background job), their events (with, on"
        " PostgreSQL, the session stream's positions: see ``events.py``), tool calls.",
        (
            CreateTable(
                Table(
                    "runs",
                    _id(
                        Column("session_id", not_null=True, references="sessions"),
                        Column("type", not_null=True),
                        Column("execution_mode", not_null=True),
                        Column("status", not_null=True),
                        *_texts("provider", "model", "thinking_level", "system_prompt"),
                        *_texts("input_message_id", "error"),  # error: JSON
                        Column("attempt", INTEGER, default=0),
                        Column("max_attempts", INTEGER),
                        *_texts("next_attempt_at", "provider_response_id"),
                        *_texts("last_webhook_event_id", "loop_state"),  # loop_state: JSON
                        Column("version", INTEGER, not_null=True, default=0),
                        *_texts("owner", "heartbeat_at", "usage"),  # usage: JSON
                        Column("cost_usd", REAL, default=0.0),
                        *_texts("notebook_path", "cell_id"),
                        Column("execution_count", INTEGER),
                        *_texts("request_hash", "replayed_from", "started_at", "completed_at"),
                        *_STAMPS,
                    ),
                )
            ),
            CreateTable(
                Table(
                    "run_events",
                    _id(
                        Column("run_id", not_null=True, references="runs"),
                        Column("seq", INTEGER, not_null=True),
                        Column("type", not_null=True),
                        Column("payload"),  # JSON
                        Column("created_at", not_null=True),
                        Column("session_id", not_null=True, only=_PG),
                        Column("session_pos", INTEGER, not_null=True, only=_PG),
                    ),
                )
            ),
            AddColumn("sessions", Column("event_pos", INTEGER, not_null=True, default=0, only=_PG)),
            CreateTable(
                Table(
                    "tool_calls",
                    _id(
                        Column("run_id", not_null=True, references="runs"),
                        Column("tool_call_id", not_null=True),
                        Column("name", not_null=True),
                        Column("message_id", references="messages"),
                        Column("args"),  # JSON
                        Column("status", not_null=True),
                        Column("result"),  # JSON
                        Column("is_error", INTEGER, not_null=True, default=0),  # 0/1
                        *_texts("started_at", "finished_at"),
                        *_STAMPS,
                    ),
                )
            ),
        ),
    ),
    Migration(
        "m003_artifacts_webhooks_tasks_capabilities",
        "Artifacts (SQLite: large payloads as files, ``path``; PostgreSQL: in ``content``), the"
        " webhook inbox, the task list, self-written tools.",
        (
            CreateTable(
                Table(
                    "artifacts",
                    _id(
                        Column("kind", not_null=True),
                        Column("run_id", references="runs"),
                        Column("session_id", references="sessions"),
                        *_texts("message_part_id", "title", "mime", "path"),
                        Column("size", INTEGER, not_null=True, default=0),
                        *_texts("sha256", "data", "text"),  # data: JSON
                        Column("content", BLOB),
                        *_STAMPS,
                    ),
                )
            ),
            CreateTable(
                Table(
                    "webhook_events",
                    _id(
                        Column("provider", not_null=True),
                        Column("event_id", not_null=True),
                        Column("type", not_null=True),
                        *_texts("response_id", "payload"),  # payload: JSON
                        Column("received_at", not_null=True),
                        *_texts("processed_at", "processing_error"),
                        *_STAMPS,
                    ),
                )
            ),
            CreateTable(
                Table(
                    "tasks",
                    _id(
                        Column("title", not_null=True),
                        Column("details"),
                        Column("status", not_null=True),
                        Column("due_at"),
                        *_STAMPS,
                    ),
                )
            ),
            CreateTable(
                Table(
                    "capabilities",
                    _id(
                        Column("name", not_null=True),
                        *_texts("description", "file_path", "tool_schema"),  # JSON schema
                        *_STAMPS,
                    ),
                    ordered=False,
                )
            ),
        ),
    ),
    Migration(
        "m004_indexes",
        "Indexes on every foreign key (one counts as indexed when it leads an index), the run"
        " queue, histories and the unique constraints; on PostgreSQL also the orders ``pos``"
        " serves (pages, listings in creation order).",
        (
            *_indexes("sessions", ("notebook_path",), only=_SQLITE),
            *_indexes("sessions", ("notebook_path", "pos"), ("pos",), only=_PG),
            *_indexes("messages", ("session_id", "created_at"), only=_SQLITE),
            *_indexes("messages", ("session_id", "created_at", "pos"), only=_PG),
            *_indexes("messages", ("run_id",)),
            *_indexes("message_parts", ("message_id", "idx"), unique=True),
            *_indexes("runs", ("session_id",), only=_SQLITE),
            *_indexes("runs", ("session_id", "pos"), ("pos",), only=_PG),
            *_indexes("runs", ("status", "next_attempt_at"), ("input_message_id",)),
            *_indexes("runs", ("replayed_from",)),
            *_indexes("runs", ("provider_response_id",), unique=True),
            *_indexes("run_events", ("run_id", "seq"), unique=True),
            *_indexes("run_events", ("session_id", "session_pos"), unique=True, only=_PG),
            *_indexes("tool_calls", ("run_id", "tool_call_id"), unique=True),
            *_indexes("tool_calls", ("message_id",)),
            *_indexes("artifacts", ("run_id",), ("session_id",), ("message_part_id",)),
            *_indexes("webhook_events", ("event_id",), unique=True),
            *_indexes("webhook_events", ("processed_at",), ("response_id",)),
            *_indexes("tasks", ("status", "due_at")),
            *_indexes("capabilities", ("name",), unique=True),
        ),
    ),
    Migration(
        "m005_messages_parts_column",
        "``messages.parts``: a copy of a message's parts as one JSON array of their dicts, so a"
        " history is read with one query and no join over ``message_parts`` (which stays, with"
        " the same rows: artifacts and SQL queries refer to them). SQLite: filled in for"
        " existing messages, and cleared by triggers whenever the parts rows change (its"
        " ``migrations.py``); PostgreSQL: always written, never NULL.",
        (
            AddColumn("messages", Column("parts", only=_SQLITE)),
            AddColumn("messages", Column("parts", not_null=True, default="[]", only=_PG)),
        ),
    ),
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
            AddColumn("runs", Column("epoch", INTEGER, not_null=True, default=0)),
            CreateIndex("runs", ("session_id", "status")),
        ),
    ),
    Migration(
        "m008_snapshots_and_changes",
        "Content-addressed snapshots (``blobs``, in the database: any replica can undo) and the"
        " changes runs make to notebooks and files (``changes``: the sha256 of the content"
        " before and after), which undo restores; and ``notebook_replies``, where a JupyterLab"
        " tab leaves the answer to a kernel's notebook request (a busy kernel cannot read comm"
        " messages, so the tab answers through the server).",
        (
            CreateTable(
                Table(
                    "blobs",
                    (
                        Column("sha256", primary_key=True),
                        Column("size", INTEGER, not_null=True),
                        Column("data", BLOB, not_null=True),
                        Column("created_at", not_null=True),
                    ),
                    ordered=False,
                )
            ),
            CreateTable(
                Table(
                    "changes",
                    _id(
                        Column("run_id", references="runs"),
                        Column("turn", INTEGER),
                        Column("tool_call_id"),
                        Column("kind", not_null=True),
                        Column("path", not_null=True),
                        *_texts("before_sha", "after_sha"),
                        Column("created_at", not_null=True),
                    ),
                )
            ),
            *_indexes("changes", ("run_id",), ("path",)),
            # The blob collector's anti-join (``sessions.py``) looks a blob up by either one.
            *_indexes("changes", ("before_sha",), ("after_sha",), only=_PG),
            CreateTable(
                Table(
                    "notebook_replies",
                    (
                        Column("request_id", primary_key=True),
                        Column("payload", not_null=True),
                        Column("created_at", not_null=True),
                    ),
                    ordered=False,
                )
            ),
        ),
    ),
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
    Migration(
        "m017_sessions_cached_input_tokens",
        "``sessions.cached_input_tokens``: the input tokens of the session's model calls that"
        " the provider read from its prompt cache (billed at the cached rate).",
        (AddColumn("sessions", Column("cached_input_tokens", INTEGER, default=0)),),
    ),
    Migration(
        "m018_compactions",
        "Compactions (``runtime/compaction.py``): a summary the model wrote of a session's older"
        " messages, sent in their place; ``through_message_id`` is the last message it covers"
        " (every sendable message up to it), the history itself is never changed.",
        (
            CreateTable(
                Table(
                    "compactions",
                    _id(
                        Column("session_id", not_null=True, references="sessions"),
                        Column("run_id"),
                        Column("first_message_id", not_null=True),
                        Column("through_message_id", not_null=True),
                        Column("message_count", INTEGER, not_null=True),
                        Column("summary", not_null=True),
                        *_texts("provider", "model"),
                        Column("input_tokens", INTEGER),
                        Column("output_tokens", INTEGER),
                        Column("cost_usd", REAL),
                        Column("created_at", not_null=True),
                    ),
                )
            ),
            *_indexes("compactions", ("session_id",)),
        ),
    ),
    Migration(
        "m019_completion_usage",
        "Inline completions are counted, not stored as sessions: requests, superseded ones,"
        " tokens and cost per notebook path ('' for none) and ``provider:model``; ``unpriced``"
        " counts requests whose cost is unknown (no usage reported, or no catalog price).",
        (
            CreateTable(
                Table(
                    "completion_usage",
                    (
                        Column("key", primary_key=True),  # path and model, as a JSON pair
                        Column("path", not_null=True),
                        Column("model", not_null=True),
                        Column("requests", INTEGER, not_null=True, default=0),
                        Column("cancelled", INTEGER, not_null=True, default=0),
                        Column("input_tokens", INTEGER, not_null=True, default=0),
                        Column("output_tokens", INTEGER, not_null=True, default=0),
                        Column("cost_usd", REAL, not_null=True, default=0),
                        Column("unpriced", INTEGER, not_null=True, default=0),
                        Column("updated_at", not_null=True),
                    ),
                    ordered=False,
                )
            ),
            CreateIndex("completion_usage", ("path",)),
        ),
    ),
    Migration(
        "m020_executions",
        "The ledger of what notebooks' kernels ran: one row per cell execution (the user's in"
        " JupyterLab, ``notebook.run``'s, ``%%agi``'s python tool), by notebook path, in the"
        " order they started, with who ran it (``origin`` user/agent, the run and tool call),"
        " the cell's id and source hash, its execution count, status and an output summary.",
        (
            CreateTable(
                Table(
                    "executions",
                    (
                        Column("id", primary_key=True),
                        Column("path", not_null=True),
                        Column("cell_id"),
                        Column("source_hash"),
                        Column("execution_count", INTEGER),
                        Column("origin", not_null=True),
                        Column("run_id"),
                        Column("tool_call_id"),
                        Column("status", not_null=True),
                        Column("started_at", not_null=True),
                        Column("ended_at"),
                        Column("summary"),
                    ),
                )
            ),
            *_indexes("executions", ("path",)),
        ),
    ),
    Migration(
        "m021_tool_calls_executed_by",
        "``tool_calls.executed_by``: who ran a call when not us (``provider``: a hosted tool"
        " the model's provider ran inside its response).",
        (AddColumn("tool_calls", Column("executed_by")),),
    ),
    Migration(
        "m022_blob_refs",
        "Large strings of JSON columns stored once (``store/values.py``): the string literals of"
        " at least ``LARGE_VALUE`` characters in ``tool_calls.args``/``result``,"
        " ``messages.parts``, ``message_parts.content`` and ``run_events.payload`` are kept in"
        " ``blobs`` and referenced from the columns; ``blob_refs`` names the sessions that refer"
        " to a blob, so deleting a session collects the blobs no other session or change uses.",
        (
            CreateTable(
                Table(
                    "blob_refs",
                    (
                        Column("id", primary_key=True),  # "<sha256>:<session_id>"
                        Column("sha256", not_null=True),
                        Column("session_id", not_null=True),
                    ),
                    ordered=False,
                )
            ),
            *_indexes("blob_refs", ("sha256",), ("session_id",)),
        ),
    ),
]


def tables() -> dict[str, Table]:
    """The schema every migration leads to, by table name (each backend takes its columns:
    ``Table.column_names``)."""
    out: dict[str, Table] = {}
    for migration in MIGRATIONS:
        for step in migration.steps:
            if isinstance(step, CreateTable):
                out[step.table.name] = step.table
            elif isinstance(step, AddColumn):
                table = out[step.table]
                out[step.table] = replace(table, columns=(*table.columns, step.column))
    return out


def registry(shared: Callable[[Migration, F | None], F], extra: dict[str, F]) -> list[F]:
    """A backend's ordered migration functions: ``shared(migration, extra)`` runs the
    migration's steps, then the backend's ``extra`` function of that name if it has one (a
    data migration written for it alone). Its ``__name__`` is the migration's name."""
    unknown = set(extra) - {m.name for m in MIGRATIONS}
    if unknown:
        raise TypeError(f"extra steps of unknown migrations: {', '.join(sorted(unknown))}")
    return [shared(m, extra.get(m.name)) for m in MIGRATIONS]
