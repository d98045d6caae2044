"""Fixtures of the tests against real model servers (``llama_server.py``).

``llama`` (llama.cpp's ``llama-server``) and ``llama_cpp_python`` (llama-cpp-python's server)
are one server each per test process (session scope; under pytest-xdist every worker that
runs these tests starts its own, with one thread). A missing binary or model FAILS the test,
with how to build them: these tests are part of the suite, not optional.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import pytest

from agi_jupyter.app import Agi
from agi_jupyter.kernel.render import RunView
from agi_jupyter.runtime.result import RunResult
from tests.realserver.llama_server import (
    MODEL,
    LlamaCppPythonServer,
    LlamaServer,
    ModelServer,
    NotBuilt,
    RawAnswer,
    chat,
    raw_chat,
)

LOCAL = f"compat:{MODEL}"
PROMPT = "Name three colors."
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


def view_of(events: list[dict[str, Any]]) -> RunView:
    """What the ``%%agi`` output shows of these run events."""
    view = RunView()
    for event in events:
        view.apply(event)
    return view


@dataclass
class Streamed:
    """A ``general`` run of ``PROMPT`` streamed through ``Agi``, and the same request sent raw."""

    events: list[dict[str, Any]]
    text: str  # the streamed deltas joined
    result: RunResult
    raw: RawAnswer


def stream_beside_raw(agi: Agi, server: ModelServer) -> Streamed:
    session = agi.new_session(agent="general", model=LOCAL)
    events = list(agi.stream(PROMPT, session=session.id))
    streamed = "".join(e["delta"] for e in events if e["type"] == "output.text.delta")
    result = agi.result(events[-1]["run_id"])
    assert result.run.status == "succeeded"
    assert streamed == result.text != ""
    assert result.run.system_prompt is not None
    raw = raw_chat(server, chat(result.run.system_prompt, PROMPT), 48)
    return Streamed(events, streamed, result, raw)
