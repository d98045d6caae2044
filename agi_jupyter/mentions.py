"""``@`` mentions of a user message, resolved into bounded context parts.

A mention points at a project file (``@file``), a notebook (``@notebook``), one of its cells by
id (``@cell``) or a kernel variable of a notebook (``@var``). ``MentionResolver.parts`` turns
each into a ``MentionPart`` holding the text the model reads, when the message is written: the
parts are stored with the message, so the history shows them and a replay sends exactly the
same context. Bounds, in estimated tokens (four characters a token): one mention's text is cut
at ``MENTION_TOKENS`` (saying so); a message's mentions together may not pass
``MENTIONS_TOKENS`` (``MentionsTooLarge``, 413); at most ``MAX_MENTIONS`` a message.

An MCP server's ``@resource`` (by URI) is read with ``resources/read`` (text contents as they
are, binary ones named with their type and size), an ``@prompt`` (by name) got with
``prompts/get`` without arguments (its messages' text); the part's ``ref`` is
``server:uri`` / ``server:name``.

A variable is described by whoever holds its kernel (the server through the notebook's kernel,
the kernel itself for ``%%agi`` and the widget): ``summaries`` maps each ``@var`` mention to
that text. ``parse_mentions`` finds ``@var name`` / ``@file path`` written in a prompt (the
widget's text box, a ``%%agi`` cell); the panel sends them as structured data instead.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from agi_jupyter.errors import (
    MentionNotFound,
    MentionsTooLarge,
    PathOutsideProject,
    ToolError,
    UsageError,
)
from agi_jupyter.kinds import MentionKind
from agi_jupyter.notebook.access import NotebookAccess
from agi_jupyter.notebook.model import CellView
from agi_jupyter.records import MentionPart
from agi_jupyter.tools.paths import MissingPath, read_bytes_in_project, walk_dir_in_project

CHARS_PER_TOKEN = 4
MENTION_TOKENS = 2_000  # one mention's text: longer is cut
MENTIONS_TOKENS = 8_000  # a message's mentions together: more is refused
MAX_MENTIONS = 20
MAX_FILE_BYTES = 4 * 1024 * 1024  # a larger file is named, not read
MAX_LISTED = 50  # file candidates answered
MAX_WALKED = 20_000  # entries looked at when listing files
SKIPPED_FOLDERS = frozenset(
    {".git", ".agi", ".venv", "venv", "node_modules", "__pycache__", ".ipynb_checkpoints"}
)
# ``@var name`` and ``@file path`` written in a prompt (a path ends at white space).
_WRITTEN = re.compile(r"(?<![\w@])@(?P<kind>var|file)\s+(?P<ref>[^\s`'\"]+)")


@dataclass(frozen=True)
class Mention:
    """What a mention points at: ``ref`` is a path (``file``, ``notebook``), a cell id
    (``cell``), a variable name (``var``), a resource URI (``resource``) or a prompt name
    (``prompt``); ``notebook_path`` is the notebook of a cell or a variable (relative to the
    project, or to the server root); ``server`` the MCP server of a resource or a prompt."""

    kind: MentionKind
    ref: str
    notebook_path: str | None = None
    server: str | None = None


class McpReader(Protocol):
    """What mentions read of the MCP servers (``agi_jupyter.mcp.servers.McpServers``): text,
    or ``ToolError``."""

    async def read_resource(self, name: str, uri: str) -> str: ...

    async def prompt(self, name: str, prompt: str) -> str: ...


MCP_KINDS = frozenset({MentionKind.RESOURCE, MentionKind.PROMPT})


def parse_mentions(prompt: str) -> list[Mention]:
    """The ``@var name`` and ``@file path`` mentions written in ``prompt``, once each, in order."""
    found: dict[Mention, None] = {}
    for match in _WRITTEN.finditer(prompt):
        ref = match.group("ref").rstrip(".,;:!?)")
        if ref:
            found[Mention(MentionKind(match.group("kind")), ref)] = None
    return list(found)


def estimate_tokens(text: str) -> int:
    return -(-len(text) // CHARS_PER_TOKEN)


def clip(text: str, tokens: int = MENTION_TOKENS) -> str:
    """``text`` within ``tokens``, saying how much was left out."""
    room = tokens * CHARS_PER_TOKEN
    if len(text) <= room:
        return text
    note = f"\n[... {len(text) - room} more characters left out]"
    return text[: max(0, room - len(note))] + note


class MentionResolver:
    """The mentions of one project: their parts, and the files a mention may name."""

    def __init__(self, project: Path, notebooks: NotebookAccess, mcp: McpReader) -> None:
        self.project = project
        self.notebooks = notebooks
        self.mcp = mcp

    async def parts(
        self, mentions: Sequence[Mention], summaries: Mapping[Mention, str]
    ) -> list[MentionPart]:
        """A part per mention (a mention given twice gives one part), in order; the bounds
        above enforced."""
        if len(mentions) > MAX_MENTIONS:
            raise UsageError(f"a message takes at most {MAX_MENTIONS} mentions")
        parts = [await self._part(m, summaries) for m in dict.fromkeys(mentions)]
        total = sum(estimate_tokens(p.text) for p in parts)
        if total > MENTIONS_TOKENS:
            raise MentionsTooLarge(
                f"the mentions hold about {total} tokens; a message's mentions may hold "
                f"{MENTIONS_TOKENS}: mention fewer or smaller things"
            )
        return parts

    async def _part(self, mention: Mention, summaries: Mapping[Mention, str]) -> MentionPart:
        kind = mention.kind
        if kind is MentionKind.VAR:
            summary = summaries.get(mention)
            if summary is None:
                raise MentionNotFound(f"@var {mention.ref}: no such variable in the kernel")
            return MentionPart(kind=kind, ref=mention.ref, text=clip(summary))
        if kind is MentionKind.FILE and not mention.ref.endswith(".ipynb"):
            return MentionPart(kind=kind, ref=mention.ref, text=clip(self._file(mention.ref)))
        if kind is MentionKind.CELL:
            return await self._cell(mention)
        if kind in MCP_KINDS:
            return await self._mcp(mention)
        path = mention.ref
        cells = await self._cells(path)
        text = "\n\n".join(_cell_text(c) for c in cells) or "(no cells)"
        return MentionPart(kind=kind, ref=path, text=clip(text))

    async def _cell(self, mention: Mention) -> MentionPart:
        if not mention.notebook_path:
            raise UsageError(f"@cell {mention.ref}: which notebook? (notebook_path)")
        for cell in await self._cells(mention.notebook_path):
            if cell.id == mention.ref:
                ref = f"{mention.notebook_path}#{cell.id}"
                return MentionPart(kind=MentionKind.CELL, ref=ref, text=clip(_cell_text(cell)))
        raise MentionNotFound(f"@cell {mention.ref}: no such cell in {mention.notebook_path}")

    async def _mcp(self, mention: Mention) -> MentionPart:
        kind, server = mention.kind, mention.server
        if not server:
            raise UsageError(f"@{kind} {mention.ref}: which MCP server? (server)")
        ref = f"{server}:{mention.ref}"
        try:
            if kind is MentionKind.RESOURCE:
                text = await self.mcp.read_resource(server, mention.ref)
            else:
                text = await self.mcp.prompt(server, mention.ref)
        except ToolError as e:
            raise MentionNotFound(f"@{kind} {ref}: {e.message}") from None
        return MentionPart(kind=kind, ref=ref, text=clip(text))

    async def _cells(self, path: str) -> list[CellView]:
        try:
            target = self.notebooks.locate(self.project, path)
            document = await self.notebooks.open(target)
            return (await document.read()).cells
        except PathOutsideProject:
            raise
        except ToolError as e:  # not there, not a notebook, a name the file system refuses
            raise MentionNotFound(f"@notebook {path}: {e}") from None
        except (OSError, ValueError) as e:
            raise MentionNotFound(f"@notebook {path}: {e}") from None

    def _file(self, path: str) -> str:
        try:
            data, _ = read_bytes_in_project(self.project, path, max_bytes=MAX_FILE_BYTES)
        except MissingPath:
            raise MentionNotFound(f"@file {path}: no such file") from None
        except PathOutsideProject:
            raise
        except ToolError as e:
            if "larger than" in str(e):
                return f"(a file of more than {MAX_FILE_BYTES} bytes: not read)"
            raise MentionNotFound(f"@file {path}: {e}") from None
        except (OSError, ValueError) as e:  # a name the file system refuses
            raise MentionNotFound(f"@file {path}: {e}") from None
        try:
            return data.decode()
        except UnicodeDecodeError:
            return f"(a binary file of {len(data)} bytes)"

    def files(self, query: str = "", *, limit: int = MAX_LISTED) -> list[str]:
        """Project files whose path holds ``query`` (case-insensitive), at most ``limit``:
        names starting with it first, then shorter paths."""
        needle = query.lower()
        found = [rel for rel in self._walk() if needle in rel.lower()]
        found.sort(key=lambda rel: (not _name(rel).startswith(needle), len(rel), rel))
        return found[:limit]

    def _walk(self) -> Iterator[str]:
        entries = walk_dir_in_project(self.project, ".", recursive=True, skip=SKIPPED_FOLDERS)
        for walked, entry in enumerate(entries, start=1):
            if walked > MAX_WALKED:
                return
            if not entry.is_dir and not any(p.startswith(".") for p in entry.rel.split("/")):
                yield entry.rel


def _name(rel: str) -> str:
    return rel.rsplit("/", 1)[-1].lower()


def _cell_text(cell: CellView) -> str:
    head = f"cell {cell.id} ({cell.cell_type}"
    head += f", In [{cell.execution_count}])" if cell.execution_count is not None else ")"
    outputs = "\n".join(cell.outputs)
    return f"{head}:\n{cell.source}" + (f"\noutputs:\n{outputs}" if outputs else "")
