"""Fixtures for tool tests: a temporary project with a real store, a registry and a context."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import pytest

from agi_jupyter.config import Config
from agi_jupyter.store import SqliteStore, open_store
from agi_jupyter.tools import (
    Redactor,
    ToolContext,
    ToolOutcome,
    ToolRegistry,
    create_registry,
    execute_tool_call,
)

Call = Callable[..., Awaitable[ToolOutcome]]


@dataclass
class Emitted:
    """Records what a tool streamed through ``ctx.emit``."""

    chunks: list[tuple[str, str]] = field(default_factory=list)

    def __call__(self, channel: str, chunk: str) -> None:
        self.chunks.append((channel, chunk))

    def text(self, channel: str) -> str:
        return "".join(chunk for ch, chunk in self.chunks if ch == channel)


# Sync file helpers, so async tests do not call blocking pathlib methods themselves.


def read(path: Path) -> str:
    return path.read_text(encoding="utf-8")


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def exists(path: Path) -> bool:
    return path.exists()


def snapshot(root: Path) -> dict[str, str]:
    """Every file under ``root`` (outside .agi) with its text, to compare before and after."""
    return {
        p.relative_to(root).as_posix(): p.read_text(encoding="utf-8", errors="replace")
        for p in sorted(root.rglob("*"))
        if p.is_file() and ".agi" not in p.relative_to(root).parts
    }


@pytest.fixture
def project(tmp_path: Path) -> Path:
    folder = tmp_path / "proj"
    (folder / ".agi").mkdir(parents=True)
    return folder.resolve()


@pytest.fixture
def store(project: Path) -> Iterator[SqliteStore]:
    with open_store(project, artifact_threshold=4096) as opened:
        yield opened


@pytest.fixture
def config(project: Path) -> Config:
    return Config(project=project, artifact_threshold=4096)


@pytest.fixture
def registry(project: Path, store: SqliteStore) -> ToolRegistry:
    return create_registry(project, store=store)


@pytest.fixture
def emitted() -> Emitted:
    return Emitted()


@pytest.fixture
def ctx(
    project: Path, store: SqliteStore, config: Config, registry: ToolRegistry, emitted: Emitted
) -> ToolContext:
    return ToolContext(
        project=project,
        store=store,
        config=config,
        tool_call_id="call_1",
        agent="build",
        emit=emitted,
        registry=registry,
    )


@pytest.fixture
def call(registry: ToolRegistry, ctx: ToolContext) -> Call:
    """``await call("fs.read", {"path": "a.txt"})``: one call through the executor."""

    async def run(
        name: str,
        arguments: dict[str, Any] | None = None,
        *,
        allowed: tuple[str, ...] = ("*",),
        deadline: float = 30.0,
        redactor: Redactor | None = None,
        **ctx_changes: Any,
    ) -> ToolOutcome:
        return await execute_tool_call(
            registry,
            name=name,
            arguments=arguments or {},
            allowed=allowed,
            ctx=replace(ctx, **ctx_changes),
            timeout=deadline,
            redactor=redactor,
        )

    return run
