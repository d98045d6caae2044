"""What a project's store holds, as text, whatever the backend: for tests that check that a
secret is stored nowhere."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from agi_jupyter.store import Store


def stored_texts(project: Path, store: Store) -> list[tuple[str, str]]:
    """(where, text) pairs: the files under ``.agi/`` (the SQLite database and artifact files
    among them), plus, on PostgreSQL, every row of the project's schema (artifact and
    snapshot bytes included). Bytes are read as Latin-1, so any byte sequence is kept."""
    files = [p for p in (project / ".agi").rglob("*") if p.is_file()]
    texts = [(str(p.relative_to(project)), p.read_text("latin-1")) for p in files]
    if store.dialect == "sqlite":
        return texts
    tables = store.query(
        "SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema()"
    ).rows
    for (table,) in tables:
        rows = store.query(f"SELECT * FROM {table}", max_rows=100_000).rows
        texts.append((f"table {table}", "\n".join(_text(v) for row in rows for v in row)))
    return texts


def _text(value: Any) -> str:
    return value.decode("latin-1") if isinstance(value, bytes) else str(value)
