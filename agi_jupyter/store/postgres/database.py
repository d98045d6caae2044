"""What every ``PostgresStore`` of a process shares: connection pools, project schemas, and the
LISTEN connection that wakes ticks.

Projects share one database, each in a schema of its own (``agi_<folder>_<hash>``, from the
project key), recorded in the registry table ``agi.projects`` (key -> schema). A store's pool
connects with ``search_path`` set to its schema, so its SQL names tables without a schema, as
SQLite's does. Creating a schema and migrating it happen under one advisory lock per database,
so replicas opening a new project at once cannot race; an up-to-date project is checked without
the lock. Stores of the same project in one process share one pool (reference-counted), and
every store of a database shares one listener thread (``LISTEN agi_work``; the payload is the
schema that has new work).

The password never appears in what is shown (``redacted``), logged or raised: it is passed to
libpq apart from the URL when it comes from the credentials file.
"""

from __future__ import annotations

import hashlib
import logging
import re
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import PurePosixPath

import psycopg
from psycopg.abc import Buffer
from psycopg.conninfo import conninfo_to_dict, make_conninfo
from psycopg.types.string import StrDumperUnknown
from psycopg_pool import ConnectionPool, PoolTimeout

from agi_jupyter.errors import ConfigError, StoreUnavailable
from agi_jupyter.records import utc_now
from agi_jupyter.store.postgres.migrations import MIGRATIONS_TABLE, PG_MIGRATIONS, migrate

log = logging.getLogger(__name__)

REGISTRY = "agi.projects"
CHANNEL = "agi_work"
POOL_MAX = 10  # connections per project and process: runtime thread + server executor threads
CONNECT_TIMEOUT = 10  # seconds: opening a project's pool, the listener's connection
# Seconds a request waits for a pooled connection (the pool reconnects in the background):
# while the database is down, requests fail with STORE_UNAVAILABLE (a 503 with Retry-After)
# after this long instead of hanging past a client's timeout.
POOL_WAIT = 5.0
_MIGRATION_LOCK = 0x61676900  # pg_advisory_xact_lock key: "agi\0"


def schema_name(key: str) -> str:
    """The schema of a project key: readable (the key's last path component) and unique (a
    hash of the whole key), within PostgreSQL's 63-byte identifier limit."""
    digest = hashlib.sha256(key.encode()).hexdigest()[:12]
    tail = re.sub(r"[^a-z0-9]+", "_", PurePosixPath(key).name.lower()).strip("_")[:30]
    return f"agi_{tail}_{digest}" if tail else f"agi_{digest}"


def conninfo(url: str, password: str | None) -> str:
    """The libpq connection string: ``url`` with ``password`` added if given."""
    if not url.startswith(("postgresql://", "postgres://")):
        raise ConfigError("database_url must be a postgresql:// URL")
    try:
        return make_conninfo(url, password=password) if password else make_conninfo(url)
    except psycopg.ProgrammingError as e:
        raise ConfigError(f"database_url is not a valid PostgreSQL URL: {e}") from None


def redacted(info: str) -> str:
    """``postgresql://user@host:port/dbname``: what may be shown (no password, no options)."""
    parts = conninfo_to_dict(info)
    user = f"{parts['user']}@" if parts.get("user") else ""
    host = str(parts.get("host") or "localhost")
    port = f":{parts['port']}" if parts.get("port") else ""
    return f"postgresql://{user}{host}{port}/{parts.get('dbname') or ''}"


def connect(info: str, **kwargs: object) -> psycopg.Connection[tuple[object, ...]]:
    """A direct connection, failing with ``StoreUnavailable`` (never showing the password)."""
    try:
        return psycopg.connect(info, connect_timeout=CONNECT_TIMEOUT, **kwargs)  # type: ignore[arg-type]
    except psycopg.OperationalError as e:
        message = str(e).strip().splitlines()[-1] if str(e).strip() else type(e).__name__
        raise StoreUnavailable(f"cannot connect to {redacted(info)}: {message}") from None


def ensure_schema(info: str, key: str) -> str:
    """The project's schema, created and migrated if needed (see the module docstring)."""
    with connect(info, autocommit=True) as conn:
        schema = _registered(conn, key)
        if schema is not None and not _pending(conn, schema):
            return schema
        with conn.transaction():
            conn.execute("SELECT pg_advisory_xact_lock(%s)", [_MIGRATION_LOCK])
            conn.execute("CREATE SCHEMA IF NOT EXISTS agi")
            conn.execute(
                f"CREATE TABLE IF NOT EXISTS {REGISTRY} (key text PRIMARY KEY,"
                " schema text NOT NULL UNIQUE, created_at text NOT NULL)"
            )
            schema = _registered(conn, key)
            if schema is None:
                schema = schema_name(key)
                conn.execute(
                    f"INSERT INTO {REGISTRY} (key, schema, created_at) VALUES (%s, %s, %s)",
                    [key, schema, utc_now()],
                )
            conn.execute(f'CREATE SCHEMA IF NOT EXISTS "{schema}"')
            conn.execute(f'SET LOCAL search_path TO "{schema}"')
            migrate(conn)
        return schema


def _registered(conn: psycopg.Connection[tuple[object, ...]], key: str) -> str | None:
    if conn.execute("SELECT to_regclass(%s)", [REGISTRY]).fetchone() == (None,):
        return None
    row = conn.execute(f"SELECT schema FROM {REGISTRY} WHERE key = %s", [key]).fetchone()
    return None if row is None else str(row[0])


