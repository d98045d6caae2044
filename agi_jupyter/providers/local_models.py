"""The models a local OpenAI-compatible server serves, read from its ``GET /models``.

A hosted provider's models are in the catalog; a local server (Ollama, LM Studio, vLLM,
llama.cpp's server as ``compat``) serves whatever the user loaded, so ``agi models``,
``%agi models`` and ``GET /agi/v1/providers`` ask it. Each server gets a short timeout and the
servers are asked at once; a server that is down or answers nonsense is an ``error`` string
in the result, never an exception: listing must work while some servers are off.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from agi_jupyter.model_specs import KNOWN_PROVIDERS

if TYPE_CHECKING:
    from agi_jupyter.config import ProviderSettings

LIST_TIMEOUT = 2.0  # seconds per server: a local server answers at once or is not there
MAX_ERROR_CHARS = 200


@dataclass(frozen=True)
class LocalModels:
    """What one local server said: its model ids, or why they could not be read."""

    provider: str
    base_url: str
    models: list[str] = field(default_factory=list)
    error: str | None = None


def is_local(settings: ProviderSettings) -> bool:
    """A provider on a server the user runs: OpenAI-compatible and needing no key."""
    known = KNOWN_PROVIDERS.get(settings.name)
    return (
        known is not None
        and settings.wire == "openai-chat"
        and not known.requires_key
        and settings.name != "fake"
    )


def list_local_models(
    providers: Mapping[str, ProviderSettings], *, timeout: float = LIST_TIMEOUT
) -> dict[str, LocalModels]:
    """The models of every enabled local provider with a base URL, by provider name."""
    local = [s for s in providers.values() if s.enabled and s.base_url and is_local(s)]
    if not local:
        return {}
    with ThreadPoolExecutor(max_workers=len(local)) as pool:
        results = list(pool.map(lambda s: server_models(s, timeout=timeout), local))
    return {r.provider: r for r in results}


def server_models(settings: ProviderSettings, *, timeout: float = LIST_TIMEOUT) -> LocalModels:
    """Ask one server for its models (``GET {base_url}/models``)."""
    import httpx2  # the SDKs' HTTP client, installed with them; imported when listing only

    base_url = (settings.base_url or "").rstrip("/")
    headers = {"Authorization": f"Bearer {settings.api_key}"} if settings.api_key else {}
    try:
        response = httpx2.get(f"{base_url}/models", headers=headers, timeout=timeout)
        response.raise_for_status()
        ids = model_ids(response.json())
    except httpx2.HTTPStatusError as e:
        return LocalModels(settings.name, base_url, error=f"HTTP {e.response.status_code}")
    except httpx2.HTTPError as e:
        reason = str(e) or type(e).__name__
        return LocalModels(settings.name, base_url, error=_short(f"unreachable: {reason}"))
    except ValueError as e:  # not JSON, or not the OpenAI list shape
        return LocalModels(settings.name, base_url, error=_short(f"unexpected answer: {e}"))
    return LocalModels(settings.name, base_url, models=ids)


def model_ids(body: object) -> list[str]:
    """The ids of an OpenAI-style model list ``{"data": [{"id": ...}, ...]}`` (Ollama's
    ``/v1/models`` and llama.cpp's too), sorted."""
    data = body.get("data") if isinstance(body, Mapping) else None
    if not isinstance(data, list):
        raise ValueError("no 'data' list of models")
    return sorted(str(m["id"]) for m in _objects(data) if m.get("id"))


def _objects(items: Iterable[object]) -> Iterable[Mapping[str, object]]:
    return (m for m in items if isinstance(m, Mapping))


def _short(text: str) -> str:
    return text[:MAX_ERROR_CHARS]
