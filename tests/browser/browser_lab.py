"""A real JupyterLab server for the browser tests, isolated from the user's Jupyter setup.

JupyterLab runs as its own process (``tests/jupyterlab_server.py``) with the fake LLM server
behind it through ``AGI_FAKE_LLM_URL``, so every model call of the panel and of a notebook's
``%%agi`` goes to the test's scripted fake. The side panel is loaded from the repository's
build (``agi_jupyter/labextension``) through ``JUPYTER_PATH``, so the tests always exercise the
current build; ``tests/packaging`` checks the installed-wheel path.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from tests.jupyterlab_server import LabServer, offline_env, start_jupyterlab

__all__ = ["REPO", "LabServer", "extension_dir", "lab_env", "start_lab"]

REPO = Path(__file__).resolve().parents[2]
BUILT_EXTENSION = REPO / "agi_jupyter" / "labextension"


def extension_dir() -> Path:
    """The built side panel: the repository's build, else an installed copy."""
    if (BUILT_EXTENSION / "static" / "style.js").is_file():
        return BUILT_EXTENSION
    installed = Path(sys.prefix) / "share" / "jupyter" / "labextensions" / "agi-jupyter"
    if (installed / "static" / "style.js").is_file():
        return installed
    raise RuntimeError(
        "the side panel is not built: run `npm install && npm run build:prod` in labextension/ "
        "(scripts/install.sh does it through the editable install)"
    )


def lab_env(base: Path, fake_url: str) -> dict[str, str]:
    env = offline_env()
    data = base / "jupyter-data"
    (data / "labextensions").mkdir(parents=True, exist_ok=True)
    link = data / "labextensions" / "agi-jupyter"
    if not link.exists():
        link.symlink_to(extension_dir(), target_is_directory=True)
    config = base / "jupyter-config"
    config.mkdir(exist_ok=True)
    (config / "jupyter_server_config.json").write_text(
        json.dumps({"ServerApp": {"jpserver_extensions": {"agi_jupyter": True}}})
    )
    # No "get notified about Jupyter news?" toast over the screenshots.
    (config / "labconfig").mkdir(exist_ok=True)
    (config / "labconfig" / "page_config.json").write_text(
        json.dumps({"disabledExtensions": {"@jupyterlab/apputils-extension:announcements": True}})
    )
    env.update(
        {
            "HOME": str(base / "home"),
            "JUPYTER_PATH": str(data),
            "JUPYTER_CONFIG_DIR": str(config),
            "JUPYTER_DATA_DIR": str(base / "jupyter-user-data"),
            "JUPYTER_RUNTIME_DIR": str(base / "jupyter-runtime"),
            "AGI_FAKE_LLM_URL": fake_url,
        }
    )
    (base / "home").mkdir(exist_ok=True)
    return env


def start_lab(
    base: Path,
    fake_url: str,
    timeout: float = 60.0,
    *,
    rtc: bool = False,
    database_url: str | None = None,
) -> LabServer:
    """Start JupyterLab over ``base/root`` and wait until it and the ``/agi`` API answer
    (with real-time collaboration when ``rtc``; its store in PostgreSQL at ``database_url``,
    its kernels too, when given)."""
    root = base / "root"
    (root / ".agi").mkdir(parents=True, exist_ok=True)
    (root / ".agi" / "config.json").write_text(
        json.dumps({"default_model": "fake:echo", "default_agent": "build"})
    )
    env = lab_env(base, fake_url)
    if database_url:
        env["AGI_DATABASE_URL"] = database_url
    return start_jupyterlab(
        root,
        env,
        base / "jupyterlab.log",
        extra_args=["--LabApp.expose_app_in_browser=True"],
        ready_paths=["api/status", "agi/v1/agents"],
        timeout=timeout,
        rtc=rtc,
    )


def write_notebook(
    root: Path,
    name: str,
    cells: list[tuple[str, str, str]],
    outputs: Mapping[str, list[dict[str, Any]]] | None = None,
) -> bytes:
    """Write a Python notebook of ``(id, kind, source)`` cells (``outputs``: a code cell's, by
    id, then numbered as executed) under ``root``; its bytes."""
    outputs = outputs or {}
    ran = [cell_id for cell_id, _, _ in cells if cell_id in outputs]
    notebook = {
        "nbformat": 4,
        "nbformat_minor": 5,
        "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3",
                                    "language": "python"}},
        "cells": [
            {"cell_type": kind, "id": cell_id, "metadata": {}, "source": source,
             **({"outputs": outputs.get(cell_id, []),
                 "execution_count": ran.index(cell_id) + 1 if cell_id in ran else None}
                if kind == "code" else {})}
            for cell_id, kind, source in cells
        ],
    }  # fmt: skip
    path = root / name
    path.write_text(json.dumps(notebook, indent=1))
    return path.read_bytes()


def end_kernel_sessions(lab: LabServer) -> None:
    """End every kernel session of ``lab`` (its notebooks' kernels)."""
    for session in lab.api("GET", "api/sessions") or []:
        lab.api("DELETE", f"api/sessions/{session['id']}")
