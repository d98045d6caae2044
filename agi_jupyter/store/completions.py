"""Inline completions counted (``completion_usage``): not runs, so no sessions or messages,
but requests, tokens and cost per notebook path and model, for ``agi stats`` and budgets."""

from __future__ import annotations

import json

from agi_jupyter.records import utc_now
from agi_jupyter.store.sql import Database

_FIELDS = "requests, cancelled, input_tokens, output_tokens, cost_usd, unpriced"
TOTALS = (
    "SELECT CAST(COALESCE(SUM(requests), 0) AS BIGINT),"
    " CAST(COALESCE(SUM(cancelled), 0) AS BIGINT),"
    " CAST(COALESCE(SUM(input_tokens), 0) AS BIGINT),"
    " CAST(COALESCE(SUM(output_tokens), 0) AS BIGINT), COALESCE(SUM(cost_usd), 0.0),"
    " CAST(COALESCE(SUM(unpriced), 0) AS BIGINT) FROM completion_usage"
)


class CompletionUsage:
    """The ``completion_usage`` table."""

    def __init__(self, db: Database) -> None:
        self._db = db

    def add_completion_usage(
        self,
        *,
        path: str,
        model: str,
        input_tokens: int | None,
        output_tokens: int | None,
        cost_usd: float | None,
        cancelled: bool = False,
    ) -> None:
        """Count one completion request of ``model`` for the notebook ``path`` ('' for
        none); tokens the server did not report and a cost that is unknown count as unknown
        (``unpriced``), never as 0 spent."""
        row = [
            json.dumps([path, model]),
            path,
            model,
            1,
            int(cancelled),
            input_tokens or 0,
            output_tokens or 0,
            cost_usd or 0.0,
            int(cost_usd is None),
            utc_now(),
        ]
        with self._db.write() as conn:
            conn.execute(
                f"INSERT INTO completion_usage (key, path, model, {_FIELDS}, updated_at)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (key) DO UPDATE SET"
                " requests = completion_usage.requests + excluded.requests,"
                " cancelled = completion_usage.cancelled + excluded.cancelled,"
                " input_tokens = completion_usage.input_tokens + excluded.input_tokens,"
                " output_tokens = completion_usage.output_tokens + excluded.output_tokens,"
                " cost_usd = completion_usage.cost_usd + excluded.cost_usd,"
                " unpriced = completion_usage.unpriced + excluded.unpriced,"
                " updated_at = excluded.updated_at",
                row,
            )

    def completion_totals(self, path: str | None = None) -> dict[str, int | float]:
        """requests, cancelled, input_tokens, output_tokens, cost_usd and unpriced, over
        every completion, or those of the notebook ``path``."""
        where, params = (" WHERE path = ?", [path]) if path is not None else ("", [])
        return totals(self._db.one(TOTALS + where, params))


def totals(row: tuple[int, int, int, int, float, int] | None) -> dict[str, int | float]:
    """A ``completion_totals`` row as a dict (None: nothing counted yet)."""
    requests, cancelled, inputs, outputs, cost, unpriced = row or (0, 0, 0, 0, 0.0, 0)
    return {
        "requests": int(requests),
        "cancelled": int(cancelled),
        "input_tokens": int(inputs),
        "output_tokens": int(outputs),
        "cost_usd": float(cost),
        "unpriced": int(unpriced),
    }
