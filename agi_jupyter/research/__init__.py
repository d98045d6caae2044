"""Deep research runs and OpenAI webhooks (DESIGN.md section 8).

A ``deep_research`` run is executed by ``DeepResearch``: a background Responses request
(``background: true``, the configured deep research model, the web search tool, an
idempotency key per attempt), completed by a verified webhook or by polling, ending in a
``deep_research_report`` artifact and an assistant message that references it. Nothing here
imports ``openai`` or ``standardwebhooks`` until it is used.
"""

from agi_jupyter.research.deep_research import DeepResearch
from agi_jupyter.research.report import REPORT_KIND, Report, build_report
from agi_jupyter.research.settings import DEFAULT_MODEL, ResearchSettings
from agi_jupyter.research.webhooks import (
    InvalidSignature,
    WebhookDelivery,
    WebhookNotConfigured,
    store_delivery,
    verify_webhook,
)

__all__ = [
    "DEFAULT_MODEL",
    "REPORT_KIND",
    "DeepResearch",
    "InvalidSignature",
    "Report",
    "ResearchSettings",
    "WebhookDelivery",
    "WebhookNotConfigured",
    "build_report",
    "store_delivery",
    "verify_webhook",
]
