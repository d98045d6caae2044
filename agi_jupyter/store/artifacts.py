"""Artifacts: tool outputs, diffs, reports. Small payloads live in the row, large ones where
the backend keeps them (its ``Payloads``).

A payload (``content`` bytes, or ``text`` encoded as UTF-8) up to the store's
``artifact_threshold`` stays in the row (``text``, or an inline ``content`` BLOB), with its
``size`` and ``sha256``. A larger one goes to the backend's ``Payloads``: on SQLite a file
``.agi/artifacts/<id>/<filename>`` whose ``path`` (relative to the project) the row keeps
(``FilePayloads``, here); on PostgreSQL the row's ``content`` (``postgres/artifacts.py``), so
every replica can read it. Either way ``text`` is then left empty, so listings stay small.
"""

from __future__ import annotations

import hashlib
import mimetypes
import os
import re
import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol

from agi_jupyter.errors import ArtifactNotFound, UsageError
from agi_jupyter.records import JSON, Artifact, new_id, utc_now
from agi_jupyter.store.base import ArtifactWriter
from agi_jupyter.store.connection import AGI_DIR, ARTIFACTS_DIR
from agi_jupyter.store.rows import ARTIFACTS
from agi_jupyter.store.sql import Conn, Database, insert, require_run, require_session

_SELECT = f"SELECT {ARTIFACTS.select()} FROM artifacts"
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")
DEFAULT_FILENAME = "content"


def sanitize_filename(filename: str | None) -> str:
    """A safe single path component: the base name, odd characters replaced by ``_``."""
    if not filename:
        return DEFAULT_FILENAME
    base = re.split(r"[/\\]", filename)[-1]
    safe = _UNSAFE.sub("_", base).lstrip(".")[:120]
    return safe or DEFAULT_FILENAME


class Payloads(Protocol):
    """Where a backend keeps the payloads larger than ``artifact_threshold``."""

    def place(self, artifact: Artifact, filename: str | None, payload: bytes) -> bytes | None:
        """Keep ``payload`` (setting ``artifact.path`` if it goes elsewhere than the row);
        returns the row's inline ``content``."""
        ...

    def read(self, artifact_id: str, path: str) -> bytes:
        """The payload of an artifact whose row has a ``path``."""
        ...

    def remove(self, artifact_ids: Sequence[str]) -> None:
        """Forget the payloads of artifacts whose rows are gone (best effort)."""
        ...

    def open(
        self, artifacts: Artifacts, artifact: Artifact, filename: str | None
    ) -> ArtifactWriter:
        """A writer of ``artifact``'s payload in pieces, which inserts the row on commit."""
        ...


def _not_found(artifact_id: str) -> ArtifactNotFound:
    return ArtifactNotFound(f"artifact {artifact_id!r} not found")


class Artifacts:
    """The ``artifacts`` table; large payloads go to ``payloads``."""

    def __init__(self, db: Database, payloads: Payloads, *, threshold: int) -> None:
        if threshold < 0:
            raise UsageError("artifact_threshold must be >= 0")
        self._db = db
        self.payloads = payloads
        self.threshold = threshold

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
        """Store an artifact; give ``text`` or ``content`` (not both) and/or ``data``.
        With only ``run_id`` given, ``session_id`` is taken from the run."""
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
        try:
            if payload is not None and len(payload) > self.threshold:
                artifact.text = None
                inline = self.payloads.place(artifact, filename, payload)
            with self._db.write() as conn:
                self.insert(conn, artifact, inline)
        except BaseException:
            self.payloads.remove([artifact.id])
            raise
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
    ) -> ArtifactWriter:
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
        return self.payloads.open(self, artifact, filename)

    def get_artifact(self, id: str) -> Artifact:
        row = self._db.one(f"{_SELECT} WHERE id = ?", [id])
        if row is None:
            raise _not_found(id)
        return ARTIFACTS.from_row(row)

    def read_artifact(self, id: str) -> bytes:
        """The payload: the file's bytes, the inline content or text, else ``data`` as JSON."""
        row = self._db.one("SELECT path, content, text, data FROM artifacts WHERE id = ?", [id])
        if row is None:
            raise _not_found(id)
        path, content, text, data = row
        if path is not None:
            return self.payloads.read(id, path)
        if content is not None:
            return bytes(content)
        if text is not None:
            return str(text).encode()
        return b"" if data is None else str(data).encode()

    def list_artifacts(
        self, *, run_id: str | None = None, session_id: str | None = None
    ) -> list[Artifact]:
        """Artifacts in creation order, of one run and/or one session (its runs' included)."""
        where: list[str] = []
        params: list[Any] = []
        if run_id is not None:
            where.append("run_id = ?")
            params.append(run_id)
        if session_id is not None:
            where.append("(session_id = ? OR run_id IN (SELECT id FROM runs WHERE session_id = ?))")
            params.extend([session_id, session_id])
        sql = _SELECT + (" WHERE " + " AND ".join(where) if where else "")
        rows = self._db.all(f"{sql} ORDER BY created_at, {self._db.dialect.pos}", params)
        return [ARTIFACTS.from_row(r) for r in rows]

    def insert(self, conn: Conn, artifact: Artifact, content: bytes | None = None) -> None:
        """The row, in a write transaction (with only ``run_id``, the session is the run's)."""
        dialect = self._db.dialect
        if artifact.run_id is not None:
            owner = require_run(conn, dialect, artifact.run_id)
            artifact.session_id = artifact.session_id or owner
        if artifact.session_id is not None:
            require_session(conn, dialect, artifact.session_id)
        insert(conn, "artifacts", {**ARTIFACTS.to_row(artifact), "content": content})

    def commit(self, artifact: Artifact) -> Artifact:
        """Insert the row of an artifact whose payload is in place (a writer's commit)."""
        try:
            with self._db.write() as conn:
                self.insert(conn, artifact)
        except BaseException:
            self.payloads.remove([artifact.id])
            raise
        return artifact


