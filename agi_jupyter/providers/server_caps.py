"""What a local server says about the model it serves: whether its chat template takes tools,
its context window, and how it fills in the middle (inline completion).

A local model's chat template may have no place for tools: llama.cpp's ``llama-server`` then
drops them silently (the request is accepted, the model never sees them), so a run that offers
tools gets answers that ignore them. The server says so, and the runtime asks once per server
and model (``ServerCapsCache``) before offering tools:

- llama.cpp's ``llama-server``: ``GET {root}/props`` → ``chat_template_caps.supports_tools``,
  and ``default_generation_settings.n_ctx`` (the context window it was started with);
- Ollama: ``POST {root}/api/show {"model": …}`` → ``capabilities`` (``"tools"`` among them),
  and ``model_info["<arch>.context_length"]``.

Fill-in-the-middle: llama-server serves ``POST /infill`` (``fill_in_middle="llama-infill"``;
a model without FIM tokens answers it with an error, and completion falls back to chat);
Ollama's ``POST /api/generate`` takes a ``suffix`` for models whose capabilities include
``"insert"`` (``"ollama-suffix"``).

``root`` is the base URL without its ``/v1``. A server that has neither endpoint, is down or
answers nonsense gives ``ServerCaps()`` (nothing known): never an error of the run.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

FillInMiddle = Literal["llama-infill", "ollama-suffix"]

CAPS_TIMEOUT = 2.0  # seconds per request: a local server answers at once or is not there


@dataclass(frozen=True)
class ServerCaps:
    """What the server said; None: it did not say."""

    supports_tools: bool | None = None
    context_window: int | None = None
    source: str | None = None  # "llama-server /props" | "ollama /api/show"
    fill_in_middle: FillInMiddle | None = None


def server_root(base_url: str) -> str:
    """``http://host:8080/v1`` → ``http://host:8080`` (where ``/props`` and ``/api`` live)."""
    root = base_url.rstrip("/")
    return root.removesuffix("/v1")


def read_caps(
    base_url: str, model: str, *, api_key: str | None = None, timeout: float = CAPS_TIMEOUT
) -> ServerCaps:
    """Ask the server at ``base_url`` (blocking): llama-server's ``/props``, else Ollama's
    ``/api/show``."""
    import httpx2  # the SDKs' HTTP client, installed with them

    root = server_root(base_url)
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    with httpx2.Client(timeout=timeout, headers=headers) as client:
        for ask in (_llama_props, _ollama_show):
            try:
                found = ask(client, root, model)
            except (httpx2.HTTPError, ValueError):
                continue
            if found is not None:
                return found
    return ServerCaps()


def _llama_props(client: Any, root: str, model: str) -> ServerCaps | None:
    response = client.get(f"{root}/props")
    if response.status_code != 200:
        return None
    body = response.json()
    if not isinstance(body, Mapping):
        return None
    caps = body.get("chat_template_caps")
    tools = caps.get("supports_tools") if isinstance(caps, Mapping) else None
    settings = body.get("default_generation_settings")
    n_ctx = settings.get("n_ctx") if isinstance(settings, Mapping) else None
    if not isinstance(tools, bool) and not isinstance(n_ctx, int):
        return None
    return ServerCaps(
        supports_tools=tools if isinstance(tools, bool) else None,
        context_window=n_ctx if isinstance(n_ctx, int) and n_ctx > 0 else None,
        source="llama-server /props",
        fill_in_middle="llama-infill",
    )


def _ollama_show(client: Any, root: str, model: str) -> ServerCaps | None:
    response = client.post(f"{root}/api/show", json={"model": model})
    if response.status_code != 200:
        return None
    body = response.json()
    if not isinstance(body, Mapping):
        return None
    capabilities = body.get("capabilities")
    info = body.get("model_info")
    windows = [
        v
        for k, v in (info.items() if isinstance(info, Mapping) else ())
        if str(k).endswith(".context_length") and isinstance(v, int)
    ]
    if not isinstance(capabilities, list) and not windows:
        return None
    return ServerCaps(
        supports_tools=("tools" in capabilities) if isinstance(capabilities, list) else None,
        context_window=windows[0] if windows else None,
        source="ollama /api/show",
        fill_in_middle=(
            "ollama-suffix" if isinstance(capabilities, list) and "insert" in capabilities else None
        ),
    )


class ServerCapsCache:
    """``read_caps`` once per (base URL, model) in this process, off the runtime loop."""

    def __init__(self) -> None:
        self._found: dict[tuple[str, str], ServerCaps] = {}
        self._locks: dict[tuple[str, str], asyncio.Lock] = {}

    async def get(self, base_url: str, model: str, api_key: str | None = None) -> ServerCaps:
        key = (base_url, model)
        found = self._found.get(key)
        if found is not None:
            return found
        async with self._locks.setdefault(key, asyncio.Lock()):
            found = self._found.get(key)
            if found is None:
                found = await asyncio.to_thread(read_caps, base_url, model, api_key=api_key)
                self._found[key] = found
        return found
