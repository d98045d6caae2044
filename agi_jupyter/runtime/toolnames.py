"""Tool names on the wire. Ours are dotted (``fs.read``); OpenAI and Anthropic accept only
``[a-zA-Z0-9_-]{1,64}``. The runner encodes names when it offers tools and sends history, and
decodes the names the model calls, so adapters and the store only ever see our own names."""

from __future__ import annotations

import re
from dataclasses import replace

from agi_jupyter.providers.base import ToolSpec
from agi_jupyter.records import ChatMessage, Part, ToolCallPart, ToolResultPart

_INVALID = re.compile(r"[^a-zA-Z0-9_-]")


def wire_name(name: str) -> str:
    return _INVALID.sub("_", name)[:64] or "tool"


class ToolNames:
    """The two-way mapping for one request's tools (collisions get a numeric suffix)."""

    def __init__(self, names: list[str]) -> None:
        self._to_wire: dict[str, str] = {}
        self._from_wire: dict[str, str] = {}
        for name in names:
            wire = base = wire_name(name)
            n = 2
            while wire in self._from_wire:
                wire = f"{base[:60]}_{n}"
                n += 1
            self._to_wire[name] = wire
            self._from_wire[wire] = name

    def encode(self, name: str) -> str:
        return self._to_wire.get(name) or wire_name(name)

    def decode(self, wire: str) -> str:
        return self._from_wire.get(wire, wire)

    def encode_spec(self, spec: ToolSpec) -> ToolSpec:
        return replace(spec, name=self.encode(spec.name))

    def encode_message(self, message: ChatMessage) -> ChatMessage:
        if not any(isinstance(p, ToolCallPart | ToolResultPart) for p in message.parts):
            return message
        return ChatMessage(role=message.role, parts=[self._encode_part(p) for p in message.parts])

    def _encode_part(self, part: Part) -> Part:
        if isinstance(part, ToolCallPart | ToolResultPart):
            return replace(part, name=self.encode(part.name))
        return part
