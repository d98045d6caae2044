"""Helpers of the MCP tests (importable from other test folders)."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

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
