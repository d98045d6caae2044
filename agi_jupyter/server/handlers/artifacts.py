"""Artifacts: metadata, and the content itself (files, reports, diffs)."""

from __future__ import annotations

from agi_jupyter.records import Artifact as ArtifactRecord
from agi_jupyter.server.handlers.base import AgiHandler, protected
from agi_jupyter.server.responses import ArtifactResponse


def content_type(artifact: ArtifactRecord) -> str:
    if artifact.mime:
        return artifact.mime
    if artifact.text is None and artifact.path is None and artifact.data is not None:
        return "application/json"
    return "application/octet-stream"


class ArtifactHandler(AgiHandler):
    @protected
    async def get(self, artifact_id: str) -> None:
        agi = await self.agi()
        self.reply(ArtifactResponse(artifact=await self.call(agi.artifact, artifact_id)))


class ArtifactContentHandler(AgiHandler):
    """The bytes of an artifact, with its MIME type. Served sandboxed: an artifact is data
    written by an agent, never a page of this origin."""

    @protected
    async def get(self, artifact_id: str) -> None:
        agi = await self.agi()
        artifact = await self.call(agi.artifact, artifact_id)
        data = await self.call(agi.artifact_content, artifact_id)
        mime = content_type(artifact)
        self.set_header("X-Content-Type-Options", "nosniff")
        self.set_header("Content-Security-Policy", "sandbox; default-src 'none'")
        self.set_header("Content-Disposition", f'inline; filename="{artifact.id}"')
        self.finish(data, set_content_type=mime)
