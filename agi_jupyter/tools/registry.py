"""The tools a runtime knows, which of them an agent is offered, and project tool (re)loading."""

from __future__ import annotations

import fnmatch
import logging
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from agi_jupyter.config import PROJECT_DIRNAME
from agi_jupyter.errors import UsageError
from agi_jupyter.tools.base import AnyTool
from agi_jupyter.tools.loader import (
    TOOL_FILENAME,
    TOOLS_DIRNAME,
    ToolLoadError,
    load_tool_folder,
)

if TYPE_CHECKING:
    from agi_jupyter.store import Store
    from agi_jupyter.tools.policy import ToolPolicy

log = logging.getLogger(__name__)


@dataclass
class LoadReport:
    """The outcome of one scan of ``.agi/tools/``: tools loaded, and why others were skipped."""

    loaded: list[str] = field(default_factory=list)
    errors: dict[str, str] = field(default_factory=dict)
    removed: list[str] = field(default_factory=list)


def is_allowed(name: str, allowed: Collection[str]) -> bool:
    """Whether ``name`` matches one of the allowed names or ``*`` globs (``fs.*``)."""
    return any(
        pattern == name or fnmatch.fnmatchcase(name, pattern) for pattern in allowed if pattern
    )


class ToolSource(Protocol):
    """Tools that exist only once something is started (MCP servers): ``prepare`` registers
    those an agent's tool list (names and globs) can reach; ``aclose`` stops them."""

    async def prepare(self, allowed: Collection[str]) -> None: ...

    async def aclose(self) -> None: ...


class ToolRegistry:
    """Built-in and project tools by name. Not thread-safe: use it from the event loop."""

    def __init__(self, tools: Iterable[AnyTool] = ()) -> None:
        self._tools: dict[str, AnyTool] = {}
        self._project: set[str] = set()
        self.load_errors: dict[str, str] = {}
        self.sources: list[ToolSource] = []
        # Bumped whenever a tool comes or goes (an MCP server that changed its tool list):
        # a running agent loop offers the new list from its next model turn.
        self.generation = 0
        for item in tools:
            self.register(item)

    async def prepare(self, allowed: Collection[str]) -> None:
        """Let the tool sources register what ``allowed`` reaches (call it before
        ``offered``, on the runtime loop). Sources report their own failures."""
        for source in self.sources:
            await source.prepare(allowed)

    async def aclose(self) -> None:
        for source in self.sources:
            await source.aclose()

    def register(self, tool: AnyTool, *, replace: bool = False) -> None:
        if not tool.name:
            raise UsageError(f"{tool!r} has no name")
        if tool.name in self._tools and not replace:
            raise UsageError(f"a tool named {tool.name!r} is already registered")
        self._tools[tool.name] = tool
        self.generation += 1

    def unregister(self, name: str) -> AnyTool | None:
        self._project.discard(name)
        removed = self._tools.pop(name, None)
        if removed is not None:
            self.generation += 1
        return removed

    def get(self, name: str) -> AnyTool | None:
        return self._tools.get(name)

    def __contains__(self, name: object) -> bool:
        return name in self._tools

    def __len__(self) -> int:
        return len(self._tools)

    def all(self) -> list[AnyTool]:
        return sorted(self._tools.values(), key=lambda t: t.name)

    def names(self) -> list[str]:
        return sorted(self._tools)

    def offered(
        self,
        allowed: Collection[str],
        features: Collection[str] = frozenset(),
        policy: ToolPolicy | None = None,
    ) -> list[AnyTool]:
        """The tools an agent with ``allowed`` names/globs gets, given the context's features;
        with a ``policy``, not those it denies."""
        have = frozenset(features)
        return [
            t
            for t in self.all()
            if is_allowed(t.name, allowed)
            and t.requires <= have
            and (policy is None or policy.offers(t.name))
        ]

    def prompts(self, tools: Iterable[AnyTool]) -> str:
        """The extra system-prompt context of ``tools`` (their ``prompt``), one section each."""
        sections = [f"## Tool {t.name}\n{t.prompt.strip()}" for t in tools if t.prompt]
        return "\n\n".join(sections)

    @property
    def project_tools(self) -> list[str]:
        return sorted(self._project)

    def load_project_tools(self, root: Path | str, *, store: Store | None = None) -> LoadReport:
        """(Re)load ``<root>/.agi/tools/*/tool.py``, replacing earlier project tools.

        A folder that fails (syntax, import, no tool) is skipped, its reason kept in
        ``load_errors`` and logged; the others still load. Project tools may not shadow
        built-in ones.
        """
        capabilities = _capability_rows(store)
        report = LoadReport()
        fresh: dict[str, AnyTool] = {}
        for folder in _tool_folders(Path(root)):
            if not (folder / TOOL_FILENAME).is_file():
                report.errors[folder.name] = f"missing_function: the folder has no {TOOL_FILENAME}"
                continue
            try:
                loaded = load_tool_folder(folder, capability=capabilities.get(folder.name))
            except ToolLoadError as e:
                report.errors[folder.name] = str(e)
                continue
            if self._is_builtin(loaded.name) or loaded.name in fresh:
                report.errors[folder.name] = f"a tool named {loaded.name!r} already exists"
                continue
            fresh[loaded.name] = loaded
        for name in list(self._project):
            if name not in fresh:
                report.removed.append(name)
            self.unregister(name)
        for name, loaded in fresh.items():
            self.register(loaded)
            self._project.add(name)
            report.loaded.append(name)
        for folder_name, reason in report.errors.items():
            log.warning("project tool %s skipped: %s", folder_name, reason)
        self.load_errors = dict(report.errors)
        return report

    def _is_builtin(self, name: str) -> bool:
        return name in self._tools and name not in self._project


def _tool_folders(root: Path) -> list[Path]:
    base = root / PROJECT_DIRNAME / TOOLS_DIRNAME
    if not base.is_dir():
        return []
    return sorted(p for p in base.iterdir() if p.is_dir() and p.name[0] not in "._")


def _capability_rows(store: Store | None) -> dict[str, Mapping[str, Any]]:
    if store is None:
        return {}
    return {
        cap.name: {"description": cap.description, "tool_schema": cap.tool_schema or None}
        for cap in store.list_capabilities()
    }
