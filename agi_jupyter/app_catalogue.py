"""``Agi``'s catalogue: the agents, tools, MCP servers, agent SDKs, budgets and store stats a
front door lists. A part of ``Agi`` (``agi_jupyter.app``), which composes it."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from agi_jupyter.budget import every_status
from agi_jupyter.config import Config
from agi_jupyter.runtime.runner import allowed_tool_names

if TYPE_CHECKING:
    from agi_jupyter.agents import Agent
    from agi_jupyter.mcp.servers import McpServers
    from agi_jupyter.runtime.deps import RuntimeDeps
    from agi_jupyter.runtime.loop_thread import BackgroundLoop
    from agi_jupyter.sdk.dispatch import SdkDispatch
    from agi_jupyter.store import Store
    from agi_jupyter.tools import AnyTool


class CatalogueApi:
    """The catalogue part of ``Agi`` (a mixin: ``Agi`` sets the attributes below)."""

    config: Config
    store: Store
    deps: RuntimeDeps
    sdk: SdkDispatch
    mcp: McpServers
    loop: BackgroundLoop

    if TYPE_CHECKING:

        def _check_agent(self, name: str) -> Agent: ...

    def agents(self) -> dict[str, Agent]:
        return dict(self.deps.agents)

    def tools(self, agent: str | None = None) -> list[AnyTool]:
        """All tools, or those ``agent`` is offered; MCP servers they need are started first
        (one that fails is left out: see ``mcp_servers``)."""
        registry = self.deps.registry
        allowed = (
            ["*"] if agent is None else allowed_tool_names(self._check_agent(agent), None, registry)
        )
        self.loop.run(registry.prepare(allowed))
        if agent is None:
            return list(registry.all())
        return registry.offered(allowed, self.deps.features)

    def mcp_servers(self) -> list[dict[str, Any]]:
        """The configured MCP servers: state (not started, running, exited, failed, stopped),
        error with its stderr tail (redacted), and their tools."""
        return self.mcp.status()

    def sdks(self) -> list[dict[str, Any]]:
        """The agent SDKs: id, display name, capability flags, and whether they are installed."""
        return self.sdk.describe()

    def stats(self) -> dict[str, Any]:
        """The store's counts and totals. The token totals leave out the runs whose usage is
        unknown (``unknown_usage_runs``), the cost total every run whose cost is unknown
        (``unknown_cost_runs``: no usage, or a model without a catalog price)."""
        found = self.store.stats()
        return {**found, "unknown_cost_runs": self._unknown_cost_runs()}

    def _unknown_cost_runs(self) -> int:
        # (A count over the runs' pages: the store has no query for it yet.)
        count, cursor = 0, None
        while True:
            page = self.store.list_runs(limit=500, cursor=cursor)
            count += sum(1 for run in page.items if run.cost_usd is None)
            if page.next_cursor is None:
                return count
            cursor = page.next_cursor

    def budgets(self) -> list[dict[str, Any]]:
        """Spent and remaining of every budget: sessions that have one, configured notebooks."""
        return every_status(self.store, self.config.budgets)
