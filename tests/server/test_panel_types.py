"""The side panel's TypeScript types (``labextension/src/openapi.ts``) are generated from the
OpenAPI document the server serves, by ``labextension/scripts/gen-types.mjs``
(openapi-typescript); the client calls only what they document, which ``npm run typecheck``
checks. Here: the committed file is what the generator makes of the served document today."""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path
from typing import Any

import pytest

LABEXTENSION = Path(__file__).resolve().parents[2] / "labextension"


@pytest.mark.slow
async def test_the_panel_types_are_generated_from_the_served_document(
    jp_fetch: Any, tmp_path: Path
) -> None:
    node = shutil.which("node")
    assert node, "node is needed to check the panel's generated types (scripts/test.sh has it)"
    assert (LABEXTENSION / "node_modules" / "openapi-typescript").is_dir(), (
        "run `npm install` in labextension/ (scripts/test.sh does)"
    )
    served = tmp_path / "openapi.json"
    served.write_bytes((await jp_fetch("agi", "openapi.json")).body)
    check = await asyncio.create_subprocess_exec(
        node,
        "scripts/gen-types.mjs",
        "--check",
        "--input",
        str(served),
        cwd=LABEXTENSION,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )
    output, _ = await asyncio.wait_for(check.communicate(), timeout=120)
    assert check.returncode == 0, output.decode()
