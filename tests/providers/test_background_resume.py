"""A background Responses stream that drops is resumed where it broke (seed 001 §9.5; issue
29.10): ``GET /responses/{id}?stream=true&starting_after=N`` instead of a new request that pays
for the whole answer again — on both read paths, and through a whole run."""

from __future__ import annotations

import pytest

from agi_jupyter.errors import ProviderDisconnected
from agi_jupyter.providers import Finish, ProviderEvent, ResponseId, TextDelta
from agi_jupyter.testing import FakeLLMServer, Fault, Turn
from tests.providers.conftest import Collect, MakeProvider
from tests.providers.test_providers_streams import drain, of_type, request

WORDS = [f"w{i} " for i in range(30)]
WIRES = pytest.mark.parametrize("wire", ["http", "sdk"])


def background() -> dict[str, object]:
    return {"background": True}


@pytest.mark.asyncio
@WIRES
async def test_a_dropped_background_stream_is_resumed_after_its_last_event(
    wire: str, make_provider: MakeProvider, collect: Collect, fake_llm: FakeLLMServer
) -> None:
    fake_llm.enqueue(Turn(chunks=WORDS, fault=Fault(drop_after=12)))
    events = await collect(make_provider("openai", wire=wire), request(extra_body=background()))
    assert "".join(e.text for e in of_type(events, TextDelta)) == "".join(WORDS)  # once each
    assert len(of_type(events, ResponseId)) == 1
    assert len(of_type(events, Finish)) == 1
    post, resume = fake_llm.requests
    assert (post.method, resume.method) == ("POST", "GET")
    assert resume.path.endswith(f"/responses/{of_type(events, ResponseId)[0].id}")


@pytest.mark.asyncio
@WIRES
async def test_a_foreground_stream_is_not_resumed(
    wire: str, make_provider: MakeProvider, fake_llm: FakeLLMServer
) -> None:
    fake_llm.enqueue(Turn(chunks=WORDS, fault=Fault(drop_after=12)))
    seen: list[ProviderEvent] = []
    with pytest.raises(ProviderDisconnected):
        await drain(make_provider("openai", wire=wire), request(), seen)
    assert [r.method for r in fake_llm.requests] == ["POST"]  # left to the run's retry
