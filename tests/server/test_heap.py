"""``freeze_gc``: the server moves its long-lived objects out of the cyclic GC's reach, once at
start and once a project's runtime has loaded its model SDK (``server/heap.py``)."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agi_jupyter.app import Agi
from agi_jupyter.server.heap import load_default_provider
from agi_jupyter.testing import FakeLLMServer, Turn
from tests.server.conftest import Fetch


@pytest.fixture
def agi_config() -> dict[str, Any]:
    return {"freeze_gc": True}


@pytest.fixture(autouse=True)
def unfreeze() -> Iterator[None]:
    """The test process is shared: what a test server froze is handed back to the collector."""
    yield
    gc.unfreeze()


async def test_the_server_freezes_its_heap_at_start_and_after_loading_a_project(
    fetch: Fetch, jp_serverapp: Any, fake_llm: FakeLLMServer
) -> None:
    extension = jp_serverapp.web_app.settings["agi"]
    gc.unfreeze()
    await extension._start_jupyter_server_extension(jp_serverapp)  # pytest-jupyter skips it
    assert gc.get_freeze_count() > 0, "frozen when the extension started"
    gc.unfreeze()

    fake_llm.enqueue(Turn(text="hi"))
    reply = await fetch("sessions", method="POST", json={})
    assert reply.status == 201
    frozen = gc.get_freeze_count()
    assert frozen > 0, "frozen again once the project's runtime was made"

    agi = await extension.projects.get(None)
    provider = agi.config.resolve_model()[0]
    assert provider in agi.deps.providers._providers, "the default model's client was loaded"
    session = reply.data["session"]["id"]
    answer = await fetch("sessions", session, "messages", method="POST", json={"content": "x"})
    assert answer.status == 200
    assert "hi" in answer.body.decode()


def test_a_default_model_that_cannot_load_leaves_the_project_usable(tmp_path: Path) -> None:
    env = {"HOME": str(tmp_path / "home"), "AGI_MODEL": "anthropic:claude-haiku-4-5"}
    with Agi(tmp_path / "proj", env=env) as agi:  # no ANTHROPIC_API_KEY
        load_default_provider(agi)
        assert agi.deps.providers._providers == {}
        assert agi.new_session().id  # the project still works
