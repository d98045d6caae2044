"""sql.query (read-only store, read-write data database) and the tasks tool."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from agi_jupyter.store import Store, create_store
from tests.tools.conftest import Call, exists


@pytest.fixture
def store(project: Path, backend_env: dict[str, str]) -> Iterator[Store]:
    """The project's store on each backend: ``database='store'`` reads either."""
    url = backend_env.get("AGI_DATABASE_URL")
    with create_store(project, artifact_threshold=4096, database_url=url) as opened:
        yield opened


@pytest.fixture
def stored(store: Store) -> Store:
    store.create_session(title="first session")
    store.create_task("water the plants")
    return store


# --- sql.query -------------------------------------------------------------------------------


@pytest.mark.asyncio
async def test_store_is_readable(call: Call, stored: Store) -> None:
    outcome = await call(
        "sql.query",
        {
            "sql": "SELECT title FROM sessions WHERE title LIKE ?",
            "params": ["first%"],
            "database": "store",
        },
    )
    assert outcome.status == "completed", outcome.output
    assert json.loads(outcome.output) == [{"title": "first session"}]
    assert outcome.result["data"] == {
        "columns": ["title"],
        "rows": [{"title": "first session"}],
        "truncated": False,
        "dialect": stored.dialect,
    }


@pytest.mark.asyncio
@pytest.mark.parametrize(
    "sql",
    [
        "DELETE FROM sessions",
        "UPDATE tasks SET title = 'x'",
        "CREATE TABLE evil (x integer)",
        "PRAGMA query_only = 0",
    ],
)
async def test_store_writes_are_refused(call: Call, stored: Store, sql: str) -> None:
    outcome = await call("sql.query", {"sql": sql, "database": "store"})
    if sql.startswith("PRAGMA"):  # switching query_only off still cannot write: mode=ro
        outcome = await call("sql.query", {"sql": "DELETE FROM tasks", "database": "store"})
    assert outcome.status == "failed"
    assert "store database" in outcome.output
    assert "read-only" in outcome.output
    assert len(stored.list_sessions().items) == 1
    assert [t.title for t in stored.list_tasks()] == ["water the plants"]


@pytest.mark.asyncio
async def test_data_database_is_read_write_and_parameterized(call: Call, project: Path) -> None:
    created = await call("sql.query", {"sql": "CREATE TABLE notes (id INTEGER PRIMARY KEY, body)"})
    assert created.output == "done"
    assert exists(project / ".agi" / "data.sqlite")
    tricky = "Robert'); DROP TABLE notes;--"
    inserted = await call(
        "sql.query", {"sql": "INSERT INTO notes (body) VALUES (?), (?)", "params": [tricky, 2]}
    )
    assert inserted.output == "done: 2 row(s) changed"
    assert inserted.result["data"] == {"rowcount": 2, "lastrowid": 2}
    rows = await call("sql.query", {"sql": "SELECT body FROM notes ORDER BY id"})
    assert json.loads(rows.output) == [{"body": tricky}, {"body": 2}]


@pytest.mark.asyncio
async def test_rows_are_bounded_and_blobs_encoded(call: Call) -> None:
    await call("sql.query", {"sql": "CREATE TABLE n (x)"})
    await call(
        "sql.query",
        {
            "sql": "INSERT INTO n WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i+1 FROM c "
            "WHERE i < 50) SELECT i FROM c"
        },
    )
    limited = await call("sql.query", {"sql": "SELECT x FROM n", "max_rows": 10})
    assert len(limited.result["data"]["rows"]) == 10
    assert limited.result["data"]["truncated"] is True
    assert "only the first 10 rows" in limited.output
    blob = await call("sql.query", {"sql": "SELECT x'00ff' AS b"})
    assert blob.result["data"]["rows"] == [{"b": {"base64": "AP8="}}]


