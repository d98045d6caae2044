"""``agi --help`` and friends stay fast: the runtime, the store and the SDKs load only when a
command needs them."""

from __future__ import annotations

import subprocess
import sys

HEAVY = (
    "agi_jupyter.app",
    "agi_jupyter.store",
    "openai",
    "anthropic",
    "jupyter_server",
    "nbformat",
)


def test_importing_the_cli_loads_no_runtime_and_no_sdk() -> None:
    code = (
        "import sys\n"
        "from agi_jupyter.cli import cli\n"
        f"print([m for m in {HEAVY!r} if m in sys.modules])\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )

    assert done.stdout.strip() == "[]"
