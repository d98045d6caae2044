"""Notebooks open in a running JupyterLab: one writer per open notebook.

While a notebook is open in a tab, the tab's model (or the shared document) is the truth; a
process writing the file behind it gets a "File Changed" dialog whose *Overwrite* drops what
was written. So ``agi undo`` without ``--server`` first looks for a Jupyter server on this
machine serving the project (``jupyter_server``'s runtime files, the way ``jupyter server
list`` finds them) whose sessions hold one of the notebooks the undo would change: such an
undo goes through that server (its ``/agi/v1`` changes the notebook through the tab), or,
when that server cannot do it, is refused without writing anything.
"""

from __future__ import annotations

import json
import urllib.request
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ASK_TIMEOUT = 5.0


@dataclass(frozen=True)
class OpenLab:
    """A running Jupyter server with some of the notebooks open."""

    url: str
    token: str
    root: Path
    paths: tuple[str, ...]  # the notebooks open there (relative to the project)

    def project_under_root(self, project: Path) -> str:
        """The project folder as the server's ``?project=`` names it."""
        relative = project.resolve().relative_to(self.root).as_posix()
        return "" if relative == "." else relative


def open_in_lab(project: Path, notebooks: Iterable[str]) -> OpenLab | None:
    """The first running Jupyter server over ``project`` that has one of ``notebooks``
    (relative to the project) open; None when none has."""
    wanted = list(dict.fromkeys(notebooks))
    if not wanted:
        return None
    project = project.resolve()
    for info in _running_servers():
        root = Path(str(info.get("root_dir") or info.get("notebook_dir") or "")).resolve()
        if not project.is_relative_to(root):
            continue
        open_paths = _open_notebooks(str(info.get("url") or ""), str(info.get("token") or ""))
        hits = tuple(p for p in wanted if (project / p).relative_to(root).as_posix() in open_paths)
        if hits:
            return OpenLab(str(info["url"]), str(info.get("token") or ""), root, hits)
    return None


def _running_servers() -> Iterator[dict[str, Any]]:
    from jupyter_server.serverapp import list_running_servers

    yield from list_running_servers()


def _open_notebooks(url: str, token: str) -> set[str]:
    """The notebooks (relative to the server's root) its sessions hold; none if it does not
    answer (a server that is gone leaves its runtime file behind)."""
    request = urllib.request.Request(url.rstrip("/") + "/api/sessions")
    if token:
        request.add_header("Authorization", f"token {token}")
    try:
        with urllib.request.urlopen(request, timeout=ASK_TIMEOUT) as response:
            sessions = json.loads(response.read() or b"[]")
    except (OSError, ValueError):
        return set()
    return {
        str(s.get("path") or "").strip("/")
        for s in sessions
        if isinstance(s, dict) and s.get("type") in ("notebook", None)
    }
