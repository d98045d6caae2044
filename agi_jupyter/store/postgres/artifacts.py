"""Artifacts on PostgreSQL: every payload lives in the database, so every replica can read it.

There is no ``path``: a payload larger than ``artifact_threshold`` goes to the row's ``content``
(``bytea``, stored out of line by PostgreSQL's TOAST) instead of a file under ``.agi/``, and
``text`` is then left empty, as on SQLite, so listings stay small. ``size`` and ``sha256``
describe the payload either way.

``open_artifact`` (a command's large output, written as it comes) spools the pieces to a
temporary file, hashing them on the way, and ``commit`` moves them into the row a megabyte at
a time through a large object (``lo_put``, then ``lo_get`` into ``content`` and ``lo_unlink``,
all in the row's transaction): neither this process nor one statement's parameters ever hold
the whole payload, and a failed or aborted writer leaves nothing in the database.
"""

from __future__ import annotations

import hashlib
import mimetypes
import tempfile
from typing import Any

from agi_jupyter.errors import ArtifactNotFound, UsageError
from agi_jupyter.records import JSON, Artifact, new_id, utc_now
from agi_jupyter.store.postgres.core import Connection, PgCore
from agi_jupyter.store.rows import ARTIFACTS

_SELECT = f"SELECT {ARTIFACTS.select()} FROM artifacts"
CHUNK = 1 << 20  # bytes moved per statement when a written artifact is committed
SPOOL = 1 << 20  # bytes a writer keeps in memory before spooling to a temporary file


def _not_found(artifact_id: str) -> ArtifactNotFound:
    return ArtifactNotFound(f"artifact {artifact_id!r} not found")


class PgArtifactsMixin(PgCore):
    def create_artifact(
        self,
        kind: str,
        *,
        run_id: str | None = None,
        session_id: str | None = None,
        message_part_id: str | None = None,
        title: str | None = None,
        mime: str | None = None,
        data: JSON | None = None,
        text: str | None = None,
        content: bytes | None = None,
        filename: str | None = None,
    ) -> Artifact:
        if text is not None and content is not None:
            raise UsageError("give an artifact text or content, not both")
        payload = content if content is not None else None if text is None else text.encode()
        now = utc_now()
        artifact = Artifact(
            id=new_id("art"),
            kind=kind,
            run_id=run_id,
            session_id=session_id,
            message_part_id=message_part_id,
            title=title,
            mime=mime or (mimetypes.guess_type(filename)[0] if filename else None),
            size=0 if payload is None else len(payload),
            sha256=None if payload is None else hashlib.sha256(payload).hexdigest(),
            data=data,
            text=text,
            created_at=now,
            updated_at=now,
        )
        inline = content
        if payload is not None and len(payload) > self.artifact_threshold:
            artifact.text, inline = None, payload
        with self._write() as conn:
            self._insert_artifact(conn, artifact, inline)
        return artifact

    def open_artifact(
        self,
        kind: str,
        *,
        run_id: str | None = None,
        session_id: str | None = None,
        title: str | None = None,
        mime: str | None = None,
        data: JSON | None = None,
        filename: str | None = None,
    ) -> PgArtifactWriter:
        now = utc_now()
        artifact = Artifact(
            id=new_id("art"),
            kind=kind,
            run_id=run_id,
            session_id=session_id,
            title=title,
            mime=mime or (mimetypes.guess_type(filename)[0] if filename else None),
            data=data,
            created_at=now,
            updated_at=now,
        )
        self._check_open()
        return PgArtifactWriter(self, artifact)

    def _insert_artifact(
        self, conn: Connection, artifact: Artifact, content: bytes | None = None
    ) -> None:
        """The row (with only ``run_id``, the session is the run's)."""
        if artifact.run_id is not None:
            owner = self._require_run(conn, artifact.run_id)
            artifact.session_id = artifact.session_id or owner
        if artifact.session_id is not None:
            self._require_session(conn, artifact.session_id)
        self._insert(conn, "artifacts", {**ARTIFACTS.to_row(artifact), "content": content})

    def _commit_streamed(self, artifact: Artifact, spool: Any) -> Artifact:
        """Insert ``artifact`` with the spooled bytes as its ``content`` (see the module
        docstring): one transaction, so the row appears whole or not at all."""
        spool.seek(0)
        with self._write() as conn:
            self._insert_artifact(conn, artifact)
            (oid,) = conn.execute("SELECT lo_create(0)").fetchone() or (None,)
            offset = 0
            while chunk := spool.read(CHUNK):
                conn.execute("SELECT lo_put(%s, %s, %s)", [oid, offset, chunk])
                offset += len(chunk)
            conn.execute(
                "UPDATE artifacts SET content = lo_get(%s) WHERE id = %s", [oid, artifact.id]
            )
            conn.execute("SELECT lo_unlink(%s)", [oid])
        return artifact

    def get_artifact(self, id: str) -> Artifact:
        row = self._one(f"{_SELECT} WHERE id = %s", [id])
        if row is None:
            raise _not_found(id)
        return ARTIFACTS.from_row(row)

    def read_artifact(self, id: str) -> bytes:
        row = self._one("SELECT content, text, data FROM artifacts WHERE id = %s", [id])
        if row is None:
            raise _not_found(id)
        content, text, data = row
        if content is not None:
            return bytes(content)
        if text is not None:
            return str(text).encode()
        return b"" if data is None else str(data).encode()

    def list_artifacts(
        self, *, run_id: str | None = None, session_id: str | None = None
    ) -> list[Artifact]:
        where: list[str] = []
        params: list[Any] = []
        if run_id is not None:
            where.append("run_id = %s")
            params.append(run_id)
        if session_id is not None:
            where.append(
                "(session_id = %s OR run_id IN (SELECT id FROM runs WHERE session_id = %s))"
            )
            params.extend([session_id, session_id])
        sql = _SELECT + (" WHERE " + " AND ".join(where) if where else "")
        rows = self._all(f"{sql} ORDER BY created_at, pos", params)
        return [ARTIFACTS.from_row(r) for r in rows]


class PgArtifactWriter:
    """``PgArtifactsMixin.open_artifact``: the pieces go to a temporary file (in memory up to
    ``SPOOL`` bytes), hashed as they come; ``commit`` stores them, ``abort`` drops them."""

    def __init__(self, store: PgArtifactsMixin, artifact: Artifact) -> None:
        self._store = store
        self._artifact = artifact
        self._spool = tempfile.SpooledTemporaryFile(max_size=SPOOL)  # noqa: SIM115 (closed in commit/abort)
        self._hash = hashlib.sha256()
        self._size = 0

    def write(self, data: bytes) -> None:
        self._spool.write(data)
        self._hash.update(data)
        self._size += len(data)

    def commit(self) -> Artifact:
        artifact = self._artifact
        artifact.size, artifact.sha256 = self._size, self._hash.hexdigest()
        try:
            return self._store._commit_streamed(artifact, self._spool)
        finally:
            self._spool.close()

    def abort(self) -> None:
        self._spool.close()
