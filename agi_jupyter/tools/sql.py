"""``sql.query``: parameterized SQL on the store (read-only) or the agent's own data database.

``database="store"`` opens ``.agi/agi.sqlite`` through a separate ``mode=ro`` connection with
``PRAGMA query_only``, so the agent can inspect sessions, runs and tool calls but never change
them. ``database="data"`` is ``.agi/data.sqlite`` (created on demand), read-write unless the
agent is read-only. One statement per call; values always travel as parameters. ATTACH is
refused, so a query cannot reach other database files.
"""

from __future__ import annotations

import asyncio
import base64
import json
import sqlite3
from pathlib import Path
from typing import Any, Literal
from urllib.parse import quote

from pydantic import Field

from agi_jupyter.config import PROJECT_DIRNAME
from agi_jupyter.errors import ToolError
from agi_jupyter.records import JSON
from agi_jupyter.tools.base import Tool, ToolArgs, ToolContext, ToolResult

DATA_FILENAME = "data.sqlite"
BUSY_TIMEOUT_MS = 10_000

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


def _deny_attach(action: int, *_: object) -> int:
    if action in (sqlite3.SQLITE_ATTACH, sqlite3.SQLITE_DETACH):
        return sqlite3.SQLITE_DENY
    return sqlite3.SQLITE_OK


def connect(path: Path, *, read_only: bool) -> sqlite3.Connection:
    """A connection with a busy timeout; read-only ones use ``mode=ro`` and ``query_only``."""
    if read_only:
        if not path.exists():
            raise ToolError(f"the database {path.name} does not exist yet")
        uri = f"file:{quote(str(path))}?mode=ro"
        conn = sqlite3.connect(uri, uri=True, isolation_level=None, check_same_thread=False)
        conn.execute("PRAGMA query_only=1")
    else:
        path.parent.mkdir(parents=True, exist_ok=True)
        conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    conn.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
    conn.set_authorizer(_deny_attach)
    return conn


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
        columns = [d[0] for d in cursor.description]
        rows = cursor.fetchmany(args.max_rows + 1)
        truncated = len(rows) > args.max_rows
        return {
            "columns": columns,
            "rows": [
                {c: _json_value(v) for c, v in zip(columns, row, strict=True)}
                for row in rows[: args.max_rows]
            ],
            "truncated": truncated,
        }
    except sqlite3.Error as e:
        raise ToolError(_explain(e, label, read_only)) from None
    finally:
        conn.close()


def _explain(error: sqlite3.Error, label: str, read_only: bool) -> str:
    text = str(error)
    if read_only and ("readonly" in text or "read-only" in text or "query_only" in text):
        hint = (
            "the store is read-only; write to your own tables with database='data'"
            if label == "store"
            else "this agent may only read"
        )
        return f"{label} database: {text} ({hint})"
    if "authoriz" in text:
        return f"{label} database: {text} (ATTACH and VACUUM INTO are not allowed)"
    return f"{label} database: {type(error).__name__}: {text}"


class SqlQuery(Tool[SqlQueryArgs]):
    name = "sql.query"
    description = (
        "Run one parameterized SQL statement (SQLite). database='data' is your own read-write "
        "database for tables you create; database='store' reads the agent store (sessions, "
        "messages, message_parts, runs, tool_calls, artifacts, tasks, capabilities) and cannot "
        "change it. Returns rows as JSON, or the row count of a change."
    )
    parameters = SqlQueryArgs
    read_only = True  # offered to read-only agents: then the data database is read-only too

    async def execute(self, args: SqlQueryArgs, ctx: ToolContext) -> ToolResult:
        agi_dir = ctx.project / PROJECT_DIRNAME
        if args.database == "store":
            path, read_only = ctx.store.path, True
        else:
            path, read_only = agi_dir / DATA_FILENAME, ctx.read_only
        result = await asyncio.to_thread(
            run_query, path, args, read_only=read_only, label=args.database
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
