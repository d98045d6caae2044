"""How deep research runs are executed: model, tools, polling, what is kept."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

DEFAULT_MODEL = "o3-deep-research"


def _default_tools() -> tuple[dict[str, Any], ...]:
    return ({"type": "web_search_preview"},)


@dataclass(frozen=True)
class ResearchSettings:
    """Settings of ``deep_research`` runs (the server passes its traitlets here).

    ``webhooks``: a webhook secret is configured, so completion is expected as an OpenAI
    webhook; responses are then polled only every ``fallback_poll_interval`` in case a delivery
    is lost. Without webhooks (a local Jupyter server usually cannot be reached from the
    internet) ``responses.retrieve`` is polled every ``poll_interval`` seconds.
    """

    model: str = DEFAULT_MODEL
    poll_interval: float = 10.0
    webhooks: bool = False
    fallback_poll_interval: float = 600.0
    persist_raw_response: bool = False
    tools: tuple[dict[str, Any], ...] = field(default_factory=_default_tools)
    orphan_grace: float = 600.0  # seconds a webhook event waits for a run with its response id
    stuck_after: float = 300.0  # seconds before a run left processing_webhook is retried

    @property
    def next_poll_in(self) -> float:
        """Seconds until a waiting run is polled again."""
        if self.webhooks:
            return max(self.poll_interval, self.fallback_poll_interval)
        return self.poll_interval
