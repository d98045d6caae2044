"""OpenAI Responses through the real ``openai`` SDK against the fake server."""

from __future__ import annotations

import json
import time
from typing import Any

import openai
import pytest

from agi_jupyter.testing import FakeLLMServer, FakeToolCall, Fault, Turn


def _events(client: openai.OpenAI, **kwargs: Any) -> list[Any]:
    stream = client.responses.create(model="gpt-fake", input="hello", stream=True, **kwargs)
    with stream:
        return list(stream)


def _poll(client: openai.OpenAI, response_id: str, statuses: set[str]) -> Any:
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        response = client.responses.retrieve(response_id)
        if response.status in statuses:
            return response
        time.sleep(0.02)
    raise AssertionError(f"{response_id} never reached {statuses}")


def test_streamed_text_and_event_order(fake_llm: FakeLLMServer, oai: openai.OpenAI) -> None:
    fake_llm.enqueue(Turn(text="Hello from responses."))
    events = _events(oai)
    deltas = [e.delta for e in events if e.type == "response.output_text.delta"]
    assert "".join(deltas) == "Hello from responses."
    types = [e.type for e in events if e.type != "response.output_text.delta"]
    assert types == [
        "response.created",
        "response.in_progress",
        "response.output_item.added",
        "response.content_part.added",
        "response.output_text.done",
        "response.content_part.done",
        "response.output_item.done",
        "response.completed",
    ]
    assert [e.sequence_number for e in events] == list(range(len(events)))
    completed = events[-1].response
    assert completed.status == "completed"
    assert completed.output_text == "Hello from responses."
    assert completed.id.startswith("resp_")


def test_function_calls_in_completed_response(fake_llm: FakeLLMServer, oai: openai.OpenAI) -> None:
    args = {"query": "weather in Paris", "days": 3}
    fake_llm.enqueue(
        Turn(tool_calls=[FakeToolCall("search", args, chunks=5), FakeToolCall("now", id="call_x")])
    )
    events = _events(oai)
    arg_deltas = [e for e in events if e.type == "response.function_call_arguments.delta"]
    assert len(arg_deltas) == 5 + 2
    calls = [o for o in events[-1].response.output if o.type == "function_call"]
    assert [c.name for c in calls] == ["search", "now"]
    assert json.loads(calls[0].arguments) == args
    assert calls[0].call_id.startswith("call_")
    assert calls[0].id.startswith("fc_")
    assert calls[1].call_id == "call_x"
    assert not any(o.type == "message" for o in events[-1].response.output)


def test_stream_helper_accepts_the_sequence(fake_llm: FakeLLMServer, oai: openai.OpenAI) -> None:
    fake_llm.enqueue(
        Turn(
            text="Answer.",
            reasoning="Thinking it over.",
            tool_calls=[FakeToolCall("f", {"x": [1, 2]})],
            citations=[("https://example.org/paper", "Paper")],
        )
    )
    with oai.responses.stream(model="gpt-fake", input="hello") as stream:
        response = stream.get_final_response()
    assert [o.type for o in response.output] == ["reasoning", "message", "function_call"]
    assert response.output_text == "Answer."
    assert response.output[0].summary[0].text == "Thinking it over."


def test_reasoning_summary_and_usage(fake_llm: FakeLLMServer, oai: openai.OpenAI) -> None:
    fake_llm.enqueue(Turn(text="42", reasoning="Six times seven.", usage=(50, 10)))
    events = _events(oai)
    summary = [e.delta for e in events if e.type == "response.reasoning_summary_text.delta"]
    assert "".join(summary) == "Six times seven."
    usage = events[-1].response.usage
    assert (usage.input_tokens, usage.output_tokens, usage.total_tokens) == (50, 10, 60)
    assert usage.output_tokens_details.reasoning_tokens == 3
    assert usage.input_tokens_details.cached_tokens == 0


def test_encrypted_reasoning_when_included(fake_llm: FakeLLMServer, oai: openai.OpenAI) -> None:
    fake_llm.enqueue(Turn(text="x", reasoning="r"))
    response = oai.responses.create(
        model="gpt-fake", input="q", include=["reasoning.encrypted_content"]
    )
    assert response.output[0].encrypted_content


def test_citations_become_annotations(fake_llm: FakeLLMServer, oai: openai.OpenAI) -> None:
    text = "See https://a.example for details."
    fake_llm.enqueue(Turn(text=text, citations=[("https://a.example", "A"), ("https://b", "B")]))
    events = _events(oai)
    added = [e for e in events if e.type == "response.output_text.annotation.added"]
    assert [e.annotation_index for e in added] == [0, 1]
    annotations = events[-1].response.output[0].content[0].annotations
    assert [(a.url, a.title) for a in annotations] == [
        ("https://a.example", "A"),
        ("https://b", "B"),
    ]
    assert text[annotations[0].start_index : annotations[0].end_index] == "https://a.example"
    assert (annotations[1].start_index, annotations[1].end_index) == (0, len(text))


