"""How close ``Agi.history`` comes to the bare SELECT of the same rows (issue 20, item 3).

Builds a throwaway SQLite project with one session of N plain-text messages (default 10,000,
user and assistant alternating, one text part each: a plain chat), then times, interleaved in
each round so that the machine's drift hits every path alike:

- ``bare``: the SELECT ``list_messages`` makes for these rows (the same columns, the same
  order), rows fetched and dropped, nothing decoded: the floor;
- ``bare'``: the same SELECT again, so ``bare'/bare`` is the A/A noise of this run;
- ``history(view="full")`` and ``history(view="simple")``: the records a caller gets, whose
  ``meta`` and ``parts`` are decoded when first read (``records.Message.__getattr__``);

and, with ``--more``, for information (not the goal): ``iter``, the same SELECT with its rows
iterated and each dropped at once (never all held, so the rows cost less than a list of them);
``full+parts`` / ``simple+texts``, a view then every message's ``meta`` and parts (text parts)
read: what a caller that reads everything pays for the deferred decoding; ``eager full`` /
``eager simple`` and ``eager+parts``: the same with ``lazy=False`` (decoded while read, in
batches).

Each timed call includes freeing its result. The medians over the rounds (round 0 warms up and
is dropped) and the ratios to ``bare`` are printed; the goal is <= 1.5x for both views.

``--postgres``: the same on a throwaway PostgreSQL server (tests/postgres_server.py) through
``PostgresStore``; ``bare`` is then its SELECT through the store's connection (psycopg). The
CPU times are this process's (the client's), not the server's.

    .venv/bin/python benchmarks/history_floor.py [--messages 10000] [--repeat 15] [--more]
    .venv/bin/python benchmarks/history_floor.py --postgres
"""

from __future__ import annotations

import argparse
import contextlib
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # for tests.*

from agi_jupyter.app import Agi
from agi_jupyter.records import Message, Role, TextPart
from agi_jupyter.store import SqliteStore, Store
from agi_jupyter.store.postgres import PostgresStore
from agi_jupyter.store.rows import MESSAGE_SELECT
from tests.postgres_server import PostgresServer, binaries


def build(store: Store, count: int) -> str:
    session = store.create_session(title="plain chat")
    for i in range(count):
        role: Role = "user" if i % 2 == 0 else "assistant"
        text = f"Message {i}: " + ("a plain sentence of a chat, " * 4)
        meta = {"provider": "fake", "model": "echo"} if role == "assistant" else None
        store.add_message(session.id, role, [TextPart(text=text)], meta=meta)
    return session.id


def bare_fetch(store: SqliteStore, session_id: str) -> None:
    """The one SELECT of ``list_messages``, rows fetched and dropped."""
    with store._read() as conn:
        assert conn is not None
        conn.execute(
            f"SELECT {MESSAGE_SELECT} FROM messages WHERE session_id = ?"
            " ORDER BY created_at, rowid LIMIT -1",
            [session_id],
        ).fetchall()


def bare_fetch_pg(store: PostgresStore, session_id: str) -> None:
    """The SELECT of ``PostgresStore.list_messages``, rows fetched and dropped."""
    with store._read() as conn:
        conn.execute(
            f"SELECT {MESSAGE_SELECT} FROM messages WHERE session_id = %s"
            " ORDER BY created_at, pos LIMIT %s",
            [session_id, None],
        ).fetchall()


@contextlib.contextmanager
def postgres() -> Iterator[dict[str, str]]:
    """A throwaway PostgreSQL server with an empty database: the environment that selects it."""
    bin_dir = binaries()
    if bin_dir is None:
        raise SystemExit("PostgreSQL is not installed (apt-get install postgresql)")
    server = PostgresServer(bin_dir)
    server.start()
    try:
        server.admin("CREATE DATABASE bench")
        yield {"AGI_DATABASE_URL": server.socket_url("bench")}
    finally:
        server.stop()


def database_env(use_postgres: bool) -> contextlib.AbstractContextManager[dict[str, str]]:
    """The environment that selects the backend: PostgreSQL (``postgres``) or SQLite."""
    return postgres() if use_postgres else contextlib.nullcontext({})


def iter_fetch(store: SqliteStore, session_id: str) -> None:
    """The same SELECT, its rows iterated and dropped one at a time."""
    with store._read() as conn:
        assert conn is not None
        for _ in conn.execute(
            f"SELECT {MESSAGE_SELECT} FROM messages WHERE session_id = ?"
            " ORDER BY created_at, rowid LIMIT -1",
            [session_id],
        ):
            pass


def read_all(messages: list[Message]) -> list[Message]:
    """Read every message's meta and parts (decoding them)."""
    for m in messages:
        m.meta  # noqa: B018 (read for its decoding)
        m.parts  # noqa: B018
    return messages


def timed(fn: Callable[[], object]) -> float:
    start = time.process_time()
    fn()  # the result is dropped inside the timing
    return time.process_time() - start


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--messages", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=15)
    parser.add_argument("--more", action="store_true", help="also the paths for information")
    parser.add_argument("--postgres", action="store_true", help="on PostgreSQL, not SQLite")
    args = parser.parse_args(argv)
    with (
        database_env(args.postgres) as database,
        tempfile.TemporaryDirectory() as home,
        tempfile.TemporaryDirectory() as project,
        Agi(project, env={"HOME": home, **database}) as agi,
    ):
        store = agi.store
        session_id = build(store, args.messages)
        assert len(agi.history(session_id, view="simple")) == args.messages
        bare: Callable[[], object]
        if isinstance(store, PostgresStore):
            pg_store = store
            bare = lambda: bare_fetch_pg(pg_store, session_id)  # noqa: E731
        else:
            assert isinstance(store, SqliteStore)
            sqlite_store = store
            bare = lambda: bare_fetch(sqlite_store, session_id)  # noqa: E731
        paths: dict[str, Callable[[], object]] = {
            "bare": bare,
            "bare'": bare,
            "full": lambda: agi.history(session_id, view="full"),
            "simple": lambda: agi.history(session_id, view="simple"),
        }
        more: dict[str, Callable[[], object]] = {
            "iter": lambda: iter_fetch(sqlite_store, session_id),
            "full+parts": lambda: read_all(agi.history(session_id, view="full")),
            "simple+texts": lambda: read_all(agi.history(session_id, view="simple")),
            "eager full": lambda: agi.history(session_id, view="full", lazy=False),
            "eager simple": lambda: agi.history(session_id, view="simple", lazy=False),
            "eager+parts": lambda: read_all(agi.history(session_id, view="full", lazy=False)),
        }
        if args.postgres:
            del more["iter"]  # SQLite's
        if args.more:
            paths.update(more)
        cpu: dict[str, list[float]] = {name: [] for name in paths}
        for round_ in range(args.repeat + 1):
            for name, fn in paths.items():
                spent = timed(fn)
                if round_:
                    cpu[name].append(spent)
        floor = statistics.median(cpu["bare"])
        backend = "PostgreSQL (client CPU)" if args.postgres else "SQLite"
        print(
            f"{args.messages:,} plain-text messages, {backend}, {args.repeat} rounds, CPU medians:"
        )
        for name, values in cpu.items():
            median = statistics.median(values)
            print(f"  {name:<12} {median * 1000:7.1f} ms  {median / floor:5.2f}x bare")
    return 0


if __name__ == "__main__":
    sys.exit(main())