def _pending(conn: psycopg.Connection[tuple[object, ...]], schema: str) -> bool:
    table = f'"{schema}".{MIGRATIONS_TABLE}'
    if conn.execute("SELECT to_regclass(%s)", [table]).fetchone() == (None,):
        return True
    done = {row[0] for row in conn.execute(f"SELECT name FROM {table}")}
    return any(fn.__name__ not in done for fn in PG_MIGRATIONS)


# --- shared pools -----------------------------------------------------------------------------


@dataclass
class Project:
    """One project's schema in one database, as this process uses it."""

    info: str
    key: str
    schema: str
    pool: ConnectionPool[psycopg.Connection[tuple[object, ...]]]
    users: int = 0

    @property
    def location(self) -> str:
        return f"{redacted(self.info)} (schema {self.schema})"

    def query_conninfo(self, *options: str) -> str:
        """A connection string for a one-off connection into this schema."""
        return make_conninfo(self.info, options=" ".join([self.search_path, *options]))

    @property
    def search_path(self) -> str:
        return f"-c search_path={self.schema}"


_lock = threading.Lock()
_projects: dict[tuple[str, str], Project] = {}


def open_project(info: str, key: str) -> Project:
    """The shared ``Project`` of ``key`` in the database of ``info`` (one more user)."""
    with _lock:
        project = _projects.get((info, key))
        if project is None:
            schema = ensure_schema(info, key)
            project = Project(info=info, key=key, schema=schema, pool=_pool(info, schema))
            _projects[(info, key)] = project
        project.users += 1
        return project


def release(project: Project) -> None:
    """One user fewer; the last one closes the pool."""
    with _lock:
        project.users -= 1
        if project.users > 0:
            return
        _projects.pop((project.info, project.key), None)
    project.pool.close()


class _NulFreeStr(StrDumperUnknown):
    """A string parameter as text, NUL as U+FFFD: PostgreSQL's text cannot hold NUL, which
    SQLite stores, so a title, a model name or a prompt's preview holding one would be an
    error on one backend only (an API request valid on SQLite refused on PostgreSQL). JSON
    documents keep NUL escaped (``\\u0000``), so message parts and metadata lose nothing."""

    def dump(self, obj: str) -> Buffer | None:
        return super().dump(obj.replace("\x00", "\ufffd") if "\x00" in obj else obj)


def _configure(conn: psycopg.Connection[tuple[object, ...]]) -> None:
    conn.adapters.register_dumper(str, _NulFreeStr)


def _pool(info: str, schema: str) -> ConnectionPool[psycopg.Connection[tuple[object, ...]]]:
    pool: ConnectionPool[psycopg.Connection[tuple[object, ...]]] = ConnectionPool(
        info,
        kwargs={
            "autocommit": True,
            "options": f"-c search_path={schema}",
            "connect_timeout": int(POOL_WAIT),
        },
        min_size=1,
        max_size=POOL_MAX,
        # One worker (it opens connections in the background; the default is 3): with its
        # scheduler, an open project costs two threads (a server bounds its open projects).
        num_workers=1,
        configure=_configure,
        open=False,
        name=f"agi-{schema}",
        timeout=POOL_WAIT,
    )
    try:
        pool.open(wait=True, timeout=POOL_WAIT)
    except PoolTimeout:
        pool.close()
        raise StoreUnavailable(f"cannot connect to {redacted(info)}") from None
    return pool


# --- wake-ups -----------------------------------------------------------------------------------


@dataclass
class _Listener:
    """A thread holding ``LISTEN agi_work`` on its own connection, calling the callbacks
    registered for the schema named by each notification. It reconnects after errors (work
    queued meanwhile is found by the periodic tick) and ends when its last callback goes."""

    info: str
    callbacks: dict[str, list[Callable[[], None]]] = field(default_factory=dict)
    stopped: threading.Event = field(default_factory=threading.Event)

    def start(self) -> None:
        threading.Thread(target=self._run, name="agi-pg-listen", daemon=True).start()

    def dispatch(self, schema: str) -> None:
        with _lock:
            callbacks = list(self.callbacks.get(schema, ()))
        for callback in callbacks:
            try:
                callback()
            except Exception:
                log.exception("agi: a wake-up callback failed")

    def _run(self) -> None:
        while not self.stopped.is_set():
            try:
                with psycopg.connect(
                    self.info, autocommit=True, connect_timeout=CONNECT_TIMEOUT
                ) as conn:
                    conn.execute(f"LISTEN {CHANNEL}")
                    while not self.stopped.is_set():
                        for note in conn.notifies(timeout=0.5):
                            self.dispatch(note.payload)
            except psycopg.Error as e:
                if self.stopped.is_set():
                    return  # stopped while the connection went away: nothing to report
                log.warning("agi: listening for new work failed (%s); retrying", _first_line(e))
                self.stopped.wait(1.0)


def _first_line(error: Exception) -> str:
    lines = str(error).strip().splitlines()
    return lines[0] if lines else type(error).__name__


_listeners: dict[str, _Listener] = {}


def listen(info: str, schema: str, callback: Callable[[], None]) -> Callable[[], None]:
    """Call ``callback`` whenever work is announced for ``schema``; returns the unsubscribe."""
    with _lock:
        listener = _listeners.get(info)
        if listener is None:
            listener = _listeners[info] = _Listener(info)
            listener.start()
        listener.callbacks.setdefault(schema, []).append(callback)

    def unsubscribe() -> None:
        with _lock:
            callbacks = listener.callbacks.get(schema, [])
            if callback in callbacks:
                callbacks.remove(callback)
            if not callbacks:
                listener.callbacks.pop(schema, None)
            if not listener.callbacks and _listeners.get(info) is listener:
                del _listeners[info]
                listener.stopped.set()

    return unsubscribe
