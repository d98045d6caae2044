"""Request and response bodies of the REST API, as pydantic models.

Handlers validate every request body with these (``extra="forbid"``: an unknown field is a 400
``VALIDATION_ERROR``) and build every JSON response from them; ``openapi.py`` generates the
OpenAPI document's schemas from the same classes. Stored records (``records.Session``,
``records.Run``...) are embedded as they are, so the API shows exactly what the store holds.
The event union and the message-part union are discriminated by ``type``.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, Union

from pydantic import BaseModel, ConfigDict, Field, RootModel

from agi_jupyter import events as ev
from agi_jupyter.records import Artifact as ArtifactRecord
from agi_jupyter.records import (
    ArtifactRefPart,
    ErrorPart,
    ImagePart,
    MessageStatus,
    QueueMode,
    ReasoningPart,
    Role,
    Run,
    Session,
    Task,
    TaskStatus,
    TextPart,
    ToolCallPart,
    ToolResultPart,
)

MAX_PAGE_SIZE = 200
JSONObject = dict[str, Any]


class Body(BaseModel):
    """A request body: unknown fields are refused."""

    model_config = ConfigDict(extra="forbid", str_strip_whitespace=False)


class Query(BaseModel):
    """Query parameters: unknown ones are ignored (clients add their own)."""

    model_config = ConfigDict(extra="ignore")


class Out(BaseModel):
    """A response body. Fields with defaults are still always present (required in the doc)."""

    model_config = ConfigDict(json_schema_serialization_defaults_required=True)


# --- unions ----------------------------------------------------------------------------------

PartUnion = Annotated[
    Union[  # noqa: UP007 (a tuple of types reads better than a long | chain here)
        TextPart, ReasoningPart, ToolCallPart, ToolResultPart, ImagePart, ErrorPart, ArtifactRefPart
    ],
    Field(discriminator="type"),
]
# Every member of ``events.Event`` (the one list of events), discriminated by ``type``.
EventUnion = Annotated[ev.Event, Field(discriminator="type")]


class Event(RootModel[EventUnion]):
    """One live event (DESIGN.md section 4): a line of NDJSON, or the data of an SSE event
    whose ``event:`` name is the ``type``."""

    model_config = ConfigDict(json_schema_serialization_defaults_required=True)


class MessagePart(RootModel[PartUnion]):
    """One part of a message, discriminated by ``type``."""

    model_config = ConfigDict(json_schema_serialization_defaults_required=True)


# --- errors ------------------------------------------------------------------------------------


class ErrorDetail(Out):
    code: str = Field(examples=["SESSION_NOT_FOUND", "VALIDATION_ERROR", "RUN_TERMINAL"])
    message: str


class ErrorBody(Out):
    """Every error: ``{"error": {"code", "message"}}``."""

    error: ErrorDetail


# --- query parameters ------------------------------------------------------------------------


class PageQuery(Query):
    page_size: int = Field(50, ge=1, le=MAX_PAGE_SIZE, description="Items per page.")
    cursor: str | None = Field(None, description="The next_cursor of the previous page.")


class HistoryQuery(Query):
    view: Literal["simple", "full"] = Field(
        "simple", description="simple: user/assistant text; full: every part of every message."
    )


class SessionStreamQuery(Query):
    after_cursor: int | None = Field(
        None,
        ge=0,
        description="Resume after this stored-event cursor (the SSE id); default: from now.",
    )


class RunEventsQuery(Query):
    after_seq: int = Field(0, ge=0, description="Replay events with a greater seq.")
    follow: bool = Field(False, description="Keep following live events until run.final.")


class ToolsQuery(Query):
    agent: str | None = Field(None, description="Only the tools this agent is offered.")


class TasksQuery(PageQuery):
    status: TaskStatus | None = None


# --- request bodies --------------------------------------------------------------------------


class TextInput(Body):
    type: Literal["text"] = "text"
    text: str


class ImageInput(Body):
    type: Literal["image"] = "image"
    mime: str
    data_base64: str | None = None
    url: str | None = None


InputPart = Annotated[Union[TextInput, ImageInput], Field(discriminator="type")]  # noqa: UP007


SdkName = Literal["native", "claude", "codex", "acp"]
_SDK_HELP = "The agent SDK that runs the session: native (default), claude, codex or acp."


class SessionCreate(Body):
    title: str | None = None
    agent: str | None = Field(None, description="general, plan, build or a project agent.")
    sdk: SdkName | None = Field(None, description=_SDK_HELP)
    model: str | None = Field(None, description="provider:model, e.g. openai:gpt-5-mini.")
    system_prompt: str | None = None
    thinking_level: str | None = None
    queue_mode: QueueMode = "queue"
    notebook_path: str | None = None
    tools: list[str] = Field(default_factory=list, description="Extra tools for this session.")
    metadata: JSONObject = Field(default_factory=dict)


class SessionUpdate(Body):
    title: str | None = None
    agent: str | None = None
    sdk: SdkName | None = Field(None, description=_SDK_HELP)
    model: str | None = None
    system_prompt: str | None = None
    thinking_level: str | None = None
    queue_mode: QueueMode | None = None
    notebook_path: str | None = None
    tools: list[str] | None = None
    metadata: JSONObject | None = None


class RunOptions(Body):
    model: str | None = Field(None, description="Override the session's model.")
    agent: str | None = Field(None, description="Switch the session to this agent.")
    thinking_level: str | None = None
    max_iterations: int | None = Field(None, ge=1, le=1000)


class MessageCreate(RunOptions):
    """A user message; the reply is streamed (by ``Accept``) or returned when done."""

    content: str | list[InputPart] = Field(description="Text, or a list of text/image parts.")


class RunCreate(RunOptions):
    """A background run: an agent run, or a deep research run."""

    type: Literal["agent", "deep_research"] = "agent"
    execution_mode: Literal["background"] = "background"
    input: str | None = Field(None, description="The prompt; default: the last user message.")
    input_message_id: str | None = None
    system_prompt: str | None = None


class RunStreamCreate(RunOptions):
    """A foreground run whose events are streamed."""

    type: Literal["agent"] = "agent"
    input: str | None = Field(None, description="The prompt; default: the last user message.")
    input_message_id: str | None = None
    system_prompt: str | None = None


class ChatTurn(Body):
    role: Literal["user", "assistant"]
    content: str


class OneShotRequest(RunOptions):
    """One prompt (or a short conversation ending with a user turn) in a fresh session."""

    prompt: str | None = None
    messages: list[ChatTurn] | None = None
    system_prompt: str | None = None
    sdk: SdkName | None = Field(None, description=_SDK_HELP)


class TickRequest(Body):
    max_runs: int = Field(10, ge=1, le=1000)
    max_webhook_events: int = Field(50, ge=1, le=1000)


# --- response bodies -------------------------------------------------------------------------


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


class SessionPage(Out):
    sessions: list[Session]
    next_cursor: str | None = None


class MessagePage(Out):
    messages: list[Message]
    next_cursor: str | None = None


class History(Out):
    view: Literal["simple", "full"]
    messages: list[Message]


class RunResponse(Out):
    run: Run


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
    source: str = Field(description="builtin, project (.agi/tools/) or mcp:<server>.")
    server: str | None = Field(description="The MCP server it comes from, if any.")


class McpServerInfo(Out):
    name: str
    transport: Literal["stdio", "http", "sse"]
    target: str = Field(description="The command, or the URL without credentials.")
    state: Literal["not started", "running", "exited", "failed", "stopped"]
    error: str | None = Field(description="Why it failed to start, with its stderr's tail.")
    tools: list[str]
    source: str = Field(description="The mcp.json file that declares it.")


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


class ProviderList(Out):
    default_model: str
    providers: list[ProviderInfo]


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
    cost_usd: float = 0.0


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
