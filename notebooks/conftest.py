"""Validating the example notebooks: ``pytest --nbval notebooks/`` (the test suite runs it too).

Before any kernel starts, a fake LLM server is started in this process and the environment the
kernels inherit is made offline: ``AGI_FAKE_LLM_URL`` points the ``fake`` model at it, provider
keys are removed (no real model can be used), so is ``AGI_REVIEW_MODE`` (the notebooks run
with the product's default review mode unless their own cells say otherwise), and HOME / the
agi config folder are temporary.
The notebooks' store (``notebooks/.agi/``, git-ignored) is emptied first, so every validation
starts from nothing; run ids and times in outputs are sanitized with ``sanitize.cfg``.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

import pytest

HERE = Path(__file__).parent
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
    # The notebooks say their review mode themselves; the product's default (ask) holds.
    "AGI_REVIEW_MODE",
)
_state: dict[str, Any] = {}


def offline_environment(home: Path, fake_url: str) -> dict[str, str]:
    """What a notebook kernel needs to run offline against the fake server."""
    return {
        "HOME": str(home),
        "AGI_CONFIG_DIR": str(home / ".config" / "agi"),
        "IPYTHONDIR": str(home / ".ipython"),
        "AGI_FAKE_LLM_URL": fake_url,
        "PYDEVD_DISABLE_FILE_VALIDATION": "1",
    }


def pytest_configure(config: pytest.Config) -> None:
    if getattr(config.option, "nbval_sanitize_with", "missing") is None:
        config.option.nbval_sanitize_with = str(HERE / "sanitize.cfg")


def pytest_sessionstart(session: pytest.Session) -> None:
    from agi_jupyter.testing import FakeLLMServer

    server = FakeLLMServer()
    server.start()
    home = Path(tempfile.mkdtemp(prefix="agi-notebooks-"))
    _state.update(server=server, home=home, saved=dict(os.environ))
    for key in PROVIDER_KEYS:
        os.environ.pop(key, None)
    os.environ.update(offline_environment(home, server.url))
    shutil.rmtree(HERE / ".agi", ignore_errors=True)


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    server = _state.pop("server", None)
    if server is not None:
        server.stop()
    saved = _state.pop("saved", None)
    if saved is not None:
        os.environ.clear()
        os.environ.update(saved)
    home = _state.pop("home", None)
    if home is not None:
        shutil.rmtree(home, ignore_errors=True)
