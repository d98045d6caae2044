"""``agi tools`` and ``GET /agi/v1/tools`` list MCP tools with their server, and say which
servers failed (``%agi tools`` is tested with the kernel magics)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.mcp.helpers import stdio_entry, write_mcp_json

pytestmark = pytest.mark.slow

AGI = str(Path(sys.executable).parent / "agi")


def test_agi_tools_lists_mcp_tools_with_their_server(
    project: Path, agi_env: dict[str, str]
) -> None:
    write_mcp_json(project, {"tools": stdio_entry(), "broken": stdio_entry("crashing.py")})
    done = subprocess.run(
        [AGI, "tools", "--agent", "build", "--json", "--project", str(project)],
        capture_output=True,
        text=True,
        env=agi_env | {"PATH": "/usr/bin:/bin"},
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    tools = {t["name"]: t for t in json.loads(done.stdout)}
    add = tools["mcp.tools.add"]
    assert (add["server"], add["source"]) == ("tools", "mcp:tools")
    assert add["parameters"]["required"] == ["a", "b"]
    assert tools["fs.read"]["server"] is None
    assert "agi: MCP server broken failed:" in done.stderr
    assert "cannot open the database" in done.stderr
    assert not [name for name in tools if name.startswith("mcp.broken.")]
