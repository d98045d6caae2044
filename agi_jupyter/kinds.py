"""The named kinds of the package, each defined once. Imports nothing from the package.

    ReviewMode   which tool calls wait for a person: ask, auto-edit, auto
    Verdict      what the tool policy says of a call: allow, ask, deny
    SdkName      the agent SDKs a session can run on: native, claude, codex, acp
    ToolTrait    what a tool's calls do: read, edit, shell
    DecisionDoor where a waiting tool call was decided: panel, widget, cell, cli, rest, policy
    StaleReason  why a notebook cell is stale: changed, upstream
    MentionKind  what an @ mention points at: file, notebook, cell, var
    HostedTool   a provider's own tool a session can turn on: web_search, file_search, ...
    ToolRunner   who ran a tool call: us (null) or the provider

They are ``StrEnum``s: a member is its string (``ReviewMode.AUTO_EDIT == "auto-edit"``), so
the stored rows, the REST API and the events carry the same strings as before. The OpenAPI
document lists them as named enum schemas, from which the panel's TypeScript gets the same
constants (``labextension/src/openapi.ts``); the error codes are ``errors.ErrorCode``.
"""

from __future__ import annotations

from enum import StrEnum


class ReviewMode(StrEnum):
    """Which tool calls wait for a person (``tools.policy``): ``ask`` keeps every call the
    policy marks ask; ``auto-edit`` lets file and notebook edits through (commands and code
    still ask); ``auto`` lets everything through (changes stay reviewable and undoable)."""

    ASK = "ask"
    AUTO_EDIT = "auto-edit"
    AUTO = "auto"


class Verdict(StrEnum):
    """A tool rule's verdict: the call runs, waits for a person, or is refused."""

    ALLOW = "allow"
    ASK = "ask"
    DENY = "deny"


class SdkName(StrEnum):
    """The agent SDK that runs a session (DESIGN.md section 10): our own loop, the Claude
    Agent SDK, the Codex CLI, or an agent speaking the Agent Client Protocol."""

    NATIVE = "native"
    CLAUDE = "claude"
    CODEX = "codex"
    ACP = "acp"


class ToolTrait(StrEnum):
    """What a tool's calls do, for review: ``read`` only reads; ``edit`` changes files or
    notebook cells (each change recorded, and undoable: ``auto-edit`` lets these through);
    ``shell`` runs commands or code, or acts in any other way (the default of a tool)."""

    READ = "read"
    EDIT = "edit"
    SHELL = "shell"


class McpTrust(StrEnum):
    """How far an MCP server's tool is trusted (``tools.policy``): ``read`` tools run like
    ``fs.read``; ``write`` tools are treated like commands (they ask in review modes ``ask`` and
    ``auto-edit``). Annotated ``readOnlyHint: true`` means ``read``; ``.agi/mcp.json``'s
    ``trust`` overrides it per server and per tool."""

    READ = "read"
    WRITE = "write"


class DecisionDoor(StrEnum):
    """Where a waiting tool call was decided, stored with the decision and carried by
    ``approval.decided``, so every door showing the question can say who answered it: the
    JupyterLab side ``panel``, the chat ``widget``, the buttons (or ``%agi approve``) of a
    ``%%agi`` ``cell``, the ``cli`` (``agi approve``), any other ``rest`` client, or the tool
    ``policy`` (an *Always* given for another call of the same tool decided this one too)."""

    PANEL = "panel"
    WIDGET = "widget"
    CELL = "cell"
    CLI = "cli"
    REST = "rest"
    POLICY = "policy"


class StaleReason(StrEnum):
    """Why a cell's outputs may be out of date (``notebook.stale``): ``changed``, its source is
    not the one it last ran; ``upstream``, a later execution of another cell re-bound a name
    it reads."""

    CHANGED = "changed"
    UPSTREAM = "upstream"


class MentionKind(StrEnum):
    """What an ``@`` mention of a user message points at: a project ``file``, a ``notebook``,
    a notebook's ``cell`` (by id), a kernel ``var`` (variable) of a notebook, or an MCP
    server's ``resource`` (by URI) or ``prompt`` (by name, one without required arguments)."""

    FILE = "file"
    NOTEBOOK = "notebook"
    CELL = "cell"
    VAR = "var"
    RESOURCE = "resource"
    PROMPT = "prompt"


class HostedTool(StrEnum):
    """A tool the model provider runs itself, inside the response (``providers.hosted``), that a
    session turns on (``tool_config.hosted_tools``; default none): ``web_search`` (OpenAI
    Responses, Anthropic), ``file_search`` (OpenAI Responses, over the session's
    ``vector_store_ids``), ``code_interpreter`` (OpenAI Responses), ``code_execution``
    (Anthropic). Chat Completions and Google offer none."""

    WEB_SEARCH = "web_search"
    FILE_SEARCH = "file_search"
    CODE_INTERPRETER = "code_interpreter"
    CODE_EXECUTION = "code_execution"


class ToolRunner(StrEnum):
    """Who ran a recorded tool call, when not us (``ToolCall.executed_by``): the model's
    ``provider``, inside its response (a hosted tool: never asked about, never run here)."""

    PROVIDER = "provider"


DEFAULT_REVIEW_MODE = ReviewMode.ASK
DEFAULT_SDK = SdkName.NATIVE
