"""Fixtures of the tests against a real llama.cpp ``llama-server`` (``llama_server.py``).

``llama`` is one server per test process (session scope; under pytest-xdist every worker that
runs these tests starts its own, with one thread). A missing binary or model FAILS the test,
with how to build them: these tests are part of the suite, not optional.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from agi_jupyter.app import Agi
from tests.realserver.llama_server import MODEL, LlamaServer, NotBuilt

LOCAL = f"compat:{MODEL}"
MakeLlamaAgi = Callable[..., Agi]


def threads() -> int:
    """Two threads alone, one per server when xdist runs two workers on the 2 cores."""
    return 1 if int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1")) > 1 else 2


def start_server(port: int | None = None) -> LlamaServer:
    missing = ""
    try:
        server = LlamaServer(threads=threads(), port=port)
    except NotBuilt as e:
        missing = str(e)
    if missing:
        pytest.fail(missing, pytrace=False)
    server.start()
    return server


@pytest.fixture(scope="session")
def llama() -> Iterator[LlamaServer]:
    server = start_server()
    yield server
    server.stop()


@pytest.fixture
def own_llama() -> Iterator[LlamaServer]:
    """A server of the test's own, for a test that kills it."""
    server = start_server()
    yield server
    server.stop()


def llama_config(
    server: LlamaServer, *, max_output_tokens: int = 48, **config: Any
) -> dict[str, Any]:
    """Config of a project whose ``compat`` provider is ``server`` (fast run retries; a short
    answer unless said otherwise: the tiny model repeats itself up to its limit)."""
    return {
        "retry_backoff": [0.01, 0.01, 0.01],
        "providers": {"compat": {"base_url": server.base_url}},
        "models": {LOCAL: {"max_output_tokens": max_output_tokens}},
        **config,
    }


@pytest.fixture
def make_llama_agi(tmp_path: Path) -> Iterator[MakeLlamaAgi]:
    """``make(server, **config)``: an ``Agi`` on a fresh project; closed after the test."""
    made: list[Agi] = []
    project = tmp_path / "proj"
    (project / ".agi").mkdir(parents=True)
    env = {"HOME": str(tmp_path / "home"), "AGI_REVIEW_MODE": "auto"}

    def make(server: LlamaServer, **config: Any) -> Agi:
        agi = Agi(project, env=env, config=llama_config(server, **config))
        made.append(agi)
        return agi

    yield make
    for agi in made:
        agi.close()
