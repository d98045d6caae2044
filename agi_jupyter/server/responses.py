"""Response bodies of the REST API, as pydantic models (request bodies: ``models.py``).

Handlers build every JSON response from these and ``openapi.py`` documents them. Stored records
(``records.Session``, ``records.Run``...) are embedded as they are, so a response shows exactly
what the store holds.
"""

from __future__ import annotations

from typing import Literal

from pydantic import ConfigDict, Field

from agi_jupyter.kinds import ToolTrait
from agi_jupyter.notebook.detached import RunningCells
from agi_jupyter.notebook.stale import StaleCell
from agi_jupyter.records import Artifact as ArtifactRecord
from agi_jupyter.records import (
    Compaction,
    KernelExecution,
    MessageStatus,
    Role,
    Run,
    Session,
    Task,
)
from agi_jupyter.server.models import EventUnion, JSONObject, Out, PartUnion


class Message(Out):
    id: str
    session_id: str
    role: Role
    run_id: str | None = None
    status: MessageStatus = "complete"
    text: str = ""
    meta: JSONObject = Field(default_factory=dict)
    parts: list[PartUnion] = Field(default_factory=list)
    created_at: str = ""
    updated_at: str = ""


class SessionResponse(Out):
    session: Session


class CompactionResponse(Out):
    """A compaction made on demand: its record (which messages the summary covers, its cost),
    null when there was nothing before the last turn to fold."""

    compaction: Compaction | None = None


class SessionPage(Out):
    sessions: list[Session]
    next_cursor: str | None = None


class MessagePage(Out):
    messages: list[Message]
    next_cursor: str | None = None


class History(Out):
    view: Literal["simple", "full"]
    messages: list[Message]
    compactions: list[Compaction] = Field(
        default_factory=list,
        description="The session's compactions, oldest first: the messages each folded into a "
        "summary the model reads instead (through_message_id); the history itself is whole.",
    )


class RunResponse(Out):
    run: Run


class CancelResponse(Out):
    """The cancelled run, and the cells its ``notebook.run`` started that were still running:
    left running in their kernel (under their execution handle), or ``interrupted`` when the
    cancel asked for it."""

    run: Run
    cells: list[RunningCells]


class PendingApproval(Out):
    tool_call_id: str
    name: str
    arguments: JSONObject
    created_at: str
    diff: str | None = Field(
        None,
        description="What the call would change (a notebook cell, a file) as a unified diff, "
        "computed now without applying it; null when the tool cannot tell.",
    )


class ApprovalList(Out):
    """The run's tool calls waiting for a decision (empty when none waits), and the budget
    question it waits on (review mode ask: ``reason``, ``budgets`` with spent and limits,
    ``input_tokens_at_least``; null when none)."""

    run: Run
    approvals: list[PendingApproval]
    budget: JSONObject | None = None


class ApprovalResult(Out):
    """The calls decided; ``run`` is ``queued`` once no call is left undecided."""

    run: Run
    decided: list[str]


class RunPage(Out):
    runs: list[Run]
    next_cursor: str | None = None


class RunResultResponse(Out):
    """A finished run: its final answer, the run, its messages and usage."""

    run: Run
    text: str
    messages: list[Message]
    usage: JSONObject


class RunEvents(Out):
    events: list[EventUnion]


class ArtifactResponse(Out):
    artifact: ArtifactRecord


class ArtifactList(Out):
    artifacts: list[ArtifactRecord]


class AgentInfo(Out):
    name: str
    description: str
    tools: list[str]
    read_only: bool
    model: str | None
    sdk: str | None = Field(description="The agent's own SDK (None: the project default).")
    source: str


class AgentList(Out):
    agents: list[AgentInfo]


class SdkCapabilityFlags(Out):
    queue_while_streaming: bool = Field(description="Takes a message into a running turn.")
    interrupt: bool = Field(description="Can stop a running turn cleanly.")
    tool_events: bool = Field(description="Reports tool calls and results.")
    full_history: bool = Field(description="Reports thinking and tools for the full view.")


class SdkInfo(Out):
    id: str
    display_name: str
    capabilities: SdkCapabilityFlags
    available: bool = Field(description="Whether the SDK / CLI is installed here.")
    reason: str | None = Field(description="Why not, with the install command.")


class SdkList(Out):
    default_sdk: str
    sdks: list[SdkInfo]


