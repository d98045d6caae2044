"""The OpenAPI 3.1 document, generated from the route table and the pydantic models.

Schemas come from ``models.py`` (request bodies in validation mode, responses in
serialization mode) and share ``#/components/schemas``; the event union and the
message-part union are ``oneOf`` + ``discriminator`` on ``type``. Streaming operations list
``application/x-ndjson`` and/or ``text/event-stream`` with the ``Event`` schema (one item).
The named kinds (``kinds.py``, ``errors.ErrorCode``) are enum schemas of their own, whose
``x-enum-varnames`` are the members' names: the panel's generated types make them constants.
"""

from __future__ import annotations

import functools
import json
from enum import StrEnum
from typing import Any

from pydantic import BaseModel, TypeAdapter
from pydantic.json_schema import JsonSchemaMode, models_json_schema

from agi_jupyter import __version__
from agi_jupyter.errors import AgiError, ErrorCode
from agi_jupyter.kinds import (
    DecisionDoor,
    MentionKind,
    ReviewMode,
    SdkName,
    StaleReason,
    ToolTrait,
    Verdict,
)
from agi_jupyter.notebook.wire import TabRequest
from agi_jupyter.server.models import ErrorBody, Event, MessagePart, body_required
from agi_jupyter.server.routes import API_VERSION, ROUTES, Route, path_params
from agi_jupyter.server.streaming import NDJSON, SSE

REF = "#/components/schemas/{model}"
# The statuses of codes no AgiError class carries, or carries with another status than the
# one an operation answers (two statuses: 400 on a request, 409 against what a session has).
STATUS_OF_CODE: dict[ErrorCode, tuple[int, ...]] = {
    ErrorCode.SDK_NOT_AVAILABLE: (409,),  # a JSON reply of a run whose SDK this server lacks
    ErrorCode.SDK_MODEL_MISMATCH: (400, 409),  # 409: it conflicts with what the session has
    ErrorCode.UNAUTHORIZED: (401,),
    ErrorCode.FORBIDDEN: (403,),
    ErrorCode.MESSAGE_NOT_FOUND: (404,),
    ErrorCode.PROJECT_NOT_FOUND: (404,),
    ErrorCode.CURSOR_NOT_FOUND: (404,),
    ErrorCode.REQUEST_NOT_FOUND: (404,),
    ErrorCode.MCP_SERVER_NOT_FOUND: (404,),
    ErrorCode.UNDO_CONFLICT: (409,),
    ErrorCode.RUN_ACTIVE: (409,),
    ErrorCode.PAYLOAD_TOO_LARGE: (413,),
    ErrorCode.RATE_LIMITED: (429,),
}
HEADERS_OF_STATUS = {  # response headers every answer with this status carries
    401: {"WWW-Authenticate": "How to authenticate: the Jupyter token (a webhook: its signature)."},
    429: {"Retry-After": "Seconds to wait before trying again."},
    503: {"Retry-After": "Seconds to wait before trying again."},
}
PROJECT_PARAM = {
    "name": "project",
    "in": "query",
    "required": False,
    "description": "The project folder, relative to the server root (default: the configured "
    "default project). It picks the store: <project>/.agi/agi.sqlite, or the project's schema "
    "in a shared PostgreSQL database. A value that names no folder under the root is "
    "PROJECT_NOT_FOUND.",
    "schema": {"type": "string"},
}


def build_openapi() -> dict[str, Any]:
    components = _schemas()
    paths: dict[str, dict[str, Any]] = {}
    for route in ROUTES:
        paths.setdefault(route.path, {})[route.method.lower()] = _operation(route)
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "agi-jupyter",
            "version": API_VERSION,
            "description": "REST and streaming API of the agi-jupyter server extension "
            f"(package {__version__}). Every route needs Jupyter authentication except the "
            "OpenAI webhook, which is authenticated by its signature. Not described here: "
            "`/agi/mcp`, the project's MCP server over streamable HTTP (Model Context "
            "Protocol; POST, GET and DELETE as that protocol defines them, Jupyter "
            "authentication, `?project=` and `?agent=`).",
        },
        "servers": [{"url": "/", "description": "the Jupyter server (prefix its base URL)"}],
        "tags": [{"name": t} for t in dict.fromkeys(r.tag for r in ROUTES)],
        "security": [{"jupyterToken": []}],
        "paths": paths,
        "components": {
            "schemas": components,
            "securitySchemes": {
                "jupyterToken": {
                    "type": "apiKey",
                    "in": "header",
                    "name": "Authorization",
                    "description": "`token <jupyter token>` (or the Jupyter login cookie)",
                }
            },
        },
    }


