"""Artifacts: tool outputs, diffs, reports. Large payloads live in files, small ones inline.

A payload (``content`` bytes, or ``text`` encoded as UTF-8) larger than the store's
``artifact_threshold`` is written to ``.agi/artifacts/<id>/<filename>`` and the row keeps only
its metadata: ``path`` (relative to the project), ``size`` and ``sha256``. A smaller one stays in
the row (``text``, or an inline ``content`` BLOB), with the same ``size`` and ``sha256``.
"""

from __future__ import annotations

import hashlib
import mimetypes
import os
import re
from pathlib import Path
from typing import Any

from agi_jupyter.errors import ArtifactNotFound, RunNotFound, UsageError
from agi_jupyter.records import JSON, Artifact, new_id, utc_now
from agi_jupyter.store.connection import AGI_DIR, ARTIFACTS_DIR, StoreCore
from agi_jupyter.store.rows import ARTIFACTS

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


def _not_found(artifact_id: str) -> ArtifactNotFound:
    return ArtifactNotFound(f"artifact {artifact_id!r} not found")


class ArtifactsMixin(StoreCore):
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
        if payload is not None and len(payload) > self.artifact_threshold:
            artifact.path = self._write_artifact_file(artifact.id, filename, payload)
            artifact.text = inline = None
        try:
            self._insert_artifact(artifact, inline)
        except BaseException:
            self._remove_artifact_files([artifact.id])
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
    ) -> FileArtifactWriter:
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
        return FileArtifactWriter(self, artifact, sanitize_filename(filename))

    def get_artifact(self, id: str) -> Artifact:
        row = self._one(f"{_SELECT} WHERE id = ?", [id])
        if row is None:
            raise _not_found(id)
        return ARTIFACTS.from_row(row)

    def read_artifact(self, id: str) -> bytes:
        """The payload: the file's bytes, the inline content or text, else ``data`` as JSON."""
        row = self._one("SELECT path, content, text, data FROM artifacts WHERE id = ?", [id])
        if row is None:
            raise _not_found(id)
        path, content, text, data = row
        if path is not None:
            return self._read_artifact_file(id, path)
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
        rows = self._all(f"{sql} ORDER BY created_at, rowid", params)
        return [ARTIFACTS.from_row(r) for r in rows]

    # --- helpers --------------------------------------------------------------------------

    def _insert_artifact(self, artifact: Artifact, inline: bytes | None) -> None:
        with self._write() as conn:
            if artifact.run_id is not None:
                row = conn.execute(
                    "SELECT session_id FROM runs WHERE id = ?", [artifact.run_id]
                ).fetchone()
                if row is None:
                    raise RunNotFound(f"run {artifact.run_id!r} not found")
                artifact.session_id = artifact.session_id or row[0]
            if artifact.session_id is not None:
                self._require_session(conn, artifact.session_id)
            self._insert(conn, "artifacts", {**ARTIFACTS.to_row(artifact), "content": inline})

    def _commit_artifact_file(self, artifact: Artifact) -> Artifact:
        try:
            self._insert_artifact(artifact, None)
        except BaseException:
            self._remove_artifact_files([artifact.id])
            raise
        return artifact

    def _write_artifact_file(self, artifact_id: str, filename: str | None, payload: bytes) -> str:
        folder = self.artifacts_dir / artifact_id
        folder.mkdir(parents=True, exist_ok=True)
        target = folder / sanitize_filename(filename)
        partial = folder / f".{target.name}.partial"
        partial.write_bytes(payload)
        os.replace(partial, target)
        return Path(AGI_DIR, ARTIFACTS_DIR, artifact_id, target.name).as_posix()

    def _read_artifact_file(self, artifact_id: str, path: str) -> bytes:
        file = (self.project_dir / path).resolve()
        if not file.is_relative_to((self.artifacts_dir / artifact_id).resolve()):
            raise ArtifactNotFound(f"artifact {artifact_id!r} has an invalid path")
        try:
            return file.read_bytes()
        except FileNotFoundError as e:
            raise ArtifactNotFound(f"the file of artifact {artifact_id!r} is missing") from e


class FileArtifactWriter:
    """``ArtifactsMixin.open_artifact``: the bytes go to ``<id>/.<name>.partial`` as they come,
    hashed on the way; ``commit`` renames the file into place and inserts the row."""

    def __init__(self, store: ArtifactsMixin, artifact: Artifact, name: str) -> None:
        self._store = store
        self._artifact = artifact
        folder = store.artifacts_dir / artifact.id
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
        return self._store._commit_artifact_file(artifact)

    def abort(self) -> None:
        self._file.close()
        self._store._remove_artifact_files([self._artifact.id])
