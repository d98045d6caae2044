"""MCP tests: real MCP servers written with the ``mcp`` SDK (``servers/``), started as real
processes, against the runtime tests' fixtures (a project, the fake LLM, ``make_agi``)."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.runtime.conftest import MakeAgi, agi_env, make_agi, project

__all__ = ["MakeAgi", "agi_env", "make_agi", "project"]

SERVERS = Path(__file__).parent / "servers"
PYTHON = sys.executable
MODEL = "openai-chat:gpt-4o-mini"


def stdio_entry(script: str = "stdio_tools.py", *args: str, **extra: Any) -> dict[str, Any]:
    """An ``mcpServers`` entry that runs one of the test servers."""
    return {"command": PYTHON, "args": [str(SERVERS / script), *args], **extra}


def write_mcp_json(folder: Path, servers: dict[str, Any]) -> Path:
    path = folder / "mcp.json" if folder.name == ".agi" else folder / ".agi" / "mcp.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"mcpServers": servers}))
    return path


def wait_until(condition: Any, timeout: float = 20.0, step: float = 0.05) -> bool:
    """Poll ``condition`` until it is true (bounded); its last value."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value or time.monotonic() > deadline:
            return bool(value)
        time.sleep(step)


@pytest.fixture(scope="session")
def http_server() -> Iterator[str]:
    """A running streamable-HTTP MCP server (a real process); its endpoint URL."""
    process = subprocess.Popen(
        [PYTHON, str(SERVERS / "http_tools.py")],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        assert process.stdout is not None
        line = process.stdout.readline().strip()
        assert line.startswith("PORT "), line
        yield f"http://127.0.0.1:{line.split()[1]}/mcp"
    finally:
        process.terminate()
        process.wait(timeout=10)
        if process.stdout is not None:
            process.stdout.close()