class FilePayloads:
    """SQLite's ``Payloads``: files under ``<project>/.agi/artifacts/<id>/``."""

    def __init__(self, project_dir: Path) -> None:
        self.project_dir = project_dir
        self.folder = project_dir / AGI_DIR / ARTIFACTS_DIR

    def place(self, artifact: Artifact, filename: str | None, payload: bytes) -> bytes | None:
        folder = self.folder / artifact.id
        folder.mkdir(parents=True, exist_ok=True)
        target = folder / sanitize_filename(filename)
        partial = folder / f".{target.name}.partial"
        partial.write_bytes(payload)
        os.replace(partial, target)
        artifact.path = Path(AGI_DIR, ARTIFACTS_DIR, artifact.id, target.name).as_posix()
        return None

    def read(self, artifact_id: str, path: str) -> bytes:
        file = (self.project_dir / path).resolve()
        if not file.is_relative_to((self.folder / artifact_id).resolve()):
            raise ArtifactNotFound(f"artifact {artifact_id!r} has an invalid path")
        try:
            return file.read_bytes()
        except FileNotFoundError as e:
            raise ArtifactNotFound(f"the file of artifact {artifact_id!r} is missing") from e

    def remove(self, artifact_ids: Sequence[str]) -> None:
        for artifact_id in artifact_ids:
            folder = self.folder / artifact_id
            if folder.is_dir():
                shutil.rmtree(folder, ignore_errors=True)

    def open(
        self, artifacts: Artifacts, artifact: Artifact, filename: str | None
    ) -> ArtifactWriter:
        return FileArtifactWriter(self, artifacts, artifact, sanitize_filename(filename))


class FileArtifactWriter:
    """``FilePayloads.open``: the bytes go to ``<id>/.<name>.partial`` as they come, hashed
    on the way; ``commit`` renames the file into place and inserts the row."""

    def __init__(
        self, files: FilePayloads, artifacts: Artifacts, artifact: Artifact, name: str
    ) -> None:
        self._files = files
        self._artifacts = artifacts
        self._artifact = artifact
        folder = files.folder / artifact.id
        folder.mkdir(parents=True, exist_ok=True)
        self._target = folder / name
        self._partial = folder / f".{name}.partial"
        self._file = self._partial.open("wb")
        self._hash = hashlib.sha256()
        self._size = 0

    def write(self, data: bytes) -> None:
        self._file.write(data)
        self._hash.update(data)
        self._size += len(data)

    def commit(self) -> Artifact:
        self._file.close()
        os.replace(self._partial, self._target)
        artifact = self._artifact
        artifact.size, artifact.sha256 = self._size, self._hash.hexdigest()
        artifact.path = Path(AGI_DIR, ARTIFACTS_DIR, artifact.id, self._target.name).as_posix()
        return self._artifacts.commit(artifact)

    def abort(self) -> None:
        self._file.close()
        self._files.remove([self._artifact.id])
