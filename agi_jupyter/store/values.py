"""Large strings of JSON columns, stored once.

One tool call's arguments reach the store several times: ``tool_calls.args``, the assistant
message's ``messages.parts`` and its ``message_parts`` row, the payloads of the
``tool.call.arguments.done``, ``approval.requested`` and ``message.completed`` events. Each of
these JSON texts is written with ``rows.dumps``, so a given string is the same literal in all of
them. A literal of at least ``LARGE_VALUE`` characters (as written: escapes counted) is kept
once, in the content-addressed ``blobs`` table (its text as written, UTF-8, under its sha256),
and the column holds the reference ``"\\/agi-blob:<sha256>"`` in its place. ``rows.dumps``
(like orjson) never writes the escape ``\\/``, so no stored string can be mistaken for a
reference, whatever it contains. Reading puts the literal back into the JSON text before it is
decoded (``expand``): every reader of these columns gets exactly the text that was written.

``blob_refs`` names the sessions that refer to a blob (one row per blob and session, its id
``<sha256>:<session_id>``).
``Sessions.delete_session`` deletes the session's rows, then the blobs that neither a change
(undo snapshots) nor another session refers to. A writer holds each blob it refers to
(PostgreSQL: ``FOR KEY SHARE``, as ``Changes.add_change``) until it commits, and the collector
skips locked blobs: a blob about to be referenced is never collected under it.

Raw SQL over these columns (``Store.query``, the agents' ``sql.query`` on the store) sees a
large string as its reference; ``blobs`` holds it (its ``data``, as the literal's text).

Argument deltas (``tool.call.arguments.delta`` events, stored with ``persist_deltas``) are
pieces of a value, not values: they are never moved to blobs, and are deleted once the call's
``tool.call.arguments.done`` is stored (``RunEvents``), which carries the whole arguments.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from agi_jupyter.errors import NotFound
from agi_jupyter.records import utc_now
from agi_jupyter.store.sql import Conn, Database, Dialect

LARGE_VALUE = 8192  # characters of a JSON string literal (as written) kept once, in a blob

_PREFIX = '"\\/agi-blob:'  # how a reference starts in a JSON text
_REFERENCE = re.compile(r'"\\/agi-blob:([0-9a-f]{64})"')
# A JSON string literal (its text as written, between the quotes). Scanned from the start of a
# JSON text, every match starts at an opening quote.
_LITERAL = re.compile(r'"((?:[^"\\]++|\\.)*+)"', re.DOTALL)
_IN_BATCH = 500  # shas per ``IN (...)``

Rows = list[Any]


def _encode(literal: str) -> bytes:
    return literal.encode("utf-8", "surrogatepass")


class LargeValues:
    """Moves the large string literals of JSON texts to ``blobs`` on write and puts them back
    on read."""

    def __init__(self, db: Database) -> None:
        self._db = db
        self._dialect: Dialect = db.dialect

    # --- writing ---------------------------------------------------------------------------

    def keep(self, conn: Conn, session: str | Callable[[], str], text: str | None) -> str | None:
        """``text`` with each large string literal stored once and referenced, inside the
        caller's write transaction; ``session`` (or the function that finds it: called only
        when there is a large literal) is the session the row belongs to."""
        return self.keep_all(conn, session, [text])[0]

    def keep_all(
        self, conn: Conn, session: str | Callable[[], str], texts: Sequence[str | None]
    ) -> list[str | None]:
        """``keep`` of several texts of one session."""
        found: dict[str, bytes] = {}

        def reference(match: re.Match[str]) -> str:
            literal = match.group(1)
            if len(literal) < LARGE_VALUE:
                return match.group(0)
            data = _encode(literal)
            sha = hashlib.sha256(data).hexdigest()
            found[sha] = data
            return f'{_PREFIX}{sha}"'

        out = [
            text if text is None or len(text) < LARGE_VALUE else _LITERAL.sub(reference, text)
            for text in texts
        ]
        if found:
            session_id = session if isinstance(session, str) else session()
            for sha, data in found.items():
                self._hold(conn, sha, data)
            conn.executemany(
                "INSERT INTO blob_refs (id, sha256, session_id) VALUES (?, ?, ?)"
                " ON CONFLICT (id) DO NOTHING",
                [(f"{sha}:{session_id}", sha, session_id) for sha in found],
            )
        return out

    def _hold(self, conn: Conn, sha: str, data: bytes) -> None:
        """The blob is stored and held until the transaction ends (PostgreSQL: a collector
        that deleted it between the insert and the lock is followed by a new insert)."""
        held = f"SELECT 1 FROM blobs WHERE sha256 = ?{self._dialect.for_key_share}"
        while conn.execute(held, [sha]).fetchone() is None:
            conn.execute(
                "INSERT INTO blobs (sha256, size, data, created_at) VALUES (?, ?, ?, ?)"
                " ON CONFLICT (sha256) DO NOTHING",
                [sha, len(data), data, utc_now()],
            )

    # --- reading ---------------------------------------------------------------------------

    def expand(self, texts: Sequence[str | None], conn: Conn | None = None) -> list[str | None]:
        """The texts with their references replaced by the literals (one query for all)."""
        shas = {sha for text in texts if referenced(text) for sha in _shas(str(text))}
        if not shas:
            return list(texts)
        literals = self._literals(shas, conn)

        def literal(match: re.Match[str]) -> str:
            return literals[match.group(1)]

        return [
            _REFERENCE.sub(literal, text) if text and referenced(text) else text for text in texts
        ]

    def expand_rows(
        self, rows: Iterable[Sequence[Any]], columns: Sequence[int], conn: Conn | None = None
    ) -> list[Rows]:
        """Rows (as lists) with the references in these columns expanded."""
        out = [list(row) for row in rows]
        for column in columns:
            texts = self.expand([row[column] for row in out], conn)
            for row, text in zip(out, texts, strict=True):
                row[column] = text
        return out

    def _literals(self, shas: set[str], conn: Conn | None) -> dict[str, str]:
        """The JSON string literals (quotes included) stored under these shas."""
        wanted = sorted(shas)
        out: dict[str, str] = {}
        for start in range(0, len(wanted), _IN_BATCH):
            batch = wanted[start : start + _IN_BATCH]
            sql = (
                f"SELECT sha256, data FROM blobs WHERE sha256 IN ({', '.join('?' for _ in batch)})"
            )
            rows = conn.execute(sql, batch).fetchall() if conn else self._db.all(sql, batch)
            for sha, data in rows:
                out[str(sha)] = '"' + bytes(data).decode("utf-8", "surrogatepass") + '"'
        missing = shas - out.keys()
        if missing:
            raise NotFound(
                f"stored value {min(missing)!r} not found (its session was deleted meanwhile?)",
                code="BLOB_NOT_FOUND",
            )
        return out


def referenced(text: str | None) -> bool:
    """Whether a JSON text holds a reference to a large value."""
    return text is not None and _PREFIX in text


def _shas(text: str) -> list[str]:
    return _REFERENCE.findall(text)
