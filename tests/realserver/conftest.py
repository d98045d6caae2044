"""Fixtures of the tests against real model servers (``llama_server.py``).

``llama`` (llama.cpp's ``llama-server``) and ``llama_cpp_python`` (llama-cpp-python's server)
are one server each per test process (session scope; under pytest-xdist every worker that
runs these tests starts its own, with one thread). A missing binary or model FAILS the test,
with how to build them: these tests are part of the suite, not optional.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any, TypeVar

import pytest

from agi_jupyter.app import Agi
from tests.realserver.llama_server import (
    MODEL,
    LlamaCppPythonServer,
    LlamaServer,
    ModelServer,
    NotBuilt,
)

LOCAL = f"compat:{MODEL}"
S = TypeVar("S", bound=ModelServer)
MakeLlamaAgi = Callable[..., Agi]


def threads() -> int:
    """Two threads alone, one per server when xdist runs two workers on the 2 cores."""
    return 1 if int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1")) > 1 else 2


def start_server(kind: type[S], port: int | None = None) -> S:
    missing = ""
    try:
        server = kind(threads=threads(), port=port)
    except NotBuilt as e:
        missing = str(e)
    if missing:
        pytest.fail(missing, pytrace=False)
    server.start()
    return server


@pytest.fixture(scope="session")
def llama() -> Iterator[LlamaServer]:
    server = start_server(LlamaServer)
    yield server
    server.stop()


@pytest.fixture
def own_llama() -> Iterator[LlamaServer]:
    """A server of the test's own, for a test that kills it."""
    server = start_server(LlamaServer)
    yield server
    server.stop()


@pytest.fixture(scope="session")
def llama_cpp_python() -> Iterator[LlamaCppPythonServer]:
    server = start_server(LlamaCppPythonServer)
    yield server
    server.stop()


def llama_config(
    server: ModelServer, *, max_output_tokens: int = 48, **config: Any
) -> dict[str, Any]:
    """Config of a project whose ``compat`` provider is ``server`` (fast run retries; greedy;
    a short answer unless said otherwise: the tiny model repeats itself up to its limit)."""
    return {
        "retry_backoff": [0.01, 0.01, 0.01],
        "providers": {"compat": {"base_url": server.base_url}},
        "models": {LOCAL: {"max_output_tokens": max_output_tokens, "temperature": 0}},
        **config,
    }


@pytest.fixture
def make_llama_agi(tmp_path: Path) -> Iterator[MakeLlamaAgi]:
    """``make(server, env=..., **config)``: an ``Agi`` on a fresh project (``env`` added to its
    environment); closed after the test."""
    made: list[Agi] = []
    project = tmp_path / "proj"
    (project / ".agi").mkdir(parents=True)
    base_env = {"HOME": str(tmp_path / "home"), "AGI_REVIEW_MODE": "auto"}

    def make(server: ModelServer, env: Mapping[str, str] | None = None, **config: Any) -> Agi:
        agi = Agi(project, env={**base_env, **(env or {})}, config=llama_config(server, **config))
        made.append(agi)
        return agi

    yield make
    for agi in made:
        agi.close()
