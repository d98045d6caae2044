"""Finding the ``codex`` executable.

Order: ``$AGI_CODEX_BIN`` (an explicit choice, so a wrong value is an error rather than a
silent fallback), then ``codex`` on ``PATH``, then ``<sys.prefix>/codex/node_modules/.bin/codex``
where ``scripts/install.sh`` installs the CLI inside our virtual environment.
"""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Mapping
from pathlib import Path

from agi_jupyter.errors import SdkNotAvailable

ENV_VAR = "AGI_CODEX_BIN"
INSTALL_COMMAND = "npm install -g @openai/codex"
INSTALL_HINT = (
    f"install the Codex CLI with `{INSTALL_COMMAND}` (or point {ENV_VAR} at a codex executable)"
)


def venv_codex(prefix: str | Path | None = None) -> Path:
    """Where ``scripts/install.sh`` puts the CLI: under the virtual environment's prefix."""
    return Path(prefix if prefix is not None else sys.prefix) / "codex/node_modules/.bin/codex"


def find_codex(env: Mapping[str, str], *, prefix: str | Path | None = None) -> Path:
    """The ``codex`` executable to run; raises ``SdkNotAvailable`` (with the install command)."""
    explicit = env.get(ENV_VAR)
    if explicit:
        path = Path(explicit).expanduser()
        if _executable(path):
            return path
        raise SdkNotAvailable(f"{ENV_VAR}={explicit} is not an executable file; {INSTALL_HINT}")
    found = shutil.which("codex", path=env.get("PATH", os.defpath))
    if found:
        return Path(found)
    bundled = venv_codex(prefix)
    if _executable(bundled):
        return bundled
    raise SdkNotAvailable(f"the Codex CLI (`codex`) was not found; {INSTALL_HINT}")


def _executable(path: Path) -> bool:
    return path.is_file() and os.access(path, os.X_OK)
