"""The side panel's client (``labextension/src/api.ts``, ``types.ts``) against the server's
OpenAPI document: every route the panel calls exists with its method and query parameters, and
the record fields the panel reads are fields the API sends. Catches drift on either side
without a browser."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from agi_jupyter.server.openapi import build_openapi

SRC = Path(__file__).resolve().parents[2] / "labextension" / "src"
CALL = re.compile(
    r"this\.(?:json|stream|request)\(\s*'(?P<method>[A-Z]+)',\s*[`'](?P<path>[^`']+)[`'],"
    r"\s*\{(?P<query>[^}]*)\}",
    re.S,
)
INTERFACE = re.compile(r"export interface (?P<name>\w+) \{(?P<body>.*?)\n\}", re.S)
FIELD = re.compile(r"^\s+(?P<name>\w+)\??:", re.M)


def client_calls() -> list[tuple[str, str, set[str]]]:
    source = (SRC / "api.ts").read_text()
    calls = []
    for match in CALL.finditer(source):
        path = "/agi/v1/" + re.sub(r"\$\{enc\(\w+\)\}", "{}", match["path"])
        keys = {item.split(":")[0].strip() for item in match["query"].split(",") if item.strip()}
        calls.append((match["method"], path, keys))
    return calls


@pytest.fixture(scope="module")
def openapi() -> dict[str, Any]:
    return build_openapi()


def test_the_client_calls_only_documented_routes_and_parameters(openapi: dict[str, Any]) -> None:
    documented = {
        (method.upper(), re.sub(r"\{\w+\}", "{}", path)): operation
        for path, operations in openapi["paths"].items()
        for method, operation in operations.items()
    }
    calls = client_calls()
    assert len(calls) >= 15, calls  # the regex still finds the client's calls
    for method, path, keys in calls:
        operation = documented.get((method, path))
        assert operation is not None, f"{method} {path} is not in the OpenAPI document"
        params = {p["name"] for p in operation.get("parameters", []) if p.get("in") == "query"}
        assert keys <= params, f"{method} {path}: unknown query parameters {keys - params}"


@pytest.mark.parametrize(
    ("interface", "schema"),
    [
        ("Session", "Session"),
        ("Run", "Run"),
        ("Artifact", "Artifact"),
        ("Message", "Message"),
        ("AgentInfo", "AgentInfo"),
    ],
)
def test_the_panel_reads_fields_the_api_sends(
    openapi: dict[str, Any], interface: str, schema: str
) -> None:
    types = {m["name"]: m["body"] for m in INTERFACE.finditer((SRC / "types.ts").read_text())}
    fields = set(FIELD.findall(types[interface]))
    sent = set(openapi["components"]["schemas"][schema]["properties"])
    assert fields, interface
    assert fields <= sent, f"{interface} reads fields the API does not send: {fields - sent}"
