"""Fixtures for the notebook front doors.

``kernel_env``: the environment of an offline notebook (fake LLM server, no provider keys, a
private HOME), applied to this process and inherited by kernels it starts. ``shell``: an
in-process IPython shell with ``%load_ext agi_jupyter`` on a temporary project; ``cell`` runs
code in it and returns the captured outputs. ``restart`` drops the extension's state (a new
kernel's fresh notebook session) while keeping the user namespace.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from agi_jupyter.store import Store, create_store
from agi_jupyter.testing import FakeLLMServer

PROVIDER_KEYS = (
    "OPENAI_API_KEY",
    "ANTHROPIC_API_KEY",
    "GEMINI_API_KEY",
    "GOOGLE_API_KEY",
    "OPENROUTER_API_KEY",
    "AGI_MODEL",
    "AGI_AGENT",
    "OPENAI_BASE_URL",
    "ANTHROPIC_BASE_URL",
    "JPY_SESSION_NAME",
)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    folder = tmp_path / "proj"
    (folder / ".agi").mkdir(parents=True)
    return folder


def open_store(folder: Path) -> Store:
    """The store the test's kernels write to: the folder's SQLite file, or PostgreSQL when the
    test runs on it (``kernel_env`` sets ``AGI_DATABASE_URL``)."""
    return create_store(folder, database_url=os.environ.get("AGI_DATABASE_URL"))


@pytest.fixture
def kernel_env(
    tmp_path: Path,
    fake_llm: FakeLLMServer,
    monkeypatch: pytest.MonkeyPatch,
    backend_env: dict[str, str],
) -> dict[str, str]:
    """Every kernel test runs twice: on SQLite and on PostgreSQL (``AGI_DATABASE_URL``)."""
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    for key in (*PROVIDER_KEYS, "AGI_DATABASE_URL"):
        monkeypatch.delenv(key, raising=False)
    env = {
        "HOME": str(home),
        "AGI_CONFIG_DIR": str(home / ".config" / "agi"),
        "IPYTHONDIR": str(home / ".ipython"),
        "AGI_FAKE_LLM_URL": fake_llm.url,
        **backend_env,
    }
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    return env


@dataclass
class CellRun:
    """``outputs``: what a front end keeps of the cell (its saved outputs), display updates
    applied as messages; ``published``: every display, update and ``clear`` in order."""

    result: Any
    outputs: list[dict[str, Any]]
    stdout: str
    stderr: str
    published: list[dict[str, Any]]

    @property
    def value(self) -> Any:
        return self.result.result

    @property
    def error(self) -> BaseException | None:
        error: BaseException | None = self.result.error_in_exec or self.result.error_before_exec
        return error

    def last_text(self, mime: str = "text/plain") -> str:
        shown = [o["data"].get(mime, "") for o in self.outputs if o.get("data")]
        shown = [text for text in shown if text]
        return str(shown[-1]) if shown else ""


RunCell = Callable[..., CellRun]


@pytest.fixture(scope="session")
def ipython_shell() -> Any:
    from IPython.core.interactiveshell import InteractiveShell
    from traitlets.config import Config

    config = Config()
    config.HistoryManager.enabled = False
    return InteractiveShell.instance(config=config)


@pytest.fixture
def shell(ipython_shell: Any, project: Path, kernel_env: dict[str, str]) -> Iterator[Any]:
    """The shell with the extension loaded on ``project``; unloaded (runtime closed) after."""
    ip = ipython_shell
    ip.reset(new_session=False)
    history = ip.history_manager
    history.input_hist_parsed[:] = [""]
    history.input_hist_raw[:] = [""]
    history.output_hist.clear()
    ip.execution_count = 1
    _load(ip, project)
    yield ip
    _unload(ip)


def _load(ip: Any, project: Path) -> None:
    ip.run_line_magic("load_ext", "agi_jupyter")
    magics = ip.magics_manager.registry["AgiMagics"]
    magics.project = str(project)
    magics.update_rate = 0.0


def _unload(ip: Any) -> None:
    ip.run_line_magic("unload_ext", "agi_jupyter")


@pytest.fixture
def restart(shell: Any, project: Path) -> Callable[[], None]:
    """A kernel restart as the extension sees it: a fresh context and notebook session."""

    def do_restart() -> None:
        _unload(shell)
        _load(shell, project)

    return do_restart


@pytest.fixture
def cell(shell: Any) -> RunCell:
    from IPython.utils.capture import capture_output

    def run(code: str, *, cell_id: str | None = None) -> CellRun:
        published: list[dict[str, Any]] = []
        with capture_output() as captured:
            publisher = shell.display_pub
            publish, clear = publisher.publish, publisher.clear_output

            def record(data: Any, metadata: Any = None, *args: Any, **kwargs: Any) -> None:
                published.append(
                    {"data": data, "metadata": metadata, "update": kwargs.get("update", False)}
                )
                publish(data, metadata, *args, **kwargs)

            def record_clear(wait: bool = False) -> None:
                published.append({"clear": True, "wait": wait})
                clear(wait)

            publisher.publish, publisher.clear_output = record, record_clear
            result = shell.run_cell(code, store_history=True, cell_id=cell_id)
        outputs = [
            {"data": o.data, "metadata": o.metadata, "update": getattr(o, "update", False)}
            for o in captured.outputs
        ]
        sys.stdout.flush()
        return CellRun(result, outputs, captured.stdout, captured.stderr, published)

    return run


@pytest.fixture
def ctx(shell: Any) -> Any:
    from agi_jupyter.kernel.context import context_for

    return context_for(shell)