class ToolInfo(Out):
    name: str
    description: str
    parameters: JSONObject
    read_only: bool = Field(description="Changes nothing (offered to read-only agents).")
    trait: ToolTrait = Field(
        description="What its calls do: read, edit (files or notebook cells; review mode "
        "auto-edit lets these through) or shell (commands, code, anything else)."
    )
    source: str = Field(description="builtin, project (.agi/tools/) or mcp:<server>.")
    server: str | None = Field(description="The MCP server it comes from, if any.")


class McpServerInfo(Out):
    name: str
    transport: Literal["stdio", "http", "sse"]
    target: str = Field(description="The command, or the URL without credentials.")
    state: McpState
    error: str | None = Field(description="Why it failed to start, with its stderr's tail.")
    tools: list[str]
    source: str = Field(description="The mcp.json file that declares it.")


McpState = Literal["not started", "running", "exited", "failed", "stopped"]


class _McpListed(Out):
    """What a server says of a listed resource or template."""

    name: str
    title: str | None = None
    description: str | None = None
    mime_type: str | None = None


class McpResourceInfo(_McpListed):
    """A resource an MCP server lists (an ``@resource`` mention names its server and URI)."""

    uri: str


class McpResourceTemplateInfo(_McpListed):
    """A resource template (a URI with ``{placeholders}``): listed, not mentionable."""

    uri_template: str


class McpPromptArgument(Out):
    name: str
    description: str | None = None
    required: bool = False


class McpPromptInfo(Out):
    name: str
    title: str | None = None
    description: str | None = None
    arguments: list[McpPromptArgument]
    mentionable: bool = Field(
        description="It takes no required argument: an @prompt mention may name it."
    )


class McpServerOffer(Out):
    """What one MCP server offers besides tools; a server that cannot start offers nothing,
    and says why in ``error``."""

    name: str
    state: McpState
    error: str | None = Field(description="Why it failed to start or stopped answering.")
    resources: list[McpResourceInfo]
    templates: list[McpResourceTemplateInfo]
    prompts: list[McpPromptInfo]


class McpResourceList(Out):
    servers: list[McpServerOffer]


class ToolList(Out):
    tools: list[ToolInfo]
    mcp_servers: list[McpServerInfo] = Field(
        description="The configured MCP servers (.agi/mcp.json and the global mcp.json)."
    )


class ProviderInfo(Out):
    name: str
    label: str
    wire: str
    enabled: bool
    configured: bool
    base_url: str | None
    default_model: str | None
    key_env: list[str]
    # A local server's (ollama, lmstudio, vllm, compat) models from its /models; None for the
    # hosted providers (see ``GET /agi/v1/models``-style catalog in the CLI).
    served_models: list[str] | None = None
    served_models_error: str | None = None


class ProviderList(Out):
    default_model: str
    providers: list[ProviderInfo]


class NotebookBudgets(Out):
    """Every notebook budget by path (the config's, with the stored ones over them)."""

    notebook_budgets: dict[str, JSONObject]


class CompletionTotals(Out):
    """Inline completions: not runs (no sessions), counted here. ``unpriced``: requests
    whose cost is unknown, left out of ``cost_usd``; ``cancelled``: superseded ones."""

    requests: int = 0
    cancelled: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float = 0.0
    unpriced: int = 0


class Stats(Out):
    model_config = ConfigDict(extra="allow", json_schema_serialization_defaults_required=True)
    sessions: int = 0
    messages: int = 0
    runs: int = 0
    runs_by_status: dict[str, int] = Field(default_factory=dict)
    tool_calls: int = 0
    artifacts: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    # Of ``input_tokens``, those the providers read from their prompt caches.
    cached_tokens: int = 0
    cost_usd: float = 0.0
    # Runs whose server sent no usage for a turn: not in the token and cost totals.
    unknown_usage_runs: int = 0
    # Runs whose cost is unknown (no usage, or a model without a catalog price): not in
    # ``cost_usd``, which is the total of the costs that were measured.
    unknown_cost_runs: int = 0
    completions: CompletionTotals = Field(default_factory=lambda: CompletionTotals())


class TaskPage(Out):
    tasks: list[Task]
    next_cursor: str | None = None


class WebhookAck(Out):
    ok: bool = True
    duplicate: bool = Field(False, description="True when this event id was already received.")


class TickResponse(Out):
    executed: int
    recovered: int
    failed_stale: int
    skipped: int
    webhook_events: int
    completed_background: int


class Deleted(Out):
    ok: bool = True


class UndoneNotebook(Out):
    path: str
    status: Literal["restored", "unchanged", "conflict"] = Field(
        description="restored: some cell was put back; conflict: nothing was, some cell "
        "changed since (see conflicts)."
    )
    backend: str = Field(description="Where the notebook was changed: file, rtc or tab.")
    forced: bool = False


