"""The OpenAPI document: valid 3.1, served, complete both ways, unions discriminated."""

from __future__ import annotations

import asyncio
import json
import re
from typing import Any

from openapi_spec_validator import validate
from tornado.routing import PathMatches, Rule

from agi_jupyter import events as ev
from agi_jupyter.errors import ErrorCode
from agi_jupyter.kinds import (
    DecisionDoor,
    MentionKind,
    ReviewMode,
    SdkName,
    StaleReason,
    ToolTrait,
    Verdict,
)
from agi_jupyter.records import _PART_TYPES
from agi_jupyter.server.handlers.base import AgiHandler
from agi_jupyter.server.models import EventUnion, PartUnion
from agi_jupyter.server.routes import PROTOCOL_ROUTES

METHODS = ("get", "post", "patch", "delete", "put")


async def test_openapi_document_is_valid_and_served(jp_fetch: Any) -> None:
    response = await jp_fetch("agi", "openapi.json")
    doc = json.loads(response.body)
    validate(doc)
    assert doc["openapi"].startswith("3.1")
    assert doc["info"]["version"] == "1.0.0"
    for path, _handler in PROTOCOL_ROUTES:  # protocol endpoints: named, not described
        assert path not in doc["paths"]
        assert f"`{path}`" in doc["info"]["description"]
    assert all(path.startswith(("/agi/v1/", "/agi/openapi.json")) for path in doc["paths"])
    webhook = doc["paths"]["/agi/v1/webhooks/openai"]["post"]
    assert webhook["security"] == []
    stream = doc["paths"]["/agi/v1/sessions/{session_id}/messages"]["post"]
    assert set(stream["responses"]["200"]["content"]) == {
        "application/json",
        "application/x-ndjson",
        "text/event-stream",
    }


async def test_event_and_part_unions_are_discriminated(jp_fetch: Any) -> None:
    schemas = json.loads((await jp_fetch("agi", "openapi.json")).body)["components"]["schemas"]
    event = schemas["Event"]
    assert event["discriminator"]["propertyName"] == "type"
    assert set(event["discriminator"]["mapping"]) == set(ev.EVENT_TYPES)
    part = schemas["MessagePart"]
    assert part["discriminator"]["propertyName"] == "type"
    assert set(part["discriminator"]["mapping"]) == set(_PART_TYPES)
    assert len(EventUnion.__args__[0].__args__) == len(ev.EVENT_TYPES)  # type: ignore[attr-defined]
    assert len(PartUnion.__args__[0].__args__) == len(_PART_TYPES)  # type: ignore[attr-defined]


async def test_the_named_kinds_are_the_documents_enums(jp_fetch: Any) -> None:
    """Each Python enum is an enum schema of the document, value for value and with its
    members' names (the panel's generated constants), and the fields that carry it use it."""
    schemas = json.loads((await jp_fetch("agi", "openapi.json")).body)["components"]["schemas"]
    kinds = (
        DecisionDoor,
        ErrorCode,
        MentionKind,
        ReviewMode,
        SdkName,
        StaleReason,
        ToolTrait,
        Verdict,
    )
    for kind in kinds:
        schema = schemas[kind.__name__]
        assert schema["type"] == "string"
        assert schema["enum"] == [member.value for member in kind]
        assert schema["x-enum-varnames"] == [member.name for member in kind]
    named = {name for name, schema in schemas.items() if "x-enum-varnames" in schema}
    assert named == {kind.__name__ for kind in kinds}

    def ref(kind: type) -> dict[str, str]:
        return {"$ref": f"#/components/schemas/{kind.__name__}"}

    assert schemas["ErrorDetail"]["properties"]["code"] == ref(ErrorCode)
    assert ref(ErrorCode) in schemas["TabReply"]["properties"]["code"]["anyOf"]
    for body in ("SessionCreate", "SessionUpdate"):
        fields = schemas[body]["properties"]
        assert ref(ReviewMode) in fields["review_mode"]["anyOf"]
        assert ref(SdkName) in fields["sdk"]["anyOf"]
        rules = fields["permissions"]["anyOf"][0]
        assert rules == {"additionalProperties": ref(Verdict), "type": "object"}
    assert ref(SdkName) in schemas["OneShotRequest"]["properties"]["sdk"]["anyOf"]
    assert schemas["ToolInfo"]["properties"]["trait"]["$ref"] == ref(ToolTrait)["$ref"]
    assert schemas["StaleCell"]["properties"]["reason"] == ref(StaleReason)
    assert (
        schemas["ApprovalRequested"]["properties"]["review_mode"]["$ref"]
        == (ref(ReviewMode)["$ref"])
    )