@functools.cache
def openapi_json() -> str:
    return json.dumps(build_openapi(), indent=1)


def _schemas() -> dict[str, Any]:
    models: dict[tuple[type[BaseModel], JsonSchemaMode], None] = {
        (ErrorBody, "serialization"): None,
        (Event, "serialization"): None,
        (MessagePart, "serialization"): None,
        (TabRequest, "serialization"): None,  # a kernel's request to a tab (over its comm)
    }
    for route in ROUTES:
        if route.body is not None:
            models[(route.body, "validation")] = None
        if route.response is not None:
            models[(route.response, "serialization")] = None
        if route.stream_item is not None:
            models[(route.stream_item, "serialization")] = None
        for _status, model, _when in route.also:
            models[(model, "serialization")] = None
    _, schema = models_json_schema(list(models), ref_template=REF)
    defs: dict[str, Any] = schema.get("$defs", {})
    for (event, field), target in EVENT_PAYLOADS.items():
        prop = defs[event]["properties"][field]
        defs[event]["properties"][field] = {"$ref": REF.format(model=target), **_doc(prop)}
    for kind in KINDS:
        schema = defs.get(kind.__name__) or TypeAdapter(kind).json_schema(ref_template=REF)
        defs[kind.__name__] = {**schema, "x-enum-varnames": [member.name for member in kind]}
    return dict(sorted(defs.items()))


# The named kinds, each an enum schema (those no model uses too) with its members' names.
KINDS: tuple[type[StrEnum], ...] = (
    DecisionDoor,
    ErrorCode,
    MentionKind,
    ReviewMode,
    SdkName,
    StaleReason,
    ToolTrait,
    Verdict,
)


# Event payloads that are records: plain JSON objects in events.py (a bottom module), documented
# here as the record they are, so clients get their types (tests/server/test_openapi.py checks
# real events against these schemas).
EVENT_PAYLOADS = {
    ("MessageCompleted", "message"): "Message",
    ("MessageCreated", "message"): "Message",
    ("SessionCreated", "session"): "Session",
    ("SessionUpdated", "session"): "Session",
    ("RunFinal", "run"): "Run",
}


def _doc(prop: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in prop.items() if k in ("title", "description")}


def _ref(model: type[BaseModel]) -> dict[str, str]:
    return {"$ref": REF.format(model=model.__name__)}


def _operation(route: Route) -> dict[str, Any]:
    operation: dict[str, Any] = {
        "operationId": route.operation_id,
        "summary": route.summary,
        "tags": [route.tag],
        "responses": {
            str(route.status): _success(route),
            **{
                str(status): {
                    "description": when,
                    "content": {"application/json": {"schema": _ref(model)}},
                }
                for status, model, when in route.also
            },
            **_errors(route),
        },
    }
    if route.description:
        operation["description"] = route.description
    parameters = [
        {"name": name, "in": "path", "required": True, "schema": {"type": "string"}}
        for name in path_params(route.path)
    ]
    if route.project:
        parameters.append(PROJECT_PARAM)
    if route.query is not None:
        parameters += _query_params(route.query)
    for name, description in route.headers:
        parameters.append(
            {"name": name, "in": "header", "required": True, "description": description,
             "schema": {"type": "string"}}
        )  # fmt: skip
    if parameters:
        operation["parameters"] = parameters
    if route.body is not None:
        operation["requestBody"] = {
            "required": body_required(route.body),
            "content": {"application/json": {"schema": _ref(route.body)}},
        }
    if not route.authenticated:
        operation["security"] = []
    return operation


