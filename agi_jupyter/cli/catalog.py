"""What a project holds and offers: ``artifacts``, ``artifact``, ``tasks``, ``stats``, ``tools``,
``agents``, ``models``. Tables by default, ``--json`` for scripts."""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path
from typing import Any

import click
from rich.text import Text

from agi_jupyter.amounts import context_gauge
from agi_jupyter.cli import render
from agi_jupyter.cli.common import json_option, open_agi, project_option, project_root
from agi_jupyter.errors import NotFound

TEXT_MIMES = ("application/json", "application/x-ndjson", "application/xml")


@click.command()
@click.argument("run_id", metavar="RUN")
@project_option
@json_option
def artifacts(run_id: str, project: Path | None, as_json: bool) -> None:
    """List a run's artifacts (file diffs, large outputs, reports)."""
    with open_agi(project) as agi:
        agi.run(run_id)
        items = agi.artifacts(run_id)
    if as_json:
        render.print_json(items)
        return
    render.table(
        ["id", "kind", "title", "mime", "size", "created"],
        ([a.id, a.kind, a.title, a.mime, a.size, render.when(a.created_at)] for a in items),
        empty="no artifacts",
    )


@click.command()
@click.argument("artifact_id", metavar="ID")
@click.option(
    "--save",
    type=click.Path(dir_okay=False, writable=True, path_type=Path),
    help="Write its content to this file instead of printing it.",
)
@project_option
@json_option
def artifact(artifact_id: str, save: Path | None, project: Path | None, as_json: bool) -> None:
    """Print an artifact's content (text), or save it with --save."""
    with open_agi(project) as agi:
        meta = agi.artifact(artifact_id)
        content = agi.artifact_content(artifact_id)
    if save is not None:
        save.write_bytes(content)
        click.echo(f"saved {len(content)} bytes to {save}", err=True)
    text = _as_text(meta.mime, content)
    if as_json:
        render.print_json({**asdict(meta), "content": text if save is None else None})
    elif save is None and text is not None:
        click.echo(text, nl=not text.endswith("\n"))
    elif save is None:
        click.echo(
            f"{meta.id}: {meta.kind}, {meta.mime or 'binary'}, {len(content)} bytes; "
            "use --save PATH to write it to a file",
            err=True,
        )


def _as_text(mime: str | None, content: bytes) -> str | None:
    if mime and not (mime.startswith("text/") or mime in TEXT_MIMES or mime.endswith("+json")):
        return None
    try:
        return content.decode("utf-8")
    except UnicodeDecodeError:
        return None


@click.command()
@click.option(
    "--status",
    type=click.Choice(["pending", "in_progress", "done", "cancelled"]),
    help="Only these.",
)
@project_option
@json_option
def tasks(status: Any, project: Path | None, as_json: bool) -> None:
    """List the project's tasks (kept by the `tasks` tool)."""
    with open_agi(project) as agi:
        items = agi.tasks(status)
    if as_json:
        render.print_json(items)
        return
    render.table(
        ["id", "status", "title", "due", "created"],
        (
            [t.id, t.status, t.title, render.when(t.due_at), render.when(t.created_at)]
            for t in items
        ),
        empty="no tasks",
    )


@click.command()
@click.option(
    "--session",
    "session_id",
    metavar="SESSION",
    help="Also how full this session's context is: its last request's tokens of the model's "
    "window, when the next request compacts, its compactions and cached input tokens.",
)
@project_option
@json_option
def stats(session_id: str | None, project: Path | None, as_json: bool) -> None:
    """Counts, tokens and cost of everything in the project's store, and every budget's
    spent and remaining (sessions with a budget, notebooks with one in the config)."""
    with open_agi(project) as agi:
        data = agi.stats()
        budgets = agi.budgets()
        context = agi.context(session_id) if session_id else None
    if as_json:
        extra = {"context": context} if context is not None else {}
        render.print_json({**data, "budgets": budgets, **extra})
        return
    render.fields(
        (key, render.known_usd(value, data.get("unknown_cost_runs", 0), "runs"))
        if key == "cost_usd"
        else (key, _stat(key, value))
        for key, value in data.items()
    )
    for status in budgets:
        click.echo(f"{status.get('session_id') or ''} {render.budget_line(status)}".strip())
    if context is not None:
        gauge = context_gauge(context["gauge"]) or "context: no model request yet"
        click.echo(
            f"{context['session_id']} {gauge}; {context['compactions']} compactions; "
            f"{context['cached_input_tokens']} of {context['input_tokens']} input tokens cached"
        )


