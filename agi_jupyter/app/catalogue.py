"""``Agi``'s catalogue: the agents, tools, MCP servers, agent SDKs, tasks, budgets and store
stats a front door lists. ``Catalogue`` is a part ``Agi`` holds (``agi_jupyter.app.agi``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from agi_jupyter.app.sessions import find_agent
from agi_jupyter.budget import every_status
from agi_jupyter.config import Config
from agi_jupyter.records import Task, TaskStatus
from agi_jupyter.runtime.agent_loop import allowed_tool_names

if TYPE_CHECKING:
    from agi_jupyter.agents import Agent
    from agi_jupyter.mcp.servers import McpServers
    from agi_jupyter.runtime.loop_thread import BackgroundLoop
    from agi_jupyter.sdk.dispatch import SdkDispatch
    from agi_jupyter.store import Store
    from agi_jupyter.tools import AnyTool, ToolRegistry


class Catalogue:
    """What a project offers and holds, listed: read from the config, the agents, the tool
    registry (MCP servers started on the runtime loop when their tools are listed), the
    agent SDKs and the store."""

    def __init__(
        self,
        config: Config,
        store: Store,
        agents: Mapping[str, Agent],
        registry: ToolRegistry,
        features: frozenset[str],
        sdk: SdkDispatch,
        mcp: McpServers,
        loop: BackgroundLoop,
    ) -> None:
        self.config = config
        self.store = store
        self._agents = agents
        self.registry = registry
        self.features = features
        self.sdk = sdk
        self.mcp = mcp
        self.loop = loop

    def agents(self) -> dict[str, Agent]:
        return dict(self._agents)

    def tools(self, agent: str | None = None) -> list[AnyTool]:
        """``Agi.tools``."""
        registry = self.registry
        allowed = (
            ["*"]
            if agent is None
            else allowed_tool_names(find_agent(self._agents, agent), None, registry)
        )
        self.loop.run(registry.prepare(allowed))
        if agent is None:
            return list(registry.all())
        return registry.offered(allowed, self.features)

    def mcp_servers(self) -> list[dict[str, Any]]:
        """``Agi.mcp_servers``."""
        return self.mcp.status()

    def mcp_resources(self, server: str | None = None) -> list[dict[str, Any]]:
        """``Agi.mcp_resources``."""
        return self.loop.run(self.mcp.listings(server))

    def sdks(self) -> list[dict[str, Any]]:
        """``Agi.sdks``."""
        return self.sdk.describe()

    def tasks(self, status: TaskStatus | None = None) -> list[Task]:
        """``Agi.tasks``."""
        return self.store.list_tasks(status=status)

    def stats(self) -> dict[str, Any]:
        return self.store.stats()

    def budgets(self) -> list[dict[str, Any]]:
        """``Agi.budgets``."""
        return every_status(self.store, self.config.budgets)
