"""Each migration against an in-memory database: what it creates, re-runs, and the registry."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest
from sqlite_utils import Database

from agi_jupyter.records import Run, Session
from agi_jupyter.store import MIGRATIONS, migrate
from agi_jupyter.store.compactions import COLUMNS as COMPACTION_COLUMNS
from agi_jupyter.store.migrations import applied_names, pending
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

BY_NAME: dict[str, Callable[[Database], None]] = {fn.__name__: fn for fn in MIGRATIONS}

# What each migration adds: table -> columns (every table backs a record, column for field).
EXPECTED: dict[str, dict[str, set[str]]] = {
    "m001_initial": {
        # budget added by m015, cached_input_tokens by m017
        "sessions": set(SESSIONS.columns) - {"budget", "cached_input_tokens"},
        "messages": set(MESSAGES.columns),
        "message_parts": {"id", "message_id", "idx", "type", "content"},
    },
    "m002_runs": {
        "runs": set(RUNS.columns) - {"epoch", "agent"},  # added by m007 and m013
        "run_events": set(RUN_EVENTS.columns),
        "tool_calls": set(TOOL_CALLS.columns) - {"approval", "executed_by"},  # m014, m021 add them
    },
    "m003_artifacts_webhooks_tasks_capabilities": {
        "artifacts": {*ARTIFACTS.columns, "content"},
        "webhook_events": set(WEBHOOK_EVENTS.columns) - {"delivery_id"},  # m009 adds it
        "tasks": set(TASKS.columns),
        "capabilities": set(CAPABILITIES.columns),
    },
    "m008_snapshots_and_changes": {
        "blobs": {"sha256", "size", "data", "created_at"},
        "changes": set(CHANGES.columns),
        "notebook_replies": {"request_id", "payload", "created_at"},
    },
    "m018_compactions": {"compactions": set(COMPACTION_COLUMNS)},
}

REQUIRED_INDEXES = [  # (table, columns, unique)
    ("runs", ["status", "next_attempt_at"], False),
    ("messages", ["session_id", "created_at"], False),
    ("run_events", ["run_id", "seq"], True),
    ("tool_calls", ["run_id", "tool_call_id"], True),
    ("runs", ["provider_response_id"], True),
    ("webhook_events", ["event_id"], True),
    ("capabilities", ["name"], True),
    ("runs", ["session_id", "status"], False),
    ("changes", ["run_id"], False),
    ("changes", ["path"], False),
]


@pytest.fixture
def db() -> Iterator[Database]:
    database = Database(memory=True)
    yield database
    database.close()


def columns(db: Database, table: str) -> set[str]:
    return set(db.table(table).columns_dict)


def test_migrations_are_numbered_in_order() -> None:
    names = [fn.__name__ for fn in MIGRATIONS]
    assert names == [
        "m001_initial",
        "m002_runs",
        "m003_artifacts_webhooks_tasks_capabilities",
        "m004_indexes",
        "m005_messages_parts_column",
        "m006_runs_request_hash_index",
        "m007_run_leases",
        "m008_snapshots_and_changes",
        "m009_webhook_delivery_id",
        "m013_runs_agent",
        "m014_tool_call_approvals",
        "m015_sessions_budget",
        "m016_notebook_budgets",
        "m017_sessions_cached_input_tokens",
        "m018_compactions",
        "m019_completion_usage",
        "m020_executions",
        "m021_tool_calls_executed_by",
        "m022_blob_refs",
    ]
    assert len(set(names)) == len(names)


@pytest.mark.parametrize("position", range(len(MIGRATIONS)))
def test_each_migration_creates_its_schema_and_reruns_harmlessly(
    db: Database, position: int
) -> None:
    for fn in MIGRATIONS[:position]:
        fn(db)
    fn = MIGRATIONS[position]
    before = set(db.table_names())
    fn(db)
    for table, expected in EXPECTED.get(fn.__name__, {}).items():
        assert table not in before
        assert columns(db, table) == expected
    schema = db.schema
    fn(db)  # idempotent on its own
    assert db.schema == schema


def test_migrate_applies_all_once_and_records_them(db: Database) -> None:
    applied = migrate(db)
    assert applied == [fn.__name__ for fn in MIGRATIONS]
    assert applied_names(db) == set(applied)
    assert pending(db) == []
    rows = list(db.query("SELECT name, applied_at FROM _migrations ORDER BY name"))
    assert all(r["applied_at"].endswith("Z") for r in rows)
    schema = db.schema
    assert migrate(db) == []
    assert db.schema == schema
    assert not db.conn.in_transaction


def test_migrate_upgrades_an_older_database_keeping_rows(db: Database) -> None:
    BY_NAME["m001_initial"](db)
    db.table("_migrations").create({"name": str, "applied_at": str}, pk="name")
    db.table("_migrations").insert({"name": "m001_initial", "applied_at": "x"})
    db.table("sessions").insert(
        {
            "id": "ses_1",
            "agent": "general",
            "sdk": "native",
            "queue_mode": "queue",
            "created_at": "t",
            "updated_at": "t",
        }
    )
    assert pending(db) == [fn.__name__ for fn in MIGRATIONS[1:]]
    assert migrate(db) == [fn.__name__ for fn in MIGRATIONS[1:]]
    assert db.table("sessions").count == 1
    assert db.table("sessions").get("ses_1")["message_count"] == 0


def test_migrate_inside_an_open_transaction_leaves_commit_to_the_caller(db: Database) -> None:
    db.conn.execute("BEGIN IMMEDIATE")
    migrate(db)
    assert db.conn.in_transaction
    db.conn.rollback()
    assert "sessions" not in db.table_names()


def test_required_indexes_exist(db: Database) -> None:
    migrate(db)
    for table, cols, unique in REQUIRED_INDEXES:
        found = [i for i in db.table(table).indexes if i.columns == cols]
        assert found, (table, cols)
        assert bool(found[0].unique) == unique, (table, cols)


def test_every_foreign_key_leads_an_index(db: Database) -> None:
    migrate(db)
    references = {  # declared foreign keys, plus id references left undeclared on purpose
        ("messages", "run_id"),
        ("runs", "input_message_id"),
        ("runs", "replayed_from"),
        ("artifacts", "message_part_id"),
    }
    for name in db.table_names():
        table = db.table(name)
        references |= {(name, fk.column) for fk in table.foreign_keys}
    assert len(references) > 10
    for name, column in sorted(references):
        leading = {index.columns[0] for index in db.table(name).indexes}
        assert column in leading, f"{name}.{column} has no index"


def test_unique_constraints_hold(db: Database) -> None:
    migrate(db)
    event = {"run_id": "run_1", "seq": 1, "type": "x", "created_at": "t"}
    db.table("run_events").insert({"id": "evt_1", **event})
    with pytest.raises(Exception, match="UNIQUE"):
        db.table("run_events").insert({"id": "evt_2", **event})
    runs = db.table("runs")
    base = {
        "session_id": "s",
        "type": "agent",
        "execution_mode": "background",
        "status": "queued",
        "created_at": "t",
        "updated_at": "t",
    }
    runs.insert({"id": "run_a", **base})  # NULL response ids do not collide
    runs.insert({"id": "run_b", **base})
    runs.insert({"id": "run_c", **base, "provider_response_id": "resp_1"})
    with pytest.raises(Exception, match="UNIQUE"):
        runs.insert({"id": "run_d", **base, "provider_response_id": "resp_1"})


def test_m007_gives_existing_runs_epoch_zero(db: Database) -> None:
    for fn in MIGRATIONS[: [f.__name__ for f in MIGRATIONS].index("m007_run_leases")]:
        fn(db)
    db.execute(
        "INSERT INTO sessions (id, agent, sdk, queue_mode, created_at, updated_at)"
        " VALUES ('ses_1', 'general', 'native', 'queue', 'x', 'x')"
    )
    db.execute(
        "INSERT INTO runs (id, session_id, type, execution_mode, status, version, created_at,"
        " updated_at) VALUES ('run_1', 'ses_1', 'agent', 'background', 'running', 3, 'x', 'x')"
    )
    BY_NAME["m007_run_leases"](db)
    assert db.execute("SELECT epoch FROM runs WHERE id = 'run_1'").fetchone() == (0,)
    assert "epoch" in columns(db, "runs")


def test_m013_gives_runs_their_own_agent(db: Database) -> None:
    for fn in MIGRATIONS[: [f.__name__ for f in MIGRATIONS].index("m013_runs_agent")]:
        fn(db)
    row = RUNS.to_row(Run(id="run_1", session_id="ses_1", status="succeeded"))
    db.table("runs").insert({k: v for k, v in row.items() if k != "agent"})
    BY_NAME["m013_runs_agent"](db)
    assert columns(db, "runs") == set(RUNS.columns)
    assert db.table("runs").get("run_1")["agent"] is None


def test_m015_gives_sessions_a_budget_column(db: Database) -> None:
    for fn in MIGRATIONS[: [f.__name__ for f in MIGRATIONS].index("m015_sessions_budget")]:
        fn(db)
    row = SESSIONS.to_row(Session(id="ses_1"))
    later = {"budget", "cached_input_tokens"}  # m015's column, and m017's
    db.table("sessions").insert({k: v for k, v in row.items() if k not in later})
    BY_NAME["m015_sessions_budget"](db)
    assert columns(db, "sessions") == set(SESSIONS.columns) - {"cached_input_tokens"}
    assert db.table("sessions").get("ses_1")["budget"] is None
