"""How every door writes a cost, and why an answer stopped short (stdlib only: the kernel's
``%%agi`` view imports it too).

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