def _stat(key: str, value: Any) -> object:
    if isinstance(value, dict):
        return ", ".join(f"{k} {v}" for k, v in sorted(value.items())) or "-"
    return value


@click.command()
@click.option("--agent", "-a", metavar="NAME", help="Only the tools this agent may use.")
@project_option
@json_option
def tools(agent: str | None, project: Path | None, as_json: bool) -> None:
    """List the tools (built-in, the project's own, and its MCP servers').

    MCP servers (.agi/mcp.json) are started to list their tools; one that fails to start is
    named on stderr with the reason and its tools are left out. The review column says what the
    tool policy sees: read, edit or shell; an MCP tool's trust (read or write) and what set it
    (its readOnlyHint annotation, or "trust" in mcp.json).
    """
    from agi_jupyter.mcp.tools import McpTool, server_of

    with open_agi(project) as agi:
        items = agi.tools(agent)
        servers = agi.mcp_servers()
    for server in servers:
        if server["state"] == "failed":
            click.echo(f"agi: MCP server {server['name']} failed: {server['error']}", err=True)
    if as_json:
        render.print_json(
            [
                {
                    "name": t.name,
                    "description": t.description,
                    "read_only": t.read_only,
                    "trait": t.trait,
                    "trust": t.trust if isinstance(t, McpTool) else None,
                    "trust_from": t.trust_from if isinstance(t, McpTool) else None,
                    "source": t.source,
                    "server": server_of(t),
                    "parameters": t.json_schema(),
                }
                for t in items
            ]
        )
        return
    render.table(
        ["name", "source", "read-only", "review", "description"],
        (
            [t.name, t.source, t.read_only, _review(t), render.one_line(t.description, 80)]
            for t in items
        ),
        empty="no tools",
    )


@click.command("mcp-resources")
@click.option("--server", "-s", "only", metavar="NAME", help="Only this MCP server's.")
@project_option
@json_option
def mcp_resources(only: str | None, project: Path | None, as_json: bool) -> None:
    """List what the MCP servers offer besides tools: resources, resource templates, prompts.

    The servers of .agi/mcp.json (and the global mcp.json) are started to list them; one that
    fails to start is named on stderr with the reason. --json gives each server's lists as the
    server sent them (uri, name, description, mimeType; a prompt's arguments).
    """
    with open_agi(project) as agi:
        try:
            servers = agi.mcp_resources(only)
        except NotFound as e:
            raise click.UsageError(e.message) from None
    for server in servers:
        if server["error"]:
            click.echo(f"agi: MCP server {server['name']} failed: {server['error']}", err=True)
    if as_json:
        render.print_json(servers)
        return
    render.table(
        ["server", "kind", "name", "uri / arguments", "description"],
        (row for server in servers for row in _offered(server)),
        empty="no resources or prompts",
    )


def _offered(server: dict[str, Any]) -> list[list[object]]:
    """The table rows of one server's resources, templates and prompts."""
    name = server["name"]
    rows: list[list[object]] = []
    for r in server["resources"]:
        rows.append([name, "resource", r.get("name"), r.get("uri"), _about(r)])
    for t in server["templates"]:
        rows.append([name, "template", t.get("name"), t.get("uriTemplate"), _about(t)])
    for p in server["prompts"]:
        arguments = ", ".join(
            a["name"] + ("" if a.get("required") else "?") for a in p.get("arguments") or []
        )
        rows.append([name, "prompt", p.get("name"), arguments, _about(p)])
    return rows


def _about(item: dict[str, Any]) -> str:
    return render.one_line(item.get("description") or item.get("title") or "", 60)


