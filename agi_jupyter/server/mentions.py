"""``@`` mentions of the messages posted to the server: kernel variables read from the
notebook's kernel in this server, the rest resolved by ``Agi.mention_parts``
(``agi_jupyter/mentions.py``: the bounds, files, notebooks and cells).

A variable is described in its kernel by ``agi_jupyter.kernel.interpolate`` (the summaries
``%%agi -c`` sends: a DataFrame's shape, dtypes and head, an array's shape and dtype, other
values' type and a bounded ``repr``), evaluated as a ``user_expressions`` of a silent request:
no cell runs, the execution count and the history stay as they are. The kernel must be able
to import agi_jupyter (the environment that runs ``%%agi``).
"""

from __future__ import annotations

import ast
import json
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agi_jupyter.errors import MentionNotFound, PathOutsideProject, ToolError, UsageError
from agi_jupyter.kinds import MentionKind
from agi_jupyter.mentions import Mention
from agi_jupyter.server.models import MentionInput

if TYPE_CHECKING:
    from agi_jupyter.app import Agi
    from agi_jupyter.records import MentionPart
    from agi_jupyter.server.handlers.base import AgiHandler
    from agi_jupyter.server.notebooks.access import ServerNotebookAccess

_MODULE = "agi_jupyter.kernel.interpolate"


def _in_kernel(function: str, *args: object) -> str:
    """The expression calling ``function`` of ``_MODULE`` with ``args`` and the user namespace."""
    arguments = "".join(f"{arg!r}, " for arg in args)
    return f"__import__({_MODULE!r}, fromlist=['_']).{function}({arguments}get_ipython().user_ns)"


class KernelVariables:
    """The variables of notebooks' kernels in this server (on the server's loop)."""

    def __init__(self, access: ServerNotebookAccess) -> None:
        self.access = access

    async def summaries(self, project: Path, mentions: Sequence[Mention]) -> dict[Mention, str]:
        """The description of each ``@var`` mention's variable (a variable the kernel does
        not hold is left out)."""
        found: dict[Mention, str] = {}
        for mention in mentions:
            if mention.kind is not MentionKind.VAR:
                continue
            if not mention.notebook_path:
                raise UsageError(f"@var {mention.ref}: which notebook's kernel? (notebook_path)")
            expression = {"v": _in_kernel("describe", mention.ref)}
            reply = await self._evaluate(project, mention.notebook_path, expression)
            if reply is None:
                raise MentionNotFound(
                    f"@var {mention.ref}: {mention.notebook_path} has no running kernel "
                    "(open it and run its cells)"
                )
            summary = _value(reply.get("v"), mention.ref)
            if summary is not None:
                found[mention] = str(summary)
        return found

    async def listing(self, project: Path, notebook_path: str) -> list[dict[str, str]]:
        """The user's variables in the notebook's kernel: name, type and a one-line summary
        (none when it has no running kernel)."""
        reply = await self._evaluate(project, notebook_path, {"v": _in_kernel("variables_json")})
        if reply is None:
            return []
        rows = json.loads(str(_value(reply.get("v"), "the variables")))
        return [{k: str(row[k]) for k in ("name", "type", "summary")} for row in rows]

    async def _evaluate(
        self, project: Path, notebook_path: str, expressions: dict[str, str]
    ) -> dict[str, Any] | None:
        """The kernel's replies; None when the notebook has no running kernel (or is no
        notebook this server can name: a path the file system refuses)."""
        try:
            target = self.access.locate(project, notebook_path)
            api_path = self.access.api_path(target)
        except PathOutsideProject:
            raise
        except (ToolError, OSError, ValueError):
            return None
        return await self.access.kernels.evaluate(api_path, target.file, expressions)


def _value(reply: Any, what: str) -> object:
    """The Python value of a ``user_expressions`` reply whose result is a literal."""
    if not isinstance(reply, dict) or reply.get("status") != "ok":
        error = reply if isinstance(reply, dict) else {}
        raise UsageError(
            f"the kernel could not describe {what}: "
            f"{error.get('ename', 'no answer')}: {error.get('evalue', '')}".rstrip(": ")
        )
    return ast.literal_eval(str(reply.get("data", {}).get("text/plain", "None")))


def mentions_of(inputs: Sequence[MentionInput]) -> list[Mention]:
    return [Mention(m.kind, m.ref, m.notebook_path, m.server) for m in inputs]


async def mention_parts(
    handler: AgiHandler, agi: Agi, inputs: Sequence[MentionInput]
) -> list[MentionPart]:
    """The context parts of a request's mentions (none: no part)."""
    if not inputs:
        return []
    mentions = mentions_of(inputs)
    variables = KernelVariables(handler.agi_app.notebooks)
    summaries = await variables.summaries(agi.project, mentions)
    return await handler.call(agi.mention_parts, mentions, summaries)
