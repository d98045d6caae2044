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

An ``@`` mention of a resource or a prompt (``agi_jupyter/mentions.py``) reads it as text:
``resource_text`` gives a ``resources/read`` result's text contents, and names each binary one
with its MIME type and size; ``prompt_text`` gives a ``prompts/get`` result's messages, each
headed by its role (non-text content named like a tool result's).

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


def resource_text(result: types.ReadResourceResult) -> str:
    """A read resource as text: each text content as it is, each binary one named."""
    texts: list[str] = []
    for content in result.contents:
        if isinstance(content, types.TextResourceContents):
            texts.append(content.text)
        else:
            texts.append(_binary_note(content))
    return "\n\n".join(texts) or "(the resource has no content)"


def _binary_note(content: types.BlobResourceContents) -> str:
    mime = content.mime_type or "application/octet-stream"
    try:
        size = f"{len(base64.b64decode(content.blob, validate=True))} bytes"
    except (binascii.Error, ValueError):
        size = "not valid base64"
    return f"[binary content {content.uri} ({mime}, {size}): not shown]"


def prompt_text(result: types.GetPromptResult) -> str:
    """A prompt's messages as text, each headed by its role."""
    texts: list[str] = []
    for message in result.messages:
        piece = _piece(message.content, "the prompt")
        if isinstance(piece, Blob):
            piece = f"[{piece.kind} ({piece.mime}, {len(piece.content)} bytes): not shown]"
        texts.append(f"{message.role}: {piece}")
    return "\n\n".join(texts) or "(the prompt has no messages)"
