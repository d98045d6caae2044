"""Notebook budgets set from a front door (``%agi budget --notebook``, ``agi budget``, REST):
a store row, so every process sees them at once; they win over the config's."""

from __future__ import annotations

import json

from agi_jupyter.records import JSON, utc_now
from agi_jupyter.store.sql import Database


class NotebookBudgets:
    """The ``notebook_budgets`` table."""

    def __init__(self, db: Database) -> None:
        self._db = db

    def set_notebook_budget(self, path: str, budget: JSON | None) -> None:
        """Store the budget of the notebook ``path`` (None removes it)."""
        with self._db.write() as conn:
            if budget is None:
                conn.execute("DELETE FROM notebook_budgets WHERE path = ?", [path])
                return
            conn.execute(
                "INSERT INTO notebook_budgets (path, budget, updated_at) VALUES (?, ?, ?)"
                " ON CONFLICT (path) DO UPDATE SET budget = excluded.budget,"
                " updated_at = excluded.updated_at",
                [path, json.dumps(budget), utc_now()],
            )

    def notebook_budgets(self) -> dict[str, JSON]:
        """The stored notebook budgets, by path."""
        rows = self._db.all("SELECT path, budget FROM notebook_budgets ORDER BY path")
        return {str(r[0]): json.loads(r[1]) for r in rows}
