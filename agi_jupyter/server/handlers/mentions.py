"""What an ``@`` mention may name (``/agi/v1/mentions``): project files, and the variables of
a notebook's kernel, filtered by what the user typed so far (the composer's completion list)."""

from __future__ import annotations

from agi_jupyter.server.handlers.base import AgiHandler, protected
from agi_jupyter.server.mentions import KernelVariables
from agi_jupyter.server.models import MentionsQuery
from agi_jupyter.server.responses import MentionCandidate, MentionCandidateList


class MentionsHandler(AgiHandler):
    @protected
    async def get(self) -> None:
        query = self.query(MentionsQuery)
        agi = await self.agi()
        if query.kind == "file":
            files = await self.call(agi.mention_files, query.q, limit=query.limit)
            items = [MentionCandidate(kind="file", ref=path) for path in files]
        else:
            items = await self._variables(query)
        self.reply(MentionCandidateList(items=items))

    async def _variables(self, query: MentionsQuery) -> list[MentionCandidate]:
        if not query.notebook_path:
            return []
        agi = await self.agi()
        rows = await KernelVariables(self.agi_app.notebooks).listing(
            agi.project, query.notebook_path
        )
        needle = query.q.lower()
        found = [r for r in rows if needle in r["name"].lower()]
        found.sort(key=lambda r: (not r["name"].lower().startswith(needle), r["name"]))
        return [
            MentionCandidate(kind="var", ref=r["name"], type=r["type"], detail=r["summary"])
            for r in found[: query.limit]
        ]