async def test_the_notebook_bridge_protocol_is_typed(jp_fetch: Any) -> None:
    """What a tab is sent (``TabRequest``; on the bridge stream ``NotebookRequest``) and what it
    answers (``TabReply``): a request's ``change`` is one of the operations, by ``op``."""
    schemas = json.loads((await jp_fetch("agi", "openapi.json")).body)["components"]["schemas"]
    changes = {
        "insert": "InsertChange",
        "edit": "EditChange",
        "delete": "DeleteChange",
        "set_outputs": "SetOutputsChange",
        "replace": "ReplaceChange",
    }
    for request in ("TabRequest", "NotebookRequest"):
        change, null = schemas[request]["properties"]["change"]["anyOf"]
        assert null == {"type": "null"}
        assert change["discriminator"]["propertyName"] == "op"
        mapping = change["discriminator"]["mapping"]
        assert mapping == {op: f"#/components/schemas/{name}" for op, name in changes.items()}
    for op, name in changes.items():
        assert schemas[name]["properties"]["op"]["const"] == op
        assert "op" in schemas[name]["required"]
    assert schemas["NotebookReply"]["properties"]["reply"] == {
        "$ref": "#/components/schemas/TabReply"
    }
    assert set(schemas["TabReply"]["properties"]) == {
        "ok", "code", "message", "notebook", "before", "after", "path"
    }  # fmt: skip


def agi_rules(rules: list[Rule]) -> list[tuple[re.Pattern[str], type[AgiHandler]]]:
    """Every (path regex, handler) of the web app whose handler is one of ours."""
    found = []
    for rule in rules:
        target = rule.target
        protocol = any(target is handler for _, handler in PROTOCOL_ROUTES)
        if isinstance(target, type) and issubclass(target, AgiHandler) and not protocol:
            assert isinstance(rule.matcher, PathMatches)
            found.append((rule.matcher.regex, target))
        elif hasattr(target, "rules"):
            found += agi_rules(target.rules)
    return found


def implemented(handler: type[AgiHandler]) -> set[str]:
    return {
        m
        for m in METHODS
        if any(
            m in vars(c)
            for c in handler.__mro__
            if c is not AgiHandler and issubclass(c, AgiHandler)
        )
    }


async def test_documented_and_registered_routes_match(
    jp_serverapp: Any, jp_base_url: str, jp_fetch: Any
) -> None:
    doc = json.loads((await jp_fetch("agi", "openapi.json")).body)
    rules = agi_rules(jp_serverapp.web_app.default_router.rules)
    assert rules
    documented = {(path, method) for path, item in doc["paths"].items() for method in item}
    # every documented operation reaches a handler that implements it
    for path, method in documented:
        url = jp_base_url.rstrip("/") + re.sub(r"\{\w+\}", "x_1", path)
        handlers = [h for regex, h in rules if regex.match(url)]
        assert handlers, f"{path} is not routed"
        assert method in implemented(handlers[0]), f"{method.upper()} {path} not implemented"
    # every implemented handler method is documented
    for regex, handler in rules:
        paths = [
            p
            for p in doc["paths"]
            if regex.match(jp_base_url.rstrip("/") + re.sub(r"\{\w+\}", "x_1", p))
        ]
        assert paths, f"{regex.pattern} is not documented"
        for method in implemented(handler):
            assert (paths[0], method) in documented, f"{method.upper()} {paths[0]} undocumented"


async def test_streamed_events_match_their_documented_schemas(
    api: Any, fetch: Any, fake_llm: Any, jp_fetch: Any
) -> None:
    """What a client reads from a stream is what the document (and the panel's generated
    types) says, records inside events included: a tool-calling run, then a session change."""
    from jsonschema import Draft202012Validator
    from referencing import Registry, Resource
    from referencing.jsonschema import DRAFT202012

    from agi_jupyter.testing import FakeToolCall, Turn
    from tests.server.conftest import ndjson, sse_events

    doc = json.loads((await jp_fetch("agi", "openapi.json")).body)
    resource = Resource.from_contents(doc, default_specification=DRAFT202012)
    registry = Registry().with_resource("urn:agi", resource)
    schema = {"$ref": "urn:agi#/components/schemas/Event"}
    validator = Draft202012Validator(schema, registry=registry)
    fake_llm.enqueue(
        Turn(tool_calls=[FakeToolCall("fs_list", {"path": "."})]), Turn(text="Listed.")
    )
    session = (await fetch("sessions", method="POST", json={"agent": "plan"})).data["session"]
    headers = {"Accept": "application/x-ndjson"}
    async with (
        api.client() as client,
        client.stream(
            "POST", f"/sessions/{session['id']}/messages", json={"content": "x"}, headers=headers
        ) as response,
    ):
        events = await ndjson(response)
    assert {"tool.call.output", "message.completed", "usage", "run.final"} <= {
        e["type"] for e in events
    }
    async with (
        api.client() as client,
        client.stream("GET", f"/sessions/{session['id']}/stream") as response,
    ):
        patched = fetch("sessions", session["id"], method="PATCH", json={"title": "new"})
        changed = asyncio.ensure_future(patched)
        async for event in sse_events(response):
            events.append(event["data"])
            break
        await changed
    for event in events:
        errors = [e.message for e in validator.iter_errors(event)]
        assert errors == [], (event["type"], errors)
