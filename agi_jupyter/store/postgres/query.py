"""Read-only SQL on a project's schema (``Store.query``, the ``sql.query`` tool).

Each query gets a connection of its own (not a pooled one, which later store calls reuse), with
``search_path`` set to the project's schema, ``default_transaction_read_only`` on and a
statement timeout, and is rolled back: whatever the statement is, it changes nothing and no
setting outlives it. ``?`` placeholders become psycopg's ``%s`` outside quotes and comments, so
the tool's calls read the same on both backends (PostgreSQL's jsonb ``?`` operator is then
spelled ``jsonb_exists(...)``). The schema is not a security boundary: the database role can
read other projects' schemas by name; separate databases or roles isolate teams.
"""

from __future__ import annotations

import datetime
import decimal
import re
from collections.abc import Sequence
from typing import Any

import psycopg

from agi_jupyter.errors import UsageError
from agi_jupyter.records import QueryResult
from agi_jupyter.store.postgres import database

STATEMENT_TIMEOUT_MS = 30_000

# A token that may hold a ``?`` that is not a placeholder, or a lone character.
_TOKENS = re.compile(
    r"""'(?:[^']|'')*'?"""  # 'string' (an unterminated one runs to the end)
    r"""|"(?:[^"]|"")*"?"""  # "identifier"
    r"|--[^\n]*"  # -- comment
    r"|/\*.*?(?:\*/|\Z)"  # /* comment */
    r"|(\$[A-Za-z_]*\$).*?(?:\1|\Z)"  # $tag$ dollar-quoted string $tag$
    r"|.",
    re.DOTALL,
)


def to_format(sql: str) -> str:
    """``sql`` with ``?`` placeholders as ``%s`` and every ``%`` doubled (psycopg's format)."""
    out: list[str] = []
    for match in _TOKENS.finditer(sql):
        token = match.group(0).replace("%", "%%")
        out.append("%s" if token == "?" else token)
    return "".join(out)


def _plain(value: Any) -> Any:
    """A value JSON (or the tool's base64 for bytes) can carry."""
    if value is None or isinstance(value, str | int | float | bool | bytes | list | dict):
        return value
    if isinstance(value, memoryview):
        return bytes(value)
    if isinstance(value, decimal.Decimal):
        return int(value) if value == value.to_integral_value() else float(value)
    if isinstance(value, datetime.date | datetime.time):
        return value.isoformat()
    return str(value)


def query(
    project: database.Project, sql: str, params: Sequence[Any], *, max_rows: int
) -> QueryResult:
    """One read-only statement in the project's schema (see the module docstring)."""
    if isinstance(max_rows, bool) or not isinstance(max_rows, int) or max_rows < 1:
        raise UsageError(f"max_rows must be a positive integer, got {max_rows!r}")
    info = project.query_conninfo(
        "-c default_transaction_read_only=on",
        f"-c statement_timeout={STATEMENT_TIMEOUT_MS}",
    )
    conn = database.connect(info)
    try:
        cursor = conn.execute(to_format(sql), list(params), prepare=False, binary=True)
        columns = [c.name for c in cursor.description or ()]
        rows = cursor.fetchmany(max_rows + 1) if columns else []
    except psycopg.Error as e:
        detail = str(e).strip().splitlines()
        raise UsageError(f"{type(e).__name__}: {detail[0] if detail else e}") from None
    finally:
        conn.rollback()
        conn.close()
    return QueryResult(
        columns=columns,
        rows=[tuple(_plain(v) for v in row) for row in rows[:max_rows]],
        truncated=len(rows) > max_rows,
    )
