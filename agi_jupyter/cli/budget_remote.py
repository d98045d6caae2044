"""``agi budget --server URL``: the same view and changes through a server's REST API.

``GET/PATCH /agi/v1/sessions/{id}`` and ``/agi/v1/notebook-budgets``; what a notebook spent is
summed over the pages of ``GET /agi/v1/sessions`` (as ``budget.notebook_spent`` does over the
store). The statuses are ``budget.BudgetStatus``, so the output is the local one's.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

from agi_jupyter.budget import Budget, BudgetStatus, notebook_key
from agi_jupyter.cli.remote import ServerClient
from agi_jupyter.errors import UsageError


def remote_view(
    server: str,
    token: str | None,
    project: Path | None,
    session_id: str | None,
    notebook: str | None,
    change: dict[str, Any] | None,
) -> dict[str, Any]:
    """What ``agi budget`` prints (``budget._session`` / ``budget._notebook``'s shape)."""
    client = ServerClient(server, token, str(project) if project else None)
    if notebook is not None:
        return _notebook(client, notebook, change)
    return _session(client, session_id, change)


def _session(
    client: ServerClient, session_id: str | None, change: dict[str, Any] | None
) -> dict[str, Any]:
    if session_id is None:
        latest = client.call("GET", "sessions", page_size="1")["sessions"]
        if not latest:
            raise UsageError("there is no session yet (no run): name one, or ask something first")
        session_id = str(latest[0]["id"])
    path = f"sessions/{quote(session_id, safe='')}"
    if change is not None:
        ses = client.call("PATCH", path, {"budget": change or None})["session"]
    else:
        ses = client.call("GET", path)["session"]
    found = []
    own = Budget.parse(ses.get("budget"))
    if own is not None:
        tokens = int(ses["input_tokens"]) + int(ses["output_tokens"])
        found.append(BudgetStatus("session", own, tokens, float(ses["cost_usd"])).to_dict())
    if ses.get("notebook_path"):
        found.extend(_notebook(client, str(ses["notebook_path"]), None)["budgets"])
    return {
        "session_id": ses["id"],
        "notebook_path": ses.get("notebook_path"),
        "budget": ses.get("budget"),
        "budgets": found,
    }


def _notebook(client: ServerClient, path: str, change: dict[str, Any] | None) -> dict[str, Any]:
    key = notebook_key(path)
    if not key or key == ".":
        raise UsageError("a notebook budget needs the notebook's path")
    if change is not None:
        listed = client.call("PATCH", "notebook-budgets", {"path": key, "budget": change or None})
    else:
        listed = client.call("GET", "notebook-budgets")
    chosen = Budget.parse(listed["notebook_budgets"].get(key))
    found = []
    if chosen is not None:
        tokens, usd = 0, 0.0
        for ses in _sessions(client):
            if ses.get("notebook_path") and notebook_key(ses["notebook_path"]) == key:
                tokens += int(ses["input_tokens"]) + int(ses["output_tokens"])
                usd += float(ses["cost_usd"])
        found.append(BudgetStatus("notebook", chosen, tokens, usd, key).to_dict())
    return {
        "notebook_path": key,
        "budget": chosen.to_dict() if chosen else None,
        "budgets": found,
    }


def _sessions(client: ServerClient) -> Iterator[dict[str, Any]]:
    cursor = ""
    for _ in range(10_000):  # bounded: 100 sessions a page
        page = client.call("GET", "sessions", page_size="100", cursor=cursor)
        yield from page["sessions"]
        cursor = page.get("next_cursor") or ""
        if not cursor:
            return
