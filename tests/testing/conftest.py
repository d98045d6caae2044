"""Real SDK clients pointed at the session's fake LLM server (closed after each test)."""

from __future__ import annotations

from collections.abc import Iterator

import anthropic
import openai
import pytest

from agi_jupyter.testing import FakeLLMServer


@pytest.fixture
def oai(fake_llm: FakeLLMServer) -> Iterator[openai.OpenAI]:
    client = openai.OpenAI(base_url=fake_llm.openai_base_url, api_key="sk-test", max_retries=0)
    yield client
    client.close()


@pytest.fixture
def claude(fake_llm: FakeLLMServer) -> Iterator[anthropic.Anthropic]:
    client = anthropic.Anthropic(
        base_url=fake_llm.anthropic_base_url, api_key="sk-ant-test", max_retries=0
    )
    yield client
    client.close()