def _review(tool: Any) -> str:
    """What the tool policy sees: an MCP tool's trust and its origin, else the tool's trait."""
    from agi_jupyter.mcp.tools import McpTool

    if isinstance(tool, McpTool):
        return f"{tool.trust} ({tool.trust_from})"
    return str(tool.trait)


@click.command()
@project_option
@json_option
def agents(project: Path | None, as_json: bool) -> None:
    """List the agents and the tools each may use."""
    with open_agi(project) as agi:
        items = list(agi.agents().values())
        default = agi.config.default_agent
    if as_json:
        render.print_json([{**asdict(a), "default": a.name == default} for a in items])
        return
    render.table(
        ["name", "source", "model", "tools", "description"],
        (
            [
                a.name + (" (default)" if a.name == default else ""),
                a.source,
                a.model,
                ", ".join(a.tools) or "-",
                render.one_line(a.description, 70),
            ]
            for a in items
        ),
        empty="no agents",
    )


@click.command()
@project_option
@json_option
def sdks(project: Path | None, as_json: bool) -> None:
    """List the agent SDKs a session can run on, their capabilities and whether installed."""
    with open_agi(project) as agi:
        items = agi.sdks()
        default = agi.config.default_sdk
    if as_json:
        render.print_json([{**s, "default": s["id"] == default} for s in items])
        return
    render.table(
        ["sdk", "name", "installed", "capabilities"],
        (
            [
                s["id"] + (" (default)" if s["id"] == default else ""),
                s["display_name"],
                "yes" if s["available"] else f"no: {s['reason']}",
                ", ".join(k for k, v in s["capabilities"].items() if v) or "-",
            ]
            for s in items
        ),
        empty="no SDKs",
    )


@click.command()
@click.option(
    "--provider", metavar="VENDOR", help="Only this vendor's models (openai, anthropic, google)."
)
@project_option
@json_option
def models(provider: str | None, project: Path | None, as_json: bool) -> None:
    """List providers and the known models with their prices; a local server's (Ollama,
    LM Studio, vLLM, compat) models are read from its /models."""
    from agi_jupyter.config import load_config
    from agi_jupyter.model_specs import KNOWN_PROVIDERS
    from agi_jupyter.providers import catalog
    from agi_jupyter.providers.local_models import list_local_models

    config = load_config(project_root(project))
    wanted = {n: s for n, s in config.providers.items() if provider in (None, n)}
    local = list_local_models(wanted)
    providers = [
        {
            "name": name,
            "label": known.label,
            "configured": config.provider(name).configured,
            "default_model": config.provider(name).default_model,
            **(
                {"served_models": local[name].models, "served_models_error": local[name].error}
                if name in local
                else {}
            ),
        }
        for name, known in KNOWN_PROVIDERS.items()
    ]
    known_models = catalog.models(provider)
    if as_json:
        render.print_json(
            {"default_model": config.default_model, "providers": providers, "models": known_models}
        )
        return
    _print_models(config.default_model, providers, known_models)


def _served(p: dict[str, Any]) -> str:
    """A local server's models, or why they could not be listed."""
    if "served_models" not in p:
        return ""
    if p["served_models_error"]:
        return f"(not listed: {p['served_models_error']})"
    return ", ".join(p["served_models"]) or "(none loaded)"


def _print_models(default: str, providers: list[dict[str, Any]], known: list[Any]) -> None:
    render.console().print(Text(f"default model: {default}", style="bold"))
    render.table(
        ["provider", "configured", "default model", "what", "served models"],
        (
            [p["name"], p["configured"], p["default_model"], p["label"], _served(p)]
            for p in providers
        ),
        empty="",
    )
    render.table(
        ["model", "context", "$/M in", "$/M cached", "$/M out", "reasoning"],
        (
            [
                f"{m.vendor}:{m.model}",
                f"{m.context_window:,}",
                m.input_per_mtok,
                m.cached_input_per_mtok,
                m.output_per_mtok,
                m.reasoning,
            ]
            for m in known
        ),
        empty="no known models",
    )


COMMANDS = (artifacts, artifact, tasks, stats, tools, mcp_resources, agents, sdks, models)
