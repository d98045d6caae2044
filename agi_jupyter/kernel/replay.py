"""Notebook reproducibility: which recorded run a ``%%agi`` cell may replay.

A cell's *rendered request* is what decides the model's answer: the prompt after interpolation
and context, the agent, provider and model, the options that reach the model (thinking level,
iteration limit, the session's tools) and the session's prior messages. Its sha256 is stored as
``runs.request_hash``. When a cell renders a request whose hash a succeeded run of this
notebook already has, that run is replayed (``Agi.replay``) instead of calling the model, and
its ``python`` tool calls are run again so the kernel namespace is rebuilt.

Every kernel start opens a fresh session, so after "Restart & Run All" the first cell's request
(empty history) matches the first cell of the earlier run, the replayed messages make the
second cell's history match too, and so on down the notebook; an edited prompt changes its own
hash and, through the history, the hashes of the cells after it.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from agi_jupyter.records import Message, Run, part_to_dict

if TYPE_CHECKING:
    from agi_jupyter.app import Agi

HASH_VERSION = 1


@dataclass(frozen=True)
class RenderedRequest:
    prompt: str
    agent: str
    provider: str
    model: str
    thinking_level: str | None = None
    max_iterations: int | None = None
    tools: tuple[str, ...] = ()
    history: tuple[Any, ...] = field(default=())

    def digest(self) -> str:
        body = {
            "v": HASH_VERSION,
            "prompt": self.prompt,
            "agent": self.agent,
            "provider": self.provider,
            "model": self.model,
            "thinking_level": self.thinking_level,
            "max_iterations": self.max_iterations,
            "tools": sorted(self.tools),
            "history": list(self.history),
        }
        text = json.dumps(body, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
        return hashlib.sha256(text.encode("utf-8")).hexdigest()


def history_fingerprint(messages: list[Message]) -> tuple[Any, ...]:
    """The parts of a session's messages that reach a model (no ids, times, meta, or a tool
    result's status, which only the front ends show)."""
    return tuple(
        {"role": m.role, "parts": [_model_view(part_to_dict(p)) for p in m.parts]}
        for m in messages
        if m.status == "complete"
    )


def _model_view(part: dict[str, Any]) -> dict[str, Any]:
    if part.get("type") == "tool_result":
        part.pop("status", None)
    return part


def find_recorded(agi: Agi, request_hash: str, notebook_path: str | None) -> Run | None:
    """The newest succeeded run with this request hash started from the notebook."""
    return agi.replayable_run(request_hash, notebook_path=notebook_path)


def recorded_python_calls(agi: Agi, run_id: str) -> list[str]:
    """The code of a run's completed ``python`` tool calls, in order."""
    codes = []
    for call in agi.tool_calls(run_id):
        code = call.args.get("code") if call.name == "python" else None
        if isinstance(code, str) and call.status == "completed":
            codes.append(code)
    return codes
