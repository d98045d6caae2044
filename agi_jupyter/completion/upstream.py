"""The model requests of a completion: fill-in-the-middle on local servers, else a chat turn.

Each source is an async generator of text pieces that notes the tokens the server reported in
a ``Spent``. Closing the generator early (the suggestion is superseded, its block closed)
closes the HTTP response, and with it the connection: the upstream request is cut, not left
to finish (``h1_transport`` closes a connection whose body was not read to its end).

- ``llama_infill``: llama.cpp's ``POST /infill`` (SSE of ``{"content", "stop"}``; the last
  one has ``tokens_evaluated`` and ``tokens_predicted``);
- ``ollama_suffix``: Ollama's ``POST /api/generate`` with ``suffix`` (NDJSON of
  ``{"response", "done"}``; the last one has ``prompt_eval_count`` and ``eval_count``);
- ``chat_pieces``: any provider's adapter, with ``prompt.chat_prompt``.

A server that refuses fill-in-the-middle (HTTP 4xx: a model without FIM tokens) raises
``FimRefused``, so the caller asks the chat endpoint instead.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Mapping
from dataclasses import dataclass
from typing import Any

import httpx2
import orjson

from agi_jupyter.completion.prompt import Context, chat_prompt
from agi_jupyter.errors import ProviderDisconnected, ProviderError, ProviderHTTPError
from agi_jupyter.providers.base import Provider, ProviderRequest, TextDelta, Usage
from agi_jupyter.providers.openai_http import body_chunks
from agi_jupyter.providers.sse import sse_events
from agi_jupyter.records import ChatMessage, TextPart

Pieces = AsyncGenerator[str, None]


@dataclass
class Spent:
    """The tokens the server reported (None: it did not say)."""

    input_tokens: int | None = None
    output_tokens: int | None = None

    def usage(self) -> Usage | None:
        if self.input_tokens is None or self.output_tokens is None:
            return None
        return Usage(input_tokens=self.input_tokens, output_tokens=self.output_tokens)


class FimRefused(ProviderError):
    """The server does not fill in the middle for this model."""


async def chat_pieces(
    provider: Provider, model: str, context: Context, max_tokens: int, spent: Spent
) -> Pieces:
    system, user = chat_prompt(context)
    request = ProviderRequest(
        model=model,
        system=system,
        messages=[ChatMessage(role="user", parts=[TextPart(text=user)])],
        max_output_tokens=max_tokens,
    )
    stream = provider.stream(request)
    try:
        async for event in stream:
            if isinstance(event, TextDelta):
                yield event.text
            elif isinstance(event, Usage):
                spent.input_tokens = (spent.input_tokens or 0) + event.input_tokens
                spent.output_tokens = (spent.output_tokens or 0) + event.output_tokens
    finally:
        aclose = getattr(stream, "aclose", None)
        if aclose is not None:
            await aclose()


@dataclass(frozen=True)
class FimCall:
    """One fill-in-the-middle request: the server's root URL (no ``/v1``), the model, the
    bounded context, the output limit, and where the reported tokens go."""

    client: httpx2.AsyncClient
    root: str
    model: str
    context: Context
    max_tokens: int
    spent: Spent


async def llama_infill(call: FimCall) -> Pieces:
    context, spent = call.context, call.spent
    body: dict[str, Any] = {
        "model": call.model,
        "input_prefix": context.prefix,
        "input_suffix": context.suffix,
        "input_extra": [{"filename": context.path or "context", "text": context.extra}]
        if context.extra
        else [],
        "prompt": "",
        "n_predict": call.max_tokens,
        "stream": True,
        "cache_prompt": True,
    }
    async with _post(call.client, f"{call.root}/infill", body) as response:
        await _check(response, "llama-server /infill")
        async for event in sse_events(body_chunks(response)):
            data = _object(orjson.loads(event.data))
            text = data.get("content")
            if isinstance(text, str) and text:
                yield text
            if data.get("stop"):
                spent.input_tokens = _int(data.get("tokens_evaluated"))
                spent.output_tokens = _int(data.get("tokens_predicted"))
                return


async def ollama_suffix(call: FimCall) -> Pieces:
    context, spent = call.context, call.spent
    body = {
        "model": call.model,
        "prompt": context.extra + context.prefix,
        "suffix": context.suffix,
        "stream": True,
        "options": {"num_predict": call.max_tokens, "temperature": 0},
    }
    async with _post(call.client, f"{call.root}/api/generate", body) as response:
        await _check(response, "ollama /api/generate")
        async for line in response.aiter_lines():
            if not line.strip():
                continue
            data = _object(orjson.loads(line))
            if data.get("error"):
                raise ProviderError(f"ollama: {str(data['error'])[:300]}")
            text = data.get("response")
            if isinstance(text, str) and text:
                yield text
            if data.get("done"):
                spent.input_tokens = _int(data.get("prompt_eval_count"))
                spent.output_tokens = _int(data.get("eval_count"))
                return


def _post(client: httpx2.AsyncClient, url: str, body: Mapping[str, Any]) -> Any:
    return client.stream(
        "POST", url, content=orjson.dumps(body), headers={"Content-Type": "application/json"}
    )


async def _check(response: httpx2.Response, what: str) -> None:
    if response.status_code < 400:
        return
    raw = (await response.aread()).decode("utf-8", "replace")[:300]
    if 400 <= response.status_code < 500 and response.status_code not in (408, 429):
        raise FimRefused(f"{what}: HTTP {response.status_code} {raw}")
    raise ProviderHTTPError(
        f"{what}: HTTP {response.status_code} {raw}", status=response.status_code
    )


def _object(value: object) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise ProviderError("the server sent a line that is not a JSON object")
    return value


def _int(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def disconnected(error: httpx2.TransportError, what: str) -> ProviderDisconnected:
    return ProviderDisconnected(f"{what}: {type(error).__name__}: {error}"[:300])
