"""A real jupyter server with the extension (pytest-jupyter), pointed at the fake LLM server.

pytest-jupyter's fixtures and its hooks that run plain ``async def`` tests on the server's
loop are imported here, so they apply to this folder only. Tests that use ``jp_fetch`` are
plain ``async def`` functions with no asyncio mark (RECIPES.md).
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
from pytest_jupyter.jupyter_server import *  # noqa: F403
from tornado.httpclient import HTTPClientError, HTTPResponse

from agi_jupyter.store import Store, create_store
from agi_jupyter.testing import FakeLLMServer

Fetch = Callable[..., Awaitable["Reply"]]
TERMINAL = ("succeeded", "failed", "cancelled")


class Reply:
    def __init__(self, response: HTTPResponse) -> None:
        self.status = response.code
        self.headers = response.headers
        self.body = response.body or b""

    @property
    def data(self) -> Any:
        return json.loads(self.body)

    @property
    def error(self) -> dict[str, str]:
        error: dict[str, str] = self.data["error"]
        return error

    def __repr__(self) -> str:
        return f"<Reply {self.status} {self.body[:200]!r}>"


@pytest.fixture
def agi_config() -> dict[str, Any]:
    """``c.AgiExtensionApp`` settings of the test server; override in a module to change."""
    return {}


@pytest.fixture
def jp_server_config(agi_config: dict[str, Any]) -> dict[str, Any]:
    # gc.freeze() would be process-wide here: the tests share one process (test_extension
    # checks the setting in a server of its own).
    settings = {"tick_interval": 0.0, "heartbeat_interval": 0.0, "freeze_gc": False, **agi_config}
    return {
        "ServerApp": {"jpserver_extensions": {"agi_jupyter": True}},
        "AgiExtensionApp": settings,
    }


@pytest.fixture(autouse=True)
def agi_env(
    monkeypatch: pytest.MonkeyPatch,
    fake_llm: FakeLLMServer,
    tmp_path: Path,
    backend_env: dict[str, str],
) -> None:
    """Every provider (and the default ``fake`` model) talks to the test's fake server; the
    store is the test's backend (every server test runs on SQLite and on PostgreSQL)."""
    for name, value in backend_env.items():
        monkeypatch.setenv(name, value)
    for name in ("AGI_DATABASE_URL", "AGI_PROJECT_NAMESPACE"):
        if name not in backend_env:
            monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-openai-secret-0001")
    monkeypatch.setenv("OPENAI_BASE_URL", fake_llm.openai_base_url)
    monkeypatch.setenv("AGI_FAKE_LLM_URL", fake_llm.openai_base_url)
    monkeypatch.setenv("AGI_CONFIG_DIR", str(tmp_path / "agi-config"))
    for name in ("AGI_MODEL", "AGI_AGENT", "AGI_PERSIST_DELTAS", "OPENAI_WEBHOOK_SECRET"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)


def project_store(project: Path) -> Store:
    """The store of ``project`` as the server opens it: on the test's backend."""
    return create_store(project, database_url=os.environ.get("AGI_DATABASE_URL"))


@pytest.fixture
def fetch(jp_fetch: Callable[..., Awaitable[HTTPResponse]]) -> Fetch:
    """``jp_fetch`` under /agi/v1 that returns error answers instead of raising; ``json=``
    sends a JSON body."""

    async def call(*parts: str, **kwargs: Any) -> Reply:
        if "json" in kwargs:
            kwargs["body"] = json.dumps(kwargs.pop("json"))
        if kwargs.get("method") in ("POST", "PATCH") and "body" not in kwargs:
            kwargs["body"] = b""
        try:
            response = await jp_fetch("agi", "v1", *parts, **kwargs)
        except HTTPClientError as e:
            if e.response is None:
                raise
            return Reply(e.response)
        return Reply(response)

    return call


class Api:
    """A real HTTP client (httpx) for the server's /agi/v1, for streams and disconnects."""

    def __init__(self, base: str, headers: dict[str, str]) -> None:
        self.base = base
        self.headers = headers

    def client(self, **kwargs: Any) -> httpx.AsyncClient:
        return httpx.AsyncClient(
            base_url=self.base, headers=self.headers, timeout=kwargs.pop("timeout", 30), **kwargs
        )


@pytest.fixture
def api(
    jp_serverapp: Any,
    http_server_client: Any,
    jp_base_url: str,
    jp_auth_header: dict[str, str],
) -> Api:
    return Api(http_server_client.get_url(f"{jp_base_url}agi/v1"), dict(jp_auth_header))


@pytest.fixture
def server_root(jp_root_dir: Path) -> Path:
    return Path(jp_root_dir)


async def ndjson(response: httpx.Response) -> list[dict[str, Any]]:
    return [json.loads(line) async for line in response.aiter_lines() if line.strip()]


async def sse_frames(response: httpx.Response) -> AsyncIterator[dict[str, str]]:
    """Parse a text/event-stream as written: {"event", "id", "data"} per event, ``data`` the
    text of its ``data:`` lines (comments skipped)."""
    event: dict[str, str] = {}
    data: list[str] = []
    async for line in response.aiter_lines():
        if not line:
            if data:
                yield {**event, "data": "\n".join(data)}
            event, data = {}, []
            continue
        if line.startswith(":"):
            continue
        field, _, value = line.partition(":")
        value = value.removeprefix(" ")
        if field == "data":
            data.append(value)
        elif field in ("event", "id"):
            event[field] = value


async def sse_events(response: httpx.Response) -> AsyncIterator[dict[str, Any]]:
    """Parse a text/event-stream: yields {"event", "id", "data"} per event, ``data`` decoded."""
    async for frame in sse_frames(response):
        yield {**frame, "data": json.loads(frame["data"])}


async def wait_for(
    check: Callable[[], Awaitable[bool]], within: float = 15.0, every: float = 0.05
) -> None:
    deadline = asyncio.get_running_loop().time() + within
    while asyncio.get_running_loop().time() < deadline:
        if await check():
            return
        await asyncio.sleep(every)
    raise AssertionError("condition not met in time")


async def run_status(fetch: Fetch, run_id: str, **kwargs: Any) -> str:
    reply = await fetch("runs", run_id, **kwargs)
    status: str = reply.data["run"]["status"]
    return status


async def wait_run(
    fetch: Fetch, run_id: str, statuses: tuple[str, ...] = TERMINAL, **kw: Any
) -> Any:
    async def done() -> bool:
        return await run_status(fetch, run_id, **kw) in statuses

    await wait_for(done)
    return (await fetch("runs", run_id, **kw)).data["run"]
