"""How much the store grows for one tool call with a large argument (issue 29.7).

One session, one run: the fake model (Chat Completions, in this process) calls ``fs_write``
with a 300 KB ``content`` (random letters: neither JSON escaping nor PostgreSQL's TOAST
compression shrink it), sent in 30 argument deltas, then answers. Measured on a real store,
SQLite and (when ``initdb`` is installed) a throw-away PostgreSQL server, with
``persist_deltas`` on (the default):

- growth: the bytes the store took for the turn (SQLite: the database file and its WAL after
  a checkpoint; PostgreSQL: ``pg_total_relation_size`` of the project schema's tables);
- copies: in how many stored values (every column of every table, read back with SQL) the
  whole argument occurs, by table and column;
- argument bytes: the characters of the argument found in stored values, whole or as pieces
  (the argument deltas), divided by its length.

    .venv/bin/python benchmarks/store_growth.py [--size 300000] [--backend sqlite|postgresql]
"""

from __future__ import annotations

import argparse
import random
import sqlite3
import string
import sys
import tempfile
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from agi_jupyter.app import Agi
from agi_jupyter.testing import FakeLLMServer, FakeToolCall, Turn

sys.path.insert(0, str(Path(__file__).parent.parent))
from tests.postgres_server import PostgresServer, binaries

PIECE = 1000  # the argument is looked for as pieces of this many characters too


def values_sqlite(path: Path) -> Iterator[tuple[str, str, Any]]:
    conn = sqlite3.connect(path)
    try:
        tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")]
        for table in tables:
            cursor = conn.execute(f'SELECT * FROM "{table}"')
            names = [d[0] for d in cursor.description]
            for row in cursor:
                for name, value in zip(names, row, strict=True):
                    yield table, name, value
    finally:
        conn.close()


def size_sqlite(path: Path) -> int:
    conn = sqlite3.connect(path)
    try:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        conn.close()
    return sum(p.stat().st_size for p in path.parent.glob(path.name + "*"))


def values_postgres(url: str, schema: str) -> Iterator[tuple[str, str, Any]]:
    import psycopg

    with psycopg.connect(url) as conn:
        tables = [
            r[0]
            for r in conn.execute(
                "SELECT table_name FROM information_schema.tables WHERE table_schema = %s",
                [schema],
            )
        ]
        for table in tables:
            cursor = conn.execute(f'SELECT * FROM "{schema}"."{table}"')  # type: ignore[arg-type]
            names = [d.name for d in cursor.description or ()]
            for row in cursor:
                for name, value in zip(names, row, strict=True):
                    yield table, name, value


def size_postgres(url: str, schema: str) -> int:
    import psycopg

    with psycopg.connect(url) as conn:
        row = conn.execute(
            "SELECT COALESCE(SUM(pg_total_relation_size(c.oid)), 0) FROM pg_class c"
            " JOIN pg_namespace n ON n.oid = c.relnamespace"
            " WHERE n.nspname = %s AND c.relkind = 'r'",
            [schema],
        ).fetchone()
    return int(row[0]) if row else 0


def count(values: Iterator[tuple[str, str, Any]], argument: str) -> tuple[Counter[str], float]:
    """Whole copies of ``argument`` by ``table.column``, and its characters found in stored
    values (whole or in pieces of ``PIECE``) over its length."""
    pieces = [argument[i : i + PIECE] for i in range(0, len(argument) - PIECE + 1, PIECE)]
    copies: Counter[str] = Counter()
    found = 0
    for table, column, value in values:
        if isinstance(value, bytes | bytearray | memoryview):
            value = bytes(value).decode("utf-8", "replace")
        if not isinstance(value, str) or len(value) < PIECE:
            continue
        if argument in value:
            copies[f"{table}.{column}"] += value.count(argument)
        found += sum(value.count(p) for p in pieces) * PIECE
    return copies, found / len(argument)


def measure(agi: Agi, fake: FakeLLMServer, size: int, sizer: Any, reader: Any) -> None:
    rng = random.Random(29)
    argument = "".join(rng.choices(string.ascii_letters, k=size))
    session = agi.new_session(agent="general", model="openai-chat:gpt-4o-mini").id
    before = sizer()
    fake.enqueue(
        Turn(
            tool_calls=[
                FakeToolCall("fs_write", {"path": "big.txt", "content": argument}, chunks=30)
            ]
        ),
        Turn(text="written"),
    )
    result = agi.ask("write big.txt", session=session)
    assert result.run.status == "succeeded", result.run
    growth = sizer() - before
    copies, found = count(reader(), argument)
    print(f"  growth: {growth:,} bytes ({growth / size:.1f}x the argument)")
    where = ", ".join(f"{k} {n}" for k, n in sorted(copies.items()))
    print(f"  whole copies: {sum(copies.values())} ({where})")
    print(f"  argument bytes stored: {found:.1f}x")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=300_000)
    parser.add_argument("--backend", choices=("sqlite", "postgresql"), action="append")
    args = parser.parse_args(argv)
    backends = args.backend or ["sqlite", "postgresql"]
    fake = FakeLLMServer().start()
    try:
        env = {
            "HOME": tempfile.mkdtemp(),
            "OPENAI_API_KEY": "sk-bench",
            "OPENAI_BASE_URL": fake.openai_base_url,
            "AGI_REVIEW_MODE": "auto",
        }
        if "sqlite" in backends:
            with tempfile.TemporaryDirectory() as project, Agi(project, env=env) as agi:
                path = Path(agi.store_location)
                print(f"SQLite, {args.size:,}-character fs_write argument:")
                measure(
                    agi, fake, args.size, lambda: size_sqlite(path), lambda: values_sqlite(path)
                )
        if "postgresql" in backends:
            bin_dir = binaries()
            if bin_dir is None:
                print("PostgreSQL: not installed (apt-get install postgresql), skipped")
                return 0
            server = PostgresServer(bin_dir)
            server.start()
            try:
                url = server.url()
                with (
                    tempfile.TemporaryDirectory() as project,
                    Agi(project, env={**env, "AGI_DATABASE_URL": url}) as agi,
                ):
                    schema = agi.store.schema  # type: ignore[attr-defined]
                    print(f"PostgreSQL, {args.size:,}-character fs_write argument:")
                    measure(
                        agi,
                        fake,
                        args.size,
                        lambda: size_postgres(url, schema),
                        lambda: values_postgres(url, schema),
                    )
            finally:
                server.stop()
    finally:
        fake.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
