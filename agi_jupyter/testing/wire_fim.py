"""Fill-in-the-middle on the wire, as local servers speak it.

llama.cpp's ``llama-server``, ``POST /infill`` (``{"input_prefix", "input_suffix",
"input_extra": [{"filename", "text"}], "prompt", "n_predict", "stream"}``): streamed as SSE
``data:`` lines of ``{"content": ..., "stop": false}``, the last one ``{"content": "",
"stop": true, "tokens_predicted", "tokens_evaluated", "timings"}``; not streamed, one such
object with the whole ``content``.

Ollama, ``POST /api/generate`` with a ``suffix`` (``{"model", "prompt", "suffix", "stream",
"options"}``; ``stream`` is true unless false): streamed as NDJSON lines of ``{"model",
"created_at", "response", "done": false}``, the last one ``{"response": "", "done": true,
"done_reason": "stop", "prompt_eval_count", "eval_count"}``; not streamed, one such object
with the whole ``response``.
"""

from __future__ import annotations

from datetime import UTC, datetime

from agi_jupyter.testing.plan import Plan, SSEEvent
from agi_jupyter.testing.script import JSON


def infill_events(plan: Plan) -> list[SSEEvent]:
    events = [SSEEvent.of({"content": chunk, "stop": False}) for chunk in plan.text_chunks]
    return [*events, SSEEvent.of(_infill_last(plan, ""), final=True)]


def infill_body(plan: Plan, *, truncated: bool = False) -> JSON:
    return _infill_last(plan, plan.text)


def _infill_last(plan: Plan, content: str) -> JSON:
    return {
        "content": content,
        "stop": True,
        "stop_type": "limit" if plan.hit_max_tokens else "eos",
        "model": plan.model,
        "tokens_predicted": plan.usage.output_tokens,
        "tokens_evaluated": plan.usage.input_tokens,
        "timings": {"prompt_n": plan.usage.input_tokens, "predicted_n": plan.usage.output_tokens},
    }


def ollama_events(plan: Plan) -> list[SSEEvent]:
    """The NDJSON lines (``SSEEvent.data`` each, written one a line)."""
    events = [SSEEvent.of(_ollama_line(plan, chunk)) for chunk in plan.text_chunks]
    return [*events, SSEEvent.of(_ollama_last(plan, ""), final=True)]


def ollama_body(plan: Plan, *, truncated: bool = False) -> JSON:
    return _ollama_last(plan, plan.text)


def _ollama_line(plan: Plan, text: str) -> JSON:
    return {
        "model": plan.model,
        "created_at": datetime.fromtimestamp(plan.created, UTC).isoformat(),
        "response": text,
        "done": False,
    }


def _ollama_last(plan: Plan, text: str) -> JSON:
    return {
        **_ollama_line(plan, text),
        "done": True,
        "done_reason": "length" if plan.hit_max_tokens else "stop",
        "prompt_eval_count": plan.usage.input_tokens,
        "eval_count": plan.usage.output_tokens,
    }