class UndoneFile(Out):
    path: str
    status: Literal["restored", "removed", "unchanged", "conflict"] = Field(
        description="removed: the run had created the file (for redo: had deleted it)."
    )
    forced: bool = False


class UndoneChange(Out):
    """What undo (or redo) did to one change."""

    id: str
    path: str
    cell_id: str | None = None
    action: str
    status: Literal["reverted", "unchanged", "skipped", "conflict"] = Field(
        description="reverted: put back now; unchanged: already as it should be; skipped: "
        "already undone (redo: not undone); conflict: changed since, left as it is."
    )
    reason: str = ""
    forced: bool = False


class UndoResponse(Out):
    """Per notebook and file, and per change, what undo (or redo) did. Conflicted cells and
    files were left as they are (``conflicts``); everything else was put back."""

    run_id: str
    turn: int | None = None
    redo: bool = False
    notebooks: list[UndoneNotebook]
    files: list[UndoneFile] = Field(default_factory=list)
    changes: list[UndoneChange] = Field(default_factory=list)
    conflicts: list[UndoneChange] = Field(default_factory=list)


class Change(Out):
    """One change of a run: to one cell of a notebook (``cell_id``), or to one file."""

    id: str = Field(description="<change_id>/<cell id> for a cell, change_id for a file.")
    change_id: str = Field(
        description="The stored change (one per tool call and notebook "
        "or file) this one is part of."
    )
    run_id: str | None = None
    turn: int | None = None
    tool_call_id: str | None = None
    kind: Literal["notebook", "file"]
    action: Literal[
        "inserted", "edited", "deleted", "moved", "outputs", "created", "written", "removed"
    ]
    path: str
    cell_id: str | None = None
    before: str | None = Field(
        None,
        description="The cell's source (outputs: their summary lines; moved: its place) or "
        "the file's text before; null where it did not exist (or is binary).",
    )
    after: str | None = None
    diff: str = Field(description="A unified diff of before and after.")
    undone: bool = False
    kept: bool = Field(
        False, description="The user kept it (accepted after review): no longer to review."
    )
    before_sha: str | None = Field(None, description="The notebook's or file's snapshot.")
    after_sha: str | None = None
    created_at: str = ""


class ExecutionList(Out):
    """What a notebook's kernel ran, oldest first: the user's cells, the agent's
    ``notebook.run`` and ``python`` tool calls (with their run and tool call)."""

    executions: list[KernelExecution]


class StaleCellList(Out):
    """A notebook's stale code cells, in notebook order: ``changed`` since they last ran, or
    ``upstream`` (a later execution of ``by_cell_id`` re-bound ``names`` they read)."""

    cells: list[StaleCell]


class ChangeList(Out):
    """The changes a run made to notebook cells and files, in order, with their diffs."""

    changes: list[Change]


class Ack(Out):
    ok: bool = True


class CompletionItem(Out):
    insertText: str = Field(description="The text to insert at the cursor.")


class CompletionUsage(Out):
    input_tokens: int | None = None
    output_tokens: int | None = None
    cost_usd: float | None = Field(None, description="null: unknown (no usage, or no price).")


class CompletionResponse(Out):
    """The inline completer's shape: one item (none when the model had nothing to add)."""

    items: list[CompletionItem]
    model: str = Field(description="provider:model that answered.")
    via: Literal["chat", "llama-infill", "ollama-suffix"] = Field(
        description="A chat turn, or the server's fill-in-the-middle."
    )
    usage: CompletionUsage


class CompletionChunk(Out):
    """A line of a streamed completion: the insertion so far; the last one is ``done``, with
    the model and usage (``type`` says which: every stream line of the API has one)."""

    type: Literal["completion.delta", "completion.done"]
    insertText: str
    done: bool = False
    model: str | None = None
    via: Literal["chat", "llama-infill", "ollama-suffix"] | None = None
    usage: CompletionUsage | None = None


class MentionCandidate(Out):
    """What an ``@`` mention may name: a project file (``ref`` its path) or a kernel variable
    (``ref`` its name; ``type`` and a one-line ``detail``: shape, columns, dtype, length)."""

    kind: Literal["file", "var"]
    ref: str
    type: str | None = None
    detail: str = ""


class MentionCandidateList(Out):
    items: list[MentionCandidate]


class CompletionSettingsResponse(Out):
    """What an editor reads before asking (``completion`` of ``.agi/config.json``)."""

    enabled: bool
    model: str
    debounce_ms: int
    max_output_tokens: int
    disabled_languages: list[str]
    disabled_notebooks: list[str]
