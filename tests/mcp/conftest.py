"""MCP tests: real MCP servers written with the ``mcp`` SDK (``servers/``), started as real
processes, against the runtime tests' fixtures (a project, the fake LLM, ``make_agi``)."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator

import pytest

from tests.mcp.helpers import MODEL, PYTHON, SERVERS, stdio_entry, wait_until, write_mcp_json
from tests.runtime.conftest import MakeAgi, agi_env, make_agi, project

__all__ = [
    "MODEL",
    "MakeAgi",
    "agi_env",
    "make_agi",
    "project",
    "stdio_entry",
    "wait_until",
    "write_mcp_json",
]


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
