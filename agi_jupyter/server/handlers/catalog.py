"""What a project offers and holds: agents, tools, MCP servers' resources and prompts,
providers, agent SDKs, statistics, tasks."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit, urlunsplit

from agi_jupyter.mcp.tools import server_of
from agi_jupyter.model_specs import KNOWN_PROVIDERS
from agi_jupyter.providers.local_models import list_local_models
from agi_jupyter.server.handlers.base import AgiHandler, cursor_not_found, protected
from agi_jupyter.server.models import (
    McpResourcesQuery,
    NotebookBudgetUpdate,
    TasksQuery,
    ToolsQuery,
)
from agi_jupyter.server.responses import (
    AgentInfo,
    AgentList,
    McpPromptArgument,
    McpPromptInfo,
    McpResourceInfo,
    McpResourceList,
    McpResourceTemplateInfo,
    McpServerInfo,
    McpServerOffer,
    NotebookBudgets,
    ProviderInfo,
    ProviderList,
    SdkInfo,
    SdkList,
    Stats,
    TaskPage,
    ToolInfo,
    ToolList,
)


def _public_url(url: str | None) -> str | None:
    """A base URL without user:password, if it carries any."""
    if not url:
        return url
    parts = urlsplit(url)
    if "@" not in parts.netloc:
        return url
    return urlunsplit(parts._replace(netloc=parts.netloc.rsplit("@", 1)[1]))


class AgentsHandler(AgiHandler):
    @protected
    async def get(self) -> None:
        agi = await self.agi()
        agents = [
            AgentInfo(
                name=a.name,
                description=a.description,
                tools=list(a.tools),
                read_only=a.read_only,
                model=a.model,
                sdk=a.sdk,
                source=a.source,
            )
            for a in agi.agents().values()
        ]
        self.reply(AgentList(agents=sorted(agents, key=lambda a: a.name)))


class ToolsHandler(AgiHandler):
    @protected
    async def get(self) -> None:
        query = self.query(ToolsQuery)
        agi = await self.agi()
        tools = await self.call(agi.tools, query.agent)
        infos = [
            ToolInfo(
                name=t.name,
                description=t.description,
                parameters=t.json_schema(),
                read_only=t.read_only,
                trait=t.trait,
                source=t.source,
                server=server_of(t),
            )
            for t in tools
        ]
        servers = [McpServerInfo.model_validate(s) for s in agi.mcp_servers()]
        self.reply(ToolList(tools=infos, mcp_servers=servers))


class McpResourcesHandler(AgiHandler):
    @protected
    async def get(self) -> None:
        query = self.query(McpResourcesQuery)
        agi = await self.agi()
        servers = await self.call(agi.mcp_resources, query.server)
        self.reply(McpResourceList(servers=[_offer(s) for s in servers]))


def _offer(server: dict[str, Any]) -> McpServerOffer:
    """A server's listing (``Agi.mcp_resources``: the fields by their MCP wire names)."""
    return McpServerOffer(
        name=server["name"],
        state=server["state"],
        error=server["error"],
        resources=[
            McpResourceInfo(uri=r["uri"], mime_type=r.get("mimeType"), **_named(r))
            for r in server["resources"]
        ],
        templates=[
            McpResourceTemplateInfo(
                uri_template=t["uriTemplate"], mime_type=t.get("mimeType"), **_named(t)
            )
            for t in server["templates"]
        ],
        prompts=[_prompt(p) for p in server["prompts"]],
    )


def _named(item: dict[str, Any]) -> dict[str, Any]:
    return {
        "name": item["name"],
        "title": item.get("title"),
        "description": item.get("description"),
    }


def _prompt(prompt: dict[str, Any]) -> McpPromptInfo:
    arguments = [
        McpPromptArgument(
            name=a["name"], description=a.get("description"), required=bool(a.get("required"))
        )
        for a in prompt.get("arguments") or []
    ]
    mentionable = not any(a.required for a in arguments)
    return McpPromptInfo(arguments=arguments, mentionable=mentionable, **_named(prompt))


class ProvidersHandler(AgiHandler):
    @protected
    async def get(self) -> None:
        agi = await self.agi()
        local = await self.call(list_local_models, agi.config.providers)
        providers = []
        for name, settings in agi.config.providers.items():
            known = KNOWN_PROVIDERS[name]
            served = local.get(name)
            providers.append(
                ProviderInfo(
                    name=name,
                    label=known.label,
                    wire=settings.wire,
                    enabled=settings.enabled,
                    configured=settings.configured,
                    base_url=_public_url(settings.base_url),
                    default_model=settings.default_model,
                    key_env=list(known.key_env),
                    served_models=served.models if served else None,
                    served_models_error=served.error if served else None,
                )
            )
        self.reply(ProviderList(default_model=agi.config.default_model, providers=providers))


class SdksHandler(AgiHandler):
    @protected
    async def get(self) -> None:
        agi = await self.agi()
        sdks = [SdkInfo.model_validate(s) for s in await self.call(agi.sdks)]
        self.reply(SdkList(default_sdk=agi.config.default_sdk, sdks=sdks))


class StatsHandler(AgiHandler):
    @protected
    async def get(self) -> None:
        agi = await self.agi()
        self.reply(Stats.model_validate(await self.call(agi.stats)))


class NotebookBudgetsHandler(AgiHandler):
    """Notebook budgets: listed, and set from here for every process (the store's)."""

    @protected
    async def get(self) -> None:
        agi = await self.agi()
        self.reply(NotebookBudgets(notebook_budgets=await self.call(agi.notebook_budgets)))

    @protected
    async def patch(self) -> None:
        body = self.body(NotebookBudgetUpdate)
        agi = await self.agi()
        budget = None if body.budget is None else body.budget.model_dump(exclude_none=True)
        await self.call(agi.set_notebook_budget, body.path, budget)
        self.reply(NotebookBudgets(notebook_budgets=await self.call(agi.notebook_budgets)))


class TasksHandler(AgiHandler):
    @protected
    async def get(self) -> None:
        query = self.query(TasksQuery)
        agi = await self.agi()
        tasks = await self.call(agi.tasks, query.status)
        start = _offset(query.cursor)
        page = tasks[start : start + query.page_size]
        more = start + query.page_size < len(tasks)
        self.reply(TaskPage(tasks=page, next_cursor=str(start + query.page_size) if more else None))


def _offset(cursor: str | None) -> int:
    if cursor is None:
        return 0
    if not (cursor.isascii() and cursor.isdigit()):
        raise cursor_not_found(cursor)
    return int(cursor)
