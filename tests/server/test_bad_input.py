"""Every bad input is a 4xx with a code: never a 500, never a dead stream, never HTML."""

from __future__ import annotations

from typing import Any

import pytest

from agi_jupyter.server.routes import ROUTES, Route
from tests.server.conftest import Fetch

DEEP = b"[" * 100_000 + b"]" * 100_000  # RecursionError in json.loads, unless caught
NESTED = b'{"metadata": ' + b'{"a": ' * 100 + b"1" + b"}" * 100 + b"}"
BIG = str(2**70)


async def real_ids(fetch: Fetch) -> dict[str, str]:
    """Ids that exist, so requests get past the lookups to the input checks."""
    session = (await fetch("sessions", method="POST", json={})).data["session"]["id"]
    reply = await fetch("sessions", session, "messages", method="POST", json={"content": "hi"})
    run = reply.data["run"]["id"]
    return {"session_id": session, "run_id": run, "artifact_id": "art_none"}


def path_of(route: Route, ids: dict[str, str]) -> list[str]:
    path = route.path.removeprefix("/agi/v1/").removeprefix("/agi/")
    for name, value in ids.items():
        path = path.replace("{" + name + "}", value)
    return path.split("/")


BODY_ROUTES = [r for r in ROUTES if r.body is not None and r.authenticated]


@pytest.mark.parametrize("route", BODY_ROUTES, ids=lambda r: f"{r.method} {r.path}")
@pytest.mark.parametrize(
    ("body", "code"),
    [
        (DEEP, "VALIDATION_ERROR"),
        (NESTED, "VALIDATION_ERROR"),
        (b"null", "VALIDATION_ERROR"),
        (b"[1]", "VALIDATION_ERROR"),
        (b'{"title": "\\ud800"}', "VALIDATION_ERROR"),  # a lone surrogate
        (b"\xff\xfe", "VALIDATION_ERROR"),
        (b" \n", "VALIDATION_ERROR"),  # blanks are not JSON (an empty body is no body)
    ],
    ids=["deep", "nested", "null", "array", "surrogate", "not-utf8", "blanks"],
)
async def test_bad_bodies_are_400(fetch: Fetch, route: Route, body: bytes, code: str) -> None:
    ids = {"session_id": "ses_x", "run_id": "run_x"}  # bodies are checked before ids
    reply = await fetch(*path_of(route, ids), method=route.method, body=body)
    assert (reply.status, reply.error["code"]) == (400, code), reply


@pytest.mark.parametrize(
    ("parts", "params", "headers", "status", "code"),
    [
        (["runs", "{run_id}", "events"], {"after_seq": BIG}, {}, 400, "VALIDATION_ERROR"),
        (["runs", "{run_id}", "events"], {}, {"Last-Event-ID": BIG}, 200, None),  # not ours
        (["runs", "{run_id}", "events"], {}, {"Last-Event-ID": "²"}, 200, None),
        (["sessions"], {"page_size": BIG}, {}, 400, "VALIDATION_ERROR"),
        (["sessions"], {"cursor": BIG}, {}, 404, "CURSOR_NOT_FOUND"),
        (["tasks"], {"cursor": "²"}, {}, 404, "CURSOR_NOT_FOUND"),
        (
            ["sessions", "{session_id}", "stream"],
            {"after_cursor": BIG},
            {},
            404,
            "CURSOR_NOT_FOUND",
        ),
        (
            ["sessions", "{session_id}", "stream"],
            {},
            {"Last-Event-ID": BIG},
            404,
            "CURSOR_NOT_FOUND",
        ),
        (["sessions"], {"project": "p" * 5000}, {}, 404, "PROJECT_NOT_FOUND"),
        (["sessions"], {"project": "../.."}, {}, 404, "PROJECT_NOT_FOUND"),
    ],
)
async def test_bad_parameters_are_4xx(
    fetch: Fetch,
    parts: list[str],
    params: dict[str, str],
    headers: dict[str, str],
    status: int,
    code: str | None,
) -> None:
    ids = await real_ids(fetch)
    path = [ids.get(p.strip("{}"), p) for p in parts]
    reply = await fetch(*path, params=params, headers={"Accept": "application/json", **headers})
    assert reply.status == status, reply
    if code is not None:
        assert reply.error["code"] == code


async def test_405_names_the_allowed_methods(fetch: Fetch) -> None:
    reply = await fetch("sessions", method="PUT", body=b"{}")
    assert (reply.status, reply.error["code"]) == (405, "METHOD_NOT_ALLOWED")
    assert reply.headers["Allow"] == "GET, POST, OPTIONS"


async def test_a_body_is_required_only_where_the_document_says(fetch: Fetch) -> None:
    made = await fetch("sessions", method="POST", body=b"")  # nothing required: {}
    assert made.status == 201
    session = made.data["session"]["id"]
    missing = await fetch("sessions", session, "messages", method="POST", body=b"")
    assert (missing.status, missing.error["code"]) == (400, "VALIDATION_ERROR")
    assert "a JSON object body is required" in missing.error["message"]


async def test_429_says_when_to_come_back(fetch: Fetch, jp_serverapp: Any) -> None:
    from agi_jupyter.server.ratelimit import RateLimiter

    jp_serverapp.web_app.settings["agi"].webhook_limiter = RateLimiter(1)
    first = await fetch("webhooks", "openai", method="POST", body=b"{}")
    second = await fetch("webhooks", "openai", method="POST", body=b"{}")
    assert first.status != 429
    assert (second.status, second.error["code"]) == (429, "RATE_LIMITED")
    assert int(second.headers["Retry-After"]) >= 1
