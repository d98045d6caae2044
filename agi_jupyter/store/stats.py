"""Store statistics (``agi stats``, ``GET /stats``): counts and usage totals, one snapshot."""

from __future__ import annotations

from typing import Any

from agi_jupyter.store.completions import TOTALS, totals
from agi_jupyter.store.sql import Database

# Runs with a model turn whose server sent no usage (``runner.add_turn_usage``): their tokens
# are not in the totals, so the totals are a lower bound. ``usage`` is JSON text on both
# backends; the key only appears when such a turn happened.
UNKNOWN_USAGE_RUNS = "SELECT COUNT(*) FROM runs WHERE usage LIKE '%\"unknown_turns\"%'"
# Runs whose cost is unknown (a turn without usage, or a model without a catalog price): the
# cost total leaves them out.
UNKNOWN_COST_RUNS = "SELECT COUNT(*) FROM runs WHERE cost_usd IS NULL"
_USAGE = (
    "SELECT COUNT(*), CAST(COALESCE(SUM(input_tokens), 0) AS BIGINT),"
    " CAST(COALESCE(SUM(output_tokens), 0) AS BIGINT), COALESCE(SUM(cost_usd), 0.0),"
    " CAST(COALESCE(SUM(cached_input_tokens), 0) AS BIGINT)"
    " FROM sessions"
)
_COUNTED = ("messages", "artifacts", "tasks", "webhook_events")


class Stats:
    """Counts and totals over the whole store."""

    def __init__(self, db: Database) -> None:
        self._db = db

    def stats(self) -> dict[str, Any]:
        """Counts and totals over the whole store (all zeros before the first write)."""
        with self._db.read() as conn:
            if conn is None:
                return stats_dict({}, [], [], (0, 0, 0, 0.0, 0), completions=totals(None))
            counts = {
                table: conn.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0]
                for table in _COUNTED
            }
            runs = conn.execute("SELECT status, COUNT(*) FROM runs GROUP BY status").fetchall()
            unknown = conn.execute(UNKNOWN_USAGE_RUNS).fetchone()
            unpriced = conn.execute(UNKNOWN_COST_RUNS).fetchone()
            tools = conn.execute(
                "SELECT name, COUNT(*) FROM tool_calls GROUP BY name ORDER BY name"
            ).fetchall()
            usage = conn.execute(_USAGE).fetchone()
            completions = conn.execute(TOTALS).fetchone()  # inline completions: not runs.fetchone()
        return stats_dict(
            counts,
            runs,
            tools,
            usage,
            unknown[0] if unknown else 0,
            unpriced[0] if unpriced else 0,
            totals(completions),
        )


def stats_dict(
    counts: dict[str, int],
    runs: list[tuple[str, int]],
    tools: list[tuple[str, int]],
    usage: tuple[int, int, int, float, int],
    unknown_usage_runs: int = 0,
    unknown_cost_runs: int = 0,
    completions: dict[str, int | float] | None = None,
) -> dict[str, Any]:
    sessions, input_tokens, output_tokens, cost, cached = usage
    return {
        "sessions": sessions,
        "messages": counts.get("messages", 0),
        "runs": sum(n for _, n in runs),
        "runs_by_status": dict(sorted(runs)),
        "tool_calls": sum(n for _, n in tools),
        "tool_calls_by_name": dict(tools),
        "artifacts": counts.get("artifacts", 0),
        "tasks": counts.get("tasks", 0),
        "webhook_events": counts.get("webhook_events", 0),
        "input_tokens": input_tokens,
        "output_tokens": output_tokens,
        "cached_tokens": int(cached),
        "total_tokens": input_tokens + output_tokens,
        "cost_usd": float(cost),
        "unknown_usage_runs": int(unknown_usage_runs),
        "unknown_cost_runs": int(unknown_cost_runs),
        "completions": completions if completions is not None else totals(None),
    }
