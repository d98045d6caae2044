"""Capabilities: the tools an agent wrote for itself (``capabilities.*``), by name."""

from __future__ import annotations

from agi_jupyter.records import JSON, Capability, new_id, utc_now
from agi_jupyter.store.rows import CAPABILITIES
from agi_jupyter.store.sql import Database

_SELECT = f"SELECT {CAPABILITIES.select()} FROM capabilities"


class Capabilities:
    """The ``capabilities`` table."""

    def __init__(self, db: Database) -> None:
        self._db = db

    def upsert_capability(
        self, name: str, *, description: str, file_path: str, tool_schema: JSON
    ) -> Capability:
        """Create or replace the capability called ``name`` (its id and created_at stay)."""
        now = utc_now()
        new = Capability(
            id=new_id("cap"),
            name=name,
            description=description,
            file_path=file_path,
            tool_schema=tool_schema,
            created_at=now,
            updated_at=now,
        )
        row = CAPABILITIES.to_row(new)
        with self._db.write() as conn:
            stored = conn.execute(
                "INSERT INTO capabilities (id, name, description, file_path, tool_schema,"
                " created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?)"
                " ON CONFLICT (name) DO UPDATE SET description = excluded.description,"
                " file_path = excluded.file_path, tool_schema = excluded.tool_schema,"
                f" updated_at = excluded.updated_at RETURNING {CAPABILITIES.select()}",
                [row[c] for c in CAPABILITIES.columns],
            ).fetchone()
        assert stored is not None  # RETURNING of an upsert always has the row
        return CAPABILITIES.from_row(stored)

    def get_capability(self, name: str) -> Capability | None:
        row = self._db.one(f"{_SELECT} WHERE name = ?", [name])
        return None if row is None else CAPABILITIES.from_row(row)

    def list_capabilities(self) -> list[Capability]:
        """All capabilities, by name."""
        return [CAPABILITIES.from_row(r) for r in self._db.all(f"{_SELECT} ORDER BY name")]

    def delete_capability(self, name: str) -> bool:
        """Delete a capability; returns whether it existed."""
        with self._db.write() as conn:
            return conn.execute("DELETE FROM capabilities WHERE name = ?", [name]).rowcount == 1
