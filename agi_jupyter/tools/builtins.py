"""The built-in tools, and a registry holding them plus the project's own tools."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from agi_jupyter.tools.base import AnyTool
from agi_jupyter.tools.builtin_fs import FsList, FsRead, FsSearch, FsWrite
from agi_jupyter.tools.capabilities import Reload, WriteCapability
from agi_jupyter.tools.patch import ApplyPatch
from agi_jupyter.tools.registry import ToolRegistry
from agi_jupyter.tools.shell import ShellRun
from agi_jupyter.tools.sql import SqlQuery
from agi_jupyter.tools.tasks import Tasks

if TYPE_CHECKING:
    from agi_jupyter.store import Store


def builtin_tools() -> list[AnyTool]:
    """Fresh instances of every built-in tool (the kernel's ``python`` tool lives elsewhere)."""
    return [
        FsRead(),
        FsList(),
        FsSearch(),
        FsWrite(),
        ApplyPatch(),
        ShellRun(),
        SqlQuery(),
        Tasks(),
        WriteCapability(),
        Reload(),
    ]


def create_registry(
    project: Path | str | None = None, *, store: Store | None = None
) -> ToolRegistry:
    """A registry with the built-in tools and, given a project, its ``.agi/tools/``."""
    registry = ToolRegistry(builtin_tools())
    if project is not None:
        registry.load_project_tools(project, store=store)
    return registry
