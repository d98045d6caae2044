"""A JupyterLab for the kernel's browser test: offline, isolated, our server extension off.

JupyterLab runs as its own process (``tests/jupyterlab_server.py``); its kernels inherit
``AGI_FAKE_LLM_URL`` (the test's fake server) and no provider key. Only the notebook front
doors are exercised here (the widget and the magics come from the kernel), so the agi server
extension is disabled.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from tests.jupyterlab_server import LabServer, offline_env, start_jupyterlab

REPO = Path(__file__).resolve().parents[2]
ARTIFACTS = Path(os.environ.get("AGI_TEST_ARTIFACTS", REPO / "test-artifacts")) / "kernel"

Lab = LabServer

__all__ = ["ARTIFACTS", "Lab", "start_lab"]


def start_lab(base: Path, fake_url: str, timeout: float = 60.0) -> LabServer:
    root = base / "root"
    root.mkdir(parents=True, exist_ok=True)
    config = base / "jupyter-config"
    config.mkdir(exist_ok=True)
    (config / "jupyter_server_config.json").write_text(
        json.dumps({"ServerApp": {"jpserver_extensions": {"agi_jupyter": False}}})
    )
    # No "get notified about Jupyter news?" toast over the screenshots.
    (config / "labconfig").mkdir(exist_ok=True)
    (config / "labconfig" / "page_config.json").write_text(
        json.dumps({"disabledExtensions": {"@jupyterlab/apputils-extension:announcements": True}})
    )
    home = base / "home"
    home.mkdir(exist_ok=True)
    env = offline_env(
        HOME=str(home),
        JUPYTER_CONFIG_DIR=str(config),
        JUPYTER_DATA_DIR=str(base / "jupyter-data"),
        JUPYTER_RUNTIME_DIR=str(base / "jupyter-runtime"),
        IPYTHONDIR=str(home / ".ipython"),
        AGI_CONFIG_DIR=str(home / ".config" / "agi"),
        AGI_FAKE_LLM_URL=fake_url,
    )
    return start_jupyterlab(root, env, base / "jupyterlab.log", timeout=timeout)
