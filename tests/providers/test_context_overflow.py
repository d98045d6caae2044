"""A request larger than the model's context window is reported as a full window, with the
tokens the server gave (llama.cpp's ``exceed_context_size_error``, OpenAI's
``context_length_exceeded``), and is not retried. (The real ``llama-server`` answer:
tests/realserver.)"""

from __future__ import annotations

from dataclasses import replace

import pytest

from agi_jupyter.providers._common import AdapterConfig, http_error

CONFIG = AdapterConfig(name="compat", base_url="http://127.0.0.1:8080/v1", api_key="")
LLAMA = {
    "error": {
        "code": 400,
        "message": "request (2300 tokens) exceeds the available context size (2048 tokens), "
        "try increasing it",
        "type": "exceed_context_size_error",
        "n_prompt_tokens": 2300,
        "n_ctx": 2048,
    }
}
OPENAI = {
    "error": {
        "message": "This model's maximum context length is 128000 tokens.",
        "type": "invalid_request_error",
        "code": "context_length_exceeded",
    }
}


@pytest.mark.parametrize("body", [LLAMA, LLAMA["error"]])  # as the SDK and the wire path pass it
def test_llama_servers_overflow_says_the_window_is_full_with_its_tokens(body: object) -> None:
    error = http_error(CONFIG, 400, {}, body, "Error code: 400")
    assert str(error.message).startswith(
        "compat: HTTP 400: the context window is full: the request has 2300 tokens, "
        "the window 2048 tokens (the server said: request (2300 tokens) exceeds"
    )
    assert error.retryable is False


def test_openais_overflow_says_the_window_is_full() -> None:
    error = http_error(replace(CONFIG, name="openai-chat"), 400, {}, OPENAI, "Error code: 400")
    assert error.message == (
        "openai-chat: HTTP 400: the context window is full (the server said: This model's "
        "maximum context length is 128000 tokens.)"
    )


def test_another_400_is_said_as_the_server_said_it() -> None:
    body = {"error": {"message": "bad request", "type": "invalid_request_error"}}
    error = http_error(CONFIG, 400, {}, body, "Error code: 400")
    assert error.message == "compat: HTTP 400: bad request"
