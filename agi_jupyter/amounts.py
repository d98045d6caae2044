"""How every door writes a cost, why an answer stopped short and how full the context is
(stdlib only: the kernel's ``%%agi`` view imports it too).

Unknown is never written as 0: a cost nobody measured (a model turn without usage, or a model
without a catalog price) is ``?`` (``UNKNOWN``) in the CLI, the magics, the chat widget and
the ``%%agi`` footer; a total of the measured costs says how many it leaves out.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

UNKNOWN = "?"  # how every door prints a count or a cost nobody measured: never as 0


def usd(value: float | None) -> str:
    """``$0.0012``; ``?`` for a cost that is unknown (no usage, or no catalog price)."""
    return UNKNOWN if value is None else f"${value:.4f}"


def known_usd(known: float, unknown: int, what: str = "answers") -> str:
    """A total of the measured costs that leaves ``unknown`` items out: ``$0.0012 + ? (2
    answers of unknown cost)``."""
    if not unknown:
        return usd(known)
    return f"{usd(known)} + {UNKNOWN} ({unknown} {what} of unknown cost)"


def stop_note(meta: Mapping[str, Any]) -> str | None:
    """Why an answer (a message's ``meta``, or a run's ``usage``) stopped short, or None:
    the context window was full (with the tokens), or the output token limit."""
    if meta.get("context_full"):
        window = meta.get("context_window")
        used = meta.get("context_tokens")
        tokens = f" ({used} of {window} tokens)" if window and used is not None else ""
        return f"truncated: the context window is full{tokens}"
    if meta.get("truncated"):
        return "truncated: output token limit"
    return None


def context_gauge(gauge: Mapping[str, Any] | None) -> str | None:
    """How full a model's context was at its last request (``runtime/context.py``'s gauge:
    a message's ``meta["context"]``, or a ``usage`` event's ``context_*`` fields): ``context
    4,210 / 128,000 tokens (3%), compacts past 119,000``; None without a gauge."""
    tokens = None if not gauge else gauge.get("tokens")
    if not gauge or not isinstance(tokens, int):
        return None
    window, at = gauge.get("window"), gauge.get("compacts_at")
    if not window:
        return f"context {tokens:,} tokens (window unknown)"
    text = f"context {tokens:,} / {window:,} tokens ({100 * tokens // window}%)"
    return f"{text}, compacts past {at:,}" if at else text


def usage_gauge(event: Mapping[str, Any]) -> dict[str, Any] | None:
    """The context gauge a ``usage`` event carries (None: none, e.g. another SDK's run)."""
    if event.get("context_tokens") is None:
        return None
    return {
        "tokens": event.get("context_tokens"),
        "window": event.get("context_window"),
        "compacts_at": event.get("compacts_at"),
    }


def token_counts(input_tokens: int, output_tokens: int, cached: int = 0) -> str:
    """``1200 in (900 cached) / 20 out tokens``."""
    cached_note = f" ({cached} cached)" if cached else ""
    return f"{input_tokens} in{cached_note} / {output_tokens} out tokens"