@pytest.mark.asyncio
@pytest.mark.parametrize(
    ("sql", "message"),
    [
        ("ATTACH DATABASE '.agi/agi.sqlite' AS s", "not allowed"),
        ("VACUUM INTO '/tmp/agi-vacuum-copy.db'", "not allowed"),
        ("SELECT 1; SELECT 2", "one statement at a time"),
        ("SELEC nonsense", "syntax error"),
        ("SELECT * FROM missing_table", "no such table"),
    ],
)
async def test_sql_errors_are_reported(call: Call, sql: str, message: str) -> None:
    outcome = await call("sql.query", {"sql": sql})
    assert outcome.status == "failed"
    assert outcome.output.startswith("data database: ")
    assert message in outcome.output
    assert not exists(Path("/tmp/agi-vacuum-copy.db"))


@pytest.mark.asyncio
async def test_read_only_agents_cannot_write_the_data_database(call: Call) -> None:
    await call("sql.query", {"sql": "CREATE TABLE t (x)"})
    outcome = await call("sql.query", {"sql": "INSERT INTO t VALUES (1)"}, read_only=True)
    assert outcome.status == "failed"
    assert "may only read" in outcome.output
    reading = await call("sql.query", {"sql": "SELECT count(*) AS n FROM t"}, read_only=True)
    assert json.loads(reading.output) == [{"n": 0}]


# --- tasks -----------------------------------------------------------------------------------


@pytest.mark.asyncio
async def test_task_lifecycle(call: Call, store: Store) -> None:
    created = await call(
        "tasks",
        {
            "action": "create",
            "title": "Write report",
            "details": "Q3",
            "due_at": "2030-01-02T09:00:00Z",
        },
    )
    assert created.status == "completed", created.output
    task = json.loads(created.output)["task"]
    assert (task["title"], task["status"], task["due_at"]) == (
        "Write report",
        "pending",
        "2030-01-02T09:00:00Z",
    )
    task_id = task["id"]
    got = await call("tasks", {"action": "get", "id": task_id})
    assert json.loads(got.output)["task"]["details"] == "Q3"
    updated = await call("tasks", {"action": "update", "id": task_id, "status": "in_progress"})
    assert json.loads(updated.output)["task"]["status"] == "in_progress"
    listed = await call("tasks", {"action": "list", "status": "in_progress"})
    assert [t["id"] for t in json.loads(listed.output)["tasks"]] == [task_id]
    done = await call("tasks", {"action": "complete", "id": task_id})
    assert json.loads(done.output)["task"]["status"] == "done"
    assert store.get_task(task_id).status == "done"
    deleted = await call("tasks", {"action": "delete", "id": task_id})
    assert json.loads(deleted.output) == {"deleted": task_id}
    assert json.loads((await call("tasks", {"action": "list"})).output) == {"tasks": []}


@pytest.mark.asyncio
@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"action": "create"}, "'title' is required"),
        ({"action": "get"}, "'id' is required for get"),
        ({"action": "get", "id": "tsk_missing"}, "no task with id 'tsk_missing'"),
        ({"action": "delete", "id": "tsk_missing"}, "no task with id 'tsk_missing'"),
        ({"action": "update", "id": "tsk_x"}, "update needs at least one of"),
        ({"action": "create", "title": "t", "due_at": "next week"}, "not an ISO 8601"),
        ({"action": "archive"}, "action: Input should be"),
        ({"action": "update", "id": "x", "status": "later"}, "status: Input should be"),
    ],
)
async def test_task_errors(call: Call, arguments: dict[str, str], message: str) -> None:
    outcome = await call("tasks", arguments)
    assert outcome.status == "failed"
    assert message in outcome.output


@pytest.mark.asyncio
async def test_read_only_agents_may_only_list_and_get(call: Call, store: Store) -> None:
    task = store.create_task("keep")
    listed = await call("tasks", {"action": "list"}, read_only=True)
    assert listed.ok
    refused = await call("tasks", {"action": "delete", "id": task.id}, read_only=True)
    assert refused.status == "failed"
    assert "may only read" in refused.output
    assert store.get_task(task.id).title == "keep"