def test_non_streaming(fake_llm: FakeLLMServer, oai: openai.OpenAI) -> None:
    fake_llm.enqueue(Turn(text="Plain answer.", tool_calls=[FakeToolCall("t", {"a": 1})]))
    response = oai.responses.create(model="gpt-fake", input="q", instructions="Be brief.")
    assert response.status == "completed"
    assert response.output_text == "Plain answer."
    assert response.output[1].arguments == '{"a":1}'
    assert response.instructions == "Be brief."
    assert oai.responses.retrieve(response.id).output_text == "Plain answer."


def test_background_completes_on_request(fake_llm: FakeLLMServer, oai: openai.OpenAI) -> None:
    fake_llm.enqueue(Turn(text="# Report", background_delay=60, response_id="resp_deep1"))
    created = oai.responses.create(model="o3-deep-research", input="research", background=True)
    assert (created.id, created.status, created.output) == ("resp_deep1", "queued", [])
    assert oai.responses.retrieve("resp_deep1").status == "in_progress"
    fake_llm.complete_background("resp_deep1")
    done = _poll(oai, "resp_deep1", {"completed"})
    assert done.output_text == "# Report"
    assert done.usage is not None


def test_background_completes_by_itself(fake_llm: FakeLLMServer, oai: openai.OpenAI) -> None:
    fake_llm.enqueue(Turn(text="later", background_delay=0.1))
    created = oai.responses.create(model="m", input="q", background=True)
    assert _poll(oai, created.id, {"completed"}).output_text == "later"


def test_background_fault_fails(fake_llm: FakeLLMServer, oai: openai.OpenAI) -> None:
    fake_llm.enqueue(Turn(text="never", fault=Fault(body={"message": "research exploded"})))
    created = oai.responses.create(model="m", input="q", background=True)
    failed = _poll(oai, created.id, {"failed"})
    assert failed.error is not None
    assert failed.error.message == "research exploded"


def test_background_cancel(fake_llm: FakeLLMServer, oai: openai.OpenAI) -> None:
    fake_llm.enqueue(Turn(text="x", background_delay=60))
    created = oai.responses.create(model="m", input="q", background=True)
    assert oai.responses.cancel(created.id).status == "cancelled"
    fake_llm.complete_background(created.id)
    assert oai.responses.retrieve(created.id).status == "cancelled"


def test_cancel_finished_response_is_an_error(fake_llm: FakeLLMServer, oai: openai.OpenAI) -> None:
    response = oai.responses.create(model="m", input="q")
    with pytest.raises(openai.BadRequestError):
        oai.responses.cancel(response.id)


def test_unknown_response_is_not_found(oai: openai.OpenAI) -> None:
    with pytest.raises(openai.NotFoundError):
        oai.responses.retrieve("resp_missing")


def test_rate_limit_on_create(fake_llm: FakeLLMServer, oai: openai.OpenAI) -> None:
    fake_llm.enqueue(Turn(fault=Fault(status=429, headers={"retry-after": "0.05"})))
    with pytest.raises(openai.RateLimitError) as info:
        oai.responses.create(model="m", input="q", background=True)
    assert info.value.response.headers["retry-after"] == "0.05"


def test_dropped_stream_raises(fake_llm: FakeLLMServer, oai: openai.OpenAI) -> None:
    fake_llm.enqueue(Turn(text="one two three", fault=Fault(drop_after=4)))
    seen: list[str] = []
    with pytest.raises(openai.APIConnectionError):  # noqa: PT012
        for event in oai.responses.create(model="m", input="q", stream=True):
            seen.append(event.type)
    assert len(seen) == 4


def test_truncated_stream_has_no_completed(fake_llm: FakeLLMServer, oai: openai.OpenAI) -> None:
    fake_llm.enqueue(Turn(text="cut", fault=Fault(truncate=True)))
    types = [e.type for e in _events(oai)]
    assert "response.completed" not in types
    assert types[-1] == "response.output_item.done"


def test_truncated_non_streaming_is_incomplete(fake_llm: FakeLLMServer, oai: openai.OpenAI) -> None:
    fake_llm.enqueue(Turn(text="cut", fault=Fault(truncate=True)))
    response = oai.responses.create(model="m", input="q")
    assert response.status == "incomplete"
    assert response.incomplete_details is not None
    assert response.incomplete_details.reason == "max_output_tokens"