def _query_params(model: type[BaseModel]) -> list[dict[str, Any]]:
    schema = model.model_json_schema(ref_template=REF)
    required = set(schema.get("required", []))
    params = []
    for name, prop in schema.get("properties", {}).items():
        param: dict[str, Any] = {"name": name, "in": "query", "required": name in required}
        if prop.get("description"):
            param["description"] = prop["description"]
        param["schema"] = {k: v for k, v in prop.items() if k not in ("description", "title")}
        params.append(param)
    return params


def _success(route: Route) -> dict[str, Any]:
    content: dict[str, Any] = {}
    description = "OK"
    if route.raw_content is not None:
        content[route.raw_content] = {"schema": {}}
    if route.response is not None:
        content["application/json"] = {"schema": _ref(route.response)}
    if "ndjson" in route.streams:
        content[NDJSON] = {"schema": _ref(route.stream_item or Event)}
        description = "Events: one JSON object per line (NDJSON), or SSE, or JSON (by Accept)"
        if route.stream_item is not None and "sse" not in route.streams:
            description = f"JSON, or NDJSON lines (by Accept), each a {route.stream_item.__name__}"
    if "sse" in route.streams:
        content[SSE] = {"schema": _sse_event(_ref(route.stream_item or Event))}
        if "ndjson" not in route.streams:
            description = "Server-sent events: `event:` the type, `data:` the event object"
        if route.stream_item is not None:
            description = f"Server-sent events, each a {route.stream_item.__name__}"
    return {"description": description, "content": content}


def _sse_event(data: dict[str, Any]) -> dict[str, Any]:
    """One server-sent event: before Open API 3.2 (no ``itemSchema``) a ``text/event-stream``
    schema describes each event's fields, and ``data`` is JSON text holding the event object
    (``contentSchema``); describing ``data``'s object as the event itself made every streamed
    event a contract violation to a client that reads the document as written (schemathesis)."""
    return {
        "type": "object",
        "required": ["data"],
        "properties": {
            "event": {"type": "string"},
            "id": {"type": "string"},
            "retry": {"type": "integer"},
            "data": {
                "type": "string",
                "contentMediaType": "application/json",
                "contentSchema": data,
            },
        },
    }


def error_codes(route: Route) -> tuple[ErrorCode, ...]:
    """Every error code the operation can answer with."""
    codes: tuple[ErrorCode, ...] = ()
    if route.query or route.body or route.headers:
        codes += (ErrorCode.VALIDATION_ERROR,)
    if route.authenticated:
        codes += (ErrorCode.UNAUTHORIZED, ErrorCode.FORBIDDEN)
    if route.project:  # the project's store: a shared database may be down
        codes += (ErrorCode.PROJECT_NOT_FOUND, ErrorCode.STORE_UNAVAILABLE)
    if route.query is not None and "cursor" in route.query.model_fields:
        codes += (ErrorCode.CURSOR_NOT_FOUND,)
    if route.body is not None:
        codes += (ErrorCode.PAYLOAD_TOO_LARGE,)
    return tuple(dict.fromkeys(codes + route.errors))


@functools.cache
def _statuses_of_classes() -> dict[ErrorCode, tuple[int, ...]]:
    """The status of each code an ``AgiError`` class declares (``STATUS_OF_CODE`` adds the
    codes answered without one of them, and those answered with two statuses)."""
    found: dict[ErrorCode, tuple[int, ...]] = {}
    classes: list[type[AgiError]] = [AgiError]
    while classes:
        kind = classes.pop()
        classes.extend(kind.__subclasses__())
        found.setdefault(ErrorCode(kind.code), (kind.http_status,))
    return found


def _errors(route: Route) -> dict[str, Any]:
    by_status: dict[int, list[str]] = {}
    for code in error_codes(route):
        for status in STATUS_OF_CODE.get(code) or _statuses_of_classes().get(code, (400,)):
            by_status.setdefault(status, []).append(code)
    answers: dict[str, Any] = {}
    for status, found in sorted(by_status.items()):
        answer: dict[str, Any] = {
            "description": "Error codes: " + ", ".join(found),
            "content": {"application/json": {"schema": _ref(ErrorBody)}},
        }
        headers = HEADERS_OF_STATUS.get(status, {})
        if headers:
            answer["headers"] = {
                name: {"required": True, "description": text, "schema": {"type": "string"}}
                for name, text in headers.items()
            }
        answers[str(status)] = answer
    return answers
