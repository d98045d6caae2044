"""An MCP tool result (``CallToolResult``) as one of our ``ToolResult``s.

| MCP content                         | becomes                                                  |
|-------------------------------------|----------------------------------------------------------|
| text                                | the output text (blocks joined by blank lines)           |
| image, audio                        | an artifact (``image``/``audio``, the bytes, the MIME    |
|                                     | type) and a line naming it in the output                 |
| embedded text resource              | ``[resource <uri>]`` and its text                        |
| embedded blob resource              | a ``resource`` artifact and a line naming it             |
| resource link                       | ``[resource link <uri>: <name>]``                        |
| ``structuredContent``               | ``data.structured``; the output too when there is no text|
| ``isError``                         | ``ok=False``                                             |

Models read text only here, so binary content is stored (and shown by the panel and the
artifact endpoints) rather than sent on; large text is spilled to an artifact by the executor
like any tool's output.
"""

from __future__ import annotations

import base64
import binascii
import json
from dataclasses import dataclass, field
from typing import Any

import mcp_types as types

from agi_jupyter.records import JSON
from agi_jupyter.tools.base import ToolResult


@dataclass
class Blob:
    """Binary content to store as an artifact."""

    kind: str
    mime: str
    content: bytes
    title: str


@dataclass
class Mapped:
    """The pieces of a result in order: text, or blobs still to be stored."""

    pieces: list[str | Blob] = field(default_factory=list)
    structured: Any = None
    is_error: bool = False

    @property
    def blobs(self) -> list[Blob]:
        return [p for p in self.pieces if isinstance(p, Blob)]


def map_result(result: types.CallToolResult, tool: str) -> Mapped:
    mapped = Mapped(structured=result.structured_content, is_error=bool(result.is_error))
    for block in result.content:
        mapped.pieces.append(_piece(block, tool))
    return mapped


def _piece(block: Any, tool: str) -> str | Blob:
    if isinstance(block, types.TextContent):
        return block.text
    if isinstance(block, types.ImageContent | types.AudioContent):
        kind = "image" if isinstance(block, types.ImageContent) else "audio"
        return _blob(kind, block.mime_type, block.data, f"{kind} from {tool}")
    if isinstance(block, types.EmbeddedResource):
        resource = block.resource
        if isinstance(resource, types.TextResourceContents):
            mime = f" ({resource.mime_type})" if resource.mime_type else ""
            return f"[resource {resource.uri}{mime}]\n{resource.text}"
        mime = resource.mime_type or "application/octet-stream"
        return _blob("resource", mime, resource.blob, str(resource.uri))
    if isinstance(block, types.ResourceLink):
        about = block.description or block.title or block.name
        return f"[resource link {block.uri}: {about}]"
    return f"[{getattr(block, 'type', 'unknown')} content, not shown]"


def _blob(kind: str, mime: str, data: str, title: str) -> str | Blob:
    try:
        content = base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError):
        return f"[{kind} ({mime}) that was not valid base64, not stored]"
    return Blob(kind=kind, mime=mime, content=content, title=title)


def to_tool_result(mapped: Mapped, stored: dict[int, str]) -> ToolResult:
    """The result, with ``stored`` giving the artifact id of each blob (by its id())."""
    lines: list[str] = []
    artifacts: list[str] = []
    for piece in mapped.pieces:
        if isinstance(piece, Blob):
            artifact = stored.get(id(piece))
            size = f"{len(piece.content)} bytes"
            if artifact is None:
                lines.append(f"[{piece.kind} ({piece.mime}, {size}): could not be stored]")
            else:
                artifacts.append(artifact)
                lines.append(f"[{piece.kind} ({piece.mime}, {size}) stored as artifact {artifact}]")
        elif piece:
            lines.append(piece)
    if not lines and mapped.structured is not None:
        lines.append(json.dumps(mapped.structured, ensure_ascii=False, indent=1))
    data: JSON = {}
    if mapped.structured is not None:
        data["structured"] = mapped.structured
    if artifacts:
        data["artifacts"] = artifacts
    return ToolResult(
        output="\n\n".join(lines) or "(the tool returned no content)",
        ok=not mapped.is_error,
        data=data or None,
    )
