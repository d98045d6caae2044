"""``/agi/v1/completions``: inline completion through the real server extension and the fake LLM.

The fake answers on the wire as each server does: Chat Completions (any provider), llama.cpp's
``/infill`` and Ollama's ``/api/generate`` with a ``suffix``; it records what it was sent and
which streams their client closed before their end.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from agi_jupyter.testing import FakeLLMServer, Fault, Turn
from tests.server.conftest import Api, Fetch, ndjson, wait_for

PREFIX = "def add(a, b):\n"
SUFFIX = "\n\nprint(add(1, 2))\n"
CELL = {"prefix": PREFIX, "suffix": SUFFIX, "language": "python"}


def configure(root: Path, **settings: Any) -> None:
    (root / ".agi").mkdir(exist_ok=True)
    (root / ".agi" / "config.json").write_text(json.dumps(settings))


def model_bodies(fake: FakeLLMServer, path_end: str) -> list[Any]:
    return [r.body for r in fake.requests if r.path.endswith(path_end)]


async def test_a_cells_prefix_and_suffix_give_one_insertion(
    fetch: Fetch, fake_llm: FakeLLMServer
) -> None:
    fake_llm.enqueue(Turn(text="Here it is:\n```python\ndef add(a, b):\n    return a + b\n```\n"))
    reply = await fetch("completions", method="POST", json=CELL)
    assert reply.status == 200, reply
    data = reply.data
    assert data["items"] == [{"insertText": "    return a + b"}]  # no fence, no repeated line
    # the default model's provider (openai here) gives its small fast model, from the catalog
    assert (data["model"], data["via"]) == ("openai:gpt-4.1-nano", "chat")
    [body] = model_bodies(fake_llm, "/responses")
    sent = json.dumps(body["input"])
    assert json.dumps(PREFIX)[1:-1] in sent
    assert json.dumps(SUFFIX)[1:-1] in sent
    assert body["max_output_tokens"] == 128  # completion.max_output_tokens


async def test_completions_are_counted_in_stats_not_stored_as_sessions(
    fetch: Fetch, fake_llm: FakeLLMServer
) -> None:
    fake_llm.enqueue(Turn(text="    return a + b", usage=(40, 6)))
    assert (await fetch("completions", method="POST", json=CELL)).status == 200

    async def counted() -> bool:
        stats = (await fetch("stats")).data
        return bool(stats["completions"]["requests"] == 1)

    await wait_for(counted)
    stats = (await fetch("stats")).data
    assert stats["sessions"] == 0
    assert stats["runs"] == 0
    assert stats["completions"] == {
        "requests": 1,
        "cancelled": 0,
        "input_tokens": 40,
        "output_tokens": 6,
        "cost_usd": pytest.approx((40 * 0.1 + 6 * 0.4) / 1e6),  # gpt-4.1-nano's list price
        "unpriced": 0,
    }


async def test_the_insertion_streams_as_ndjson(api: Api, fake_llm: FakeLLMServer) -> None:
    fake_llm.enqueue(Turn(chunks=["```python\n", "    return", " a + b", "\n```"]))
    async with (
        api.client() as client,
        client.stream(
            "POST", "/completions", json=CELL, headers={"Accept": "application/x-ndjson"}
        ) as response,
    ):
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("application/x-ndjson")
        lines = await ndjson(response)
    texts = [line["insertText"] for line in lines]
    assert texts[:2] == ["    return", "    return a + b"]  # the insertion so far, no fence
    assert lines[-1]["done"] is True
    assert texts[-1] == "    return a + b"
    assert lines[-1]["model"] == "openai:gpt-4.1-nano"
    assert lines[-1]["usage"]["output_tokens"] > 0


async def test_a_superseded_completion_closes_its_model_request(
    api: Api, fetch: Fetch, fake_llm: FakeLLMServer
) -> None:
    # Chat Completions: the role's event, the first text, then the stream waits at the gate
    fake_llm.enqueue(Turn(chunks=["    return", " a", " + b"], fault=Fault(hold_after=2)))
    body = {**CELL, "model": "fake:echo"}
    async with api.client() as client:
        async with client.stream(
            "POST", "/completions", json=body, headers={"Accept": "application/x-ndjson"}
        ) as response:
            async for line in response.aiter_lines():
                if line.strip():
                    break  # the first suggestion arrived; the user typed on
        # the response is closed here, before the model's answer ended
        assert await asyncio.to_thread(fake_llm.wait_closed, 1, 10)  # off the server's loop
    assert [path for path, _ in fake_llm.closed_streams] == ["/v1/chat/completions"]

    async def counted() -> bool:
        return bool((await fetch("stats")).data["completions"]["cancelled"] == 1)

    await wait_for(counted)


async def test_ollama_fills_in_the_middle_with_suffix(
    fetch: Fetch, fake_llm: FakeLLMServer, server_root: Path
) -> None:
    configure(
        server_root,
        providers={"ollama": {"base_url": fake_llm.openai_base_url}},
        completion={"model": "ollama:qwen2.5-coder:1.5b"},
    )
    fake_llm.serve_show({"capabilities": ["completion", "insert"]})
    fake_llm.enqueue(Turn(chunks=["    return", " a + b"], usage=(12, 4)))
    reply = await fetch("completions", method="POST", json=CELL)
    assert reply.status == 200, reply
    assert reply.data["items"] == [{"insertText": "    return a + b"}]
    assert reply.data["via"] == "ollama-suffix"
    assert reply.data["usage"] == {"input_tokens": 12, "output_tokens": 4, "cost_usd": None}
    [body] = model_bodies(fake_llm, "/api/generate")
    assert body["prompt"].endswith(PREFIX)
    assert body["suffix"] == SUFFIX
    assert body["model"] == "qwen2.5-coder:1.5b"
    assert body["stream"] is True


async def test_llama_server_fills_in_the_middle_with_infill(
    fetch: Fetch, fake_llm: FakeLLMServer, server_root: Path
) -> None:
    configure(
        server_root,
        providers={"compat": {"base_url": fake_llm.openai_base_url}},
        completion={"model": "compat:qwen-coder"},
    )
    fake_llm.serve_props({"default_generation_settings": {"n_ctx": 4096}})
    fake_llm.enqueue(Turn(text="    return a + b"))
    cells = [{"cell_type": "markdown", "source": "Adds two numbers."}]
    variables = [{"name": "df", "type": "DataFrame", "summary": "columns a: int64, b: int64"}]
    body = {**CELL, "cells_before": cells, "variables": variables}
    reply = await fetch("completions", method="POST", json=body)
    assert reply.status == 200, reply
    assert reply.data["items"] == [{"insertText": "    return a + b"}]
    assert reply.data["via"] == "llama-infill"
    [sent] = model_bodies(fake_llm, "/infill")
    assert (sent["input_prefix"], sent["input_suffix"]) == (PREFIX, SUFFIX)
    [extra] = sent["input_extra"]
    assert "# Adds two numbers." in extra["text"]  # markdown as a comment
    assert "# df: DataFrame = columns a: int64, b: int64" in extra["text"]


async def test_bad_input_is_a_4xx_with_a_code(fetch: Fetch, fake_llm: FakeLLMServer) -> None:
    too_long = await fetch("completions", method="POST", json={"prefix": "x" * 100_001})
    assert (too_long.status, too_long.error["code"]) == (400, "VALIDATION_ERROR")
    unknown = await fetch("completions", method="POST", json={**CELL, "cursor": 3})
    assert (unknown.status, unknown.error["code"]) == (400, "VALIDATION_ERROR")
    missing = await fetch("completions", method="POST", json={"suffix": ""})
    assert (missing.status, missing.error["code"]) == (400, "VALIDATION_ERROR")
    assert fake_llm.requests == []


async def test_completion_can_be_turned_off_per_language_and_notebook(
    fetch: Fetch, fake_llm: FakeLLMServer, server_root: Path
) -> None:
    configure(
        server_root,
        completion={"languages": {"sql": False}, "notebooks": {"scratch.ipynb": False}},
    )
    settings = (await fetch("completions")).data
    assert settings["disabled_languages"] == ["sql"]
    assert settings["disabled_notebooks"] == ["scratch.ipynb"]
    assert settings["model"] == "openai:gpt-4.1-nano"
    assert settings["debounce_ms"] == 300
    sql = await fetch("completions", method="POST", json={**CELL, "language": "sql"})
    assert (sql.status, sql.error["code"]) == (409, "COMPLETION_DISABLED")
    scratch = await fetch("completions", method="POST", json={**CELL, "path": "scratch.ipynb"})
    assert (scratch.status, scratch.error["code"]) == (409, "COMPLETION_DISABLED")
    assert fake_llm.requests == []


async def test_completions_count_against_the_notebooks_budget(
    fetch: Fetch, fake_llm: FakeLLMServer
) -> None:
    budget = {"path": "work.ipynb", "budget": {"max_tokens": 30}}
    assert (await fetch("notebook-budgets", method="PATCH", json=budget)).status == 200
    fake_llm.enqueue(Turn(text="    return a + b", usage=(25, 5)))
    body = {**CELL, "path": "work.ipynb"}
    assert (await fetch("completions", method="POST", json=body)).status == 200
    # counted on the runtime's store thread before the answer, checked there before the next
    refused = await fetch("completions", method="POST", json=body)
    assert (refused.status, refused.error["code"]) == (409, "BUDGET_EXCEEDED")
    other = await fetch("completions", method="POST", json={**CELL, "path": "other.ipynb"})
    assert other.status == 200
