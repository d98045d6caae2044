"""``sql.query``: parameterized SQL on the store (read-only) or the agent's own data database.

``database="store"`` goes through ``Store.query``: one read-only statement on the project's
store, in its dialect (SQLite's ``.agi/agi.sqlite`` opened ``mode=ro``, or the project's schema
of a PostgreSQL store in a read-only transaction), so the agent can inspect sessions, runs and
tool calls but never change them. ``database="data"`` is ``.agi/data.sqlite`` (created on
demand), read-write unless the agent is read-only. One statement per call; values always travel
as parameters. ATTACH is refused, so a query cannot reach other database files.
"""

from __future__ import annotations

import asyncio
import base64
import json
import sqlite3
from pathlib import Path
from typing import Any, Literal

from pydantic import Field

from agi_jupyter.config import PROJECT_DIRNAME
from agi_jupyter.errors import ToolError, UsageError
from agi_jupyter.records import JSON, QueryResult
from agi_jupyter.store import Store
from agi_jupyter.store.readonly import connect as _connect
from agi_jupyter.store.readonly import fetch
from agi_jupyter.tools.base import Tool, ToolArgs, ToolContext, ToolResult

DATA_FILENAME = "data.sqlite"

Scalar = str | int | float | bool | None


class SqlQueryArgs(ToolArgs):
    sql: str = Field(description="One SQL statement; use ? placeholders for values.")
    params: list[Scalar] = Field(
        default_factory=list, description="Values for the ? placeholders, in order."
    )
    database: Literal["data", "store"] = Field(
        "data",
        description=(
            "'data': your own read-write database (.agi/data.sqlite); "
            "'store': the agent store (sessions, messages, runs, tool_calls, ...), read-only."
        ),
    )
    max_rows: int = Field(200, ge=1, le=5000, description="Maximum number of rows returned.")


def connect(path: Path, *, read_only: bool) -> sqlite3.Connection:
    """A connection to a SQLite file (read-only: ``mode=ro`` and ``query_only``)."""
    try:
        return _connect(path, read_only=read_only)
    except UsageError as e:
        raise ToolError(e.message) from None


def _json_value(value: Any) -> Any:
    if isinstance(value, bytes):
        return {"base64": base64.b64encode(value).decode("ascii")}
    return value


def run_query(path: Path, args: SqlQueryArgs, *, read_only: bool, label: str) -> JSON:
    """Run one statement; rows (bounded) for queries, ``rowcount`` for changes."""
    conn = connect(path, read_only=read_only)
    try:
        cursor = conn.execute(args.sql, args.params)
        if cursor.description is None:
            return {"rowcount": cursor.rowcount, "lastrowid": cursor.lastrowid}
        return _rows(fetch(cursor, args.max_rows))
    except sqlite3.Error as e:
        raise ToolError(_explain(f"{type(e).__name__}: {e}", label, read_only)) from None
    finally:
        conn.close()


def query_store(store: Store, args: SqlQueryArgs) -> JSON:
    """One read-only statement on the store, in its dialect."""
    try:
        result = store.query(args.sql, args.params, max_rows=args.max_rows)
    except UsageError as e:
        raise ToolError(_explain(e.message, "store", True)) from None
    return _rows(result)


def _rows(result: QueryResult) -> JSON:
    return {
        "columns": result.columns,
        "rows": [
            {c: _json_value(v) for c, v in zip(result.columns, row, strict=True)}
            for row in result.rows
        ],
        "truncated": result.truncated,
    }


def _explain(text: str, label: str, read_only: bool) -> str:
    if read_only and ("readonly" in text or "read-only" in text or "query_only" in text):
        hint = (
            "the store is read-only; write to your own tables with database='data'"
            if label == "store"
            else "this agent may only read"
        )
        return f"{label} database: {text} ({hint})"
    if "authoriz" in text:
        return f"{label} database: {text} (ATTACH and VACUUM INTO are not allowed)"
    return f"{label} database: {text}"


class SqlQuery(Tool[SqlQueryArgs]):
    name = "sql.query"
    # The result's "dialect" says which database the store is. (The example notebooks' stored
    # outputs show this text's start and, through the fake model, its number of words.)
    description = (
        "Run one parameterized SQL statement (SQLite). database='data' is your own read-write "
        "database for tables you create; database='store' reads the agent store (sessions, "
        "messages, message_parts, runs, tool_calls, artifacts, tasks, capabilities), read-only, "
        "in PostgreSQL's dialect when shared. Returns rows as JSON, or a change's row count."
    )
    parameters = SqlQueryArgs
    read_only = True  # offered to read-only agents: then the data database is read-only too

    async def execute(self, args: SqlQueryArgs, ctx: ToolContext) -> ToolResult:
        if args.database == "store":
            result = await asyncio.to_thread(query_store, ctx.store, args)
            result["dialect"] = ctx.store.dialect
        else:
            path = ctx.project / PROJECT_DIRNAME / DATA_FILENAME
            result = await asyncio.to_thread(
                run_query, path, args, read_only=ctx.read_only, label="data"
            )
        return ToolResult(output=_render(result), data=result)


def _render(result: JSON) -> str:
    if "rows" not in result:
        count = result["rowcount"]
        return f"done: {count} row(s) changed" if count >= 0 else "done"
    text = json.dumps(result["rows"], ensure_ascii=False, default=str)
    if result["truncated"]:
        text += f"\n[only the first {len(result['rows'])} rows are shown; use LIMIT/OFFSET]"
    return text
