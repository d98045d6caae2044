"""Artifacts' large payloads on PostgreSQL: in the database, so every replica can read them.

There is no ``path``: a payload larger than ``artifact_threshold`` goes to the row's ``content``
(``bytea``, stored out of line by PostgreSQL's TOAST) instead of a file under ``.agi/``.

``open_artifact`` (a command's large output, written as it comes) spools the pieces to a
temporary file, hashing them on the way, and ``commit`` moves them into the row a megabyte at
a time through a large object (``lo_put``, then ``lo_get`` into ``content`` and ``lo_unlink``,
all in the row's transaction): neither this process nor one statement's parameters ever hold
the whole payload, and a failed or aborted writer leaves nothing in the database.
"""

from __future__ import annotations

import hashlib
import tempfile
from collections.abc import Sequence

from agi_jupyter.errors import ArtifactNotFound
from agi_jupyter.records import Artifact
from agi_jupyter.store.artifacts import Artifacts
from agi_jupyter.store.base import ArtifactWriter
from agi_jupyter.store.postgres.core import PgDatabase

CHUNK = 1 << 20  # bytes moved per statement when a written artifact is committed
SPOOL = 1 << 20  # bytes a writer keeps in memory before spooling to a temporary file


class RowPayloads:
    """PostgreSQL's ``artifacts.Payloads``: the row's ``content``."""

    def __init__(self, db: PgDatabase) -> None:
        self._db = db

    def place(self, artifact: Artifact, filename: str | None, payload: bytes) -> bytes | None:
        return payload

    def read(self, artifact_id: str, path: str) -> bytes:
        raise ArtifactNotFound(f"artifact {artifact_id!r} has a path ({path}) but no file here")

    def remove(self, artifact_ids: Sequence[str]) -> None:
        """Nothing outside the rows: their deletion removed the payloads."""

    def open(
        self, artifacts: Artifacts, artifact: Artifact, filename: str | None
    ) -> ArtifactWriter:
        self._db.check_open()
        return PgArtifactWriter(self._db, artifacts, artifact)


class PgArtifactWriter:
    """``RowPayloads.open``: the pieces go to a temporary file (in memory up to ``SPOOL``
    bytes), hashed as they come; ``commit`` stores them, ``abort`` drops them."""

    def __init__(self, db: PgDatabase, artifacts: Artifacts, artifact: Artifact) -> None:
        self._db = db
        self._artifacts = artifacts
        self._artifact = artifact
        self._spool = tempfile.SpooledTemporaryFile(max_size=SPOOL)  # noqa: SIM115 (closed in commit/abort)
        self._hash = hashlib.sha256()
        self._size = 0

    def write(self, data: bytes) -> None:
        self._spool.write(data)
        self._hash.update(data)
        self._size += len(data)

    def commit(self) -> Artifact:
        """Insert the row with the spooled bytes as its ``content`` (see the module
        docstring): one transaction, so the row appears whole or not at all."""
        artifact = self._artifact
        artifact.size, artifact.sha256 = self._size, self._hash.hexdigest()
        spool = self._spool
        try:
            spool.seek(0)
            with self._db.write() as conn:
                self._artifacts.insert(conn, artifact)
                (oid,) = conn.execute("SELECT lo_create(0)").fetchone() or (None,)
                offset = 0
                while chunk := spool.read(CHUNK):
                    conn.execute("SELECT lo_put(?, ?, ?)", [oid, offset, chunk])
                    offset += len(chunk)
                conn.execute(
                    "UPDATE artifacts SET content = lo_get(?) WHERE id = ?", [oid, artifact.id]
                )
                conn.execute("SELECT lo_unlink(?)", [oid])
            return artifact
        finally:
            spool.close()

    def abort(self) -> None:
        self._spool.close()
