"""The route table: the one list both the handler registration and the OpenAPI document use.

Each ``Route`` is one operation (method + path) with its handler, its query/body/response
models, whether it streams, and the error codes it can answer with. ``url_patterns()`` turns
the table into tornado URL specs (one per path); ``openapi.py`` turns it into the document.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Literal

from pydantic import BaseModel

from agi_jupyter.errors import ErrorCode
from agi_jupyter.notebook.wire import NotebookRequest
from agi_jupyter.server.handlers.artifacts import ArtifactContentHandler, ArtifactHandler
from agi_jupyter.server.handlers.base import AgiHandler
from agi_jupyter.server.handlers.catalog import (
    AgentsHandler,
    McpResourcesHandler,
    NotebookBudgetsHandler,
    ProvidersHandler,
    SdksHandler,
    StatsHandler,
    TasksHandler,
    ToolsHandler,
)
from agi_jupyter.server.handlers.completions import CompletionsHandler
from agi_jupyter.server.handlers.docs import NotFoundHandler, OpenAPIHandler
from agi_jupyter.server.handlers.mentions import MentionsHandler
from agi_jupyter.server.handlers.messages import MessagesHandler
from agi_jupyter.server.handlers.notebooks import (
    ChangesHandler,
    ExecutionsHandler,
    NotebookBridgeHandler,
    NotebookRepliesHandler,
    RunChangesHandler,
    RunKeepHandler,
    RunRedoHandler,
    RunUndoHandler,
    StaleCellsHandler,
)
from agi_jupyter.server.handlers.oneshot import OneShotHandler
from agi_jupyter.server.handlers.runs import (
    RunApprovalsHandler,
    RunArtifactsHandler,
    RunCancelHandler,
    RunEventsHandler,
    RunHandler,
    SessionRunsHandler,
    SessionRunsStreamHandler,
)
from agi_jupyter.server.handlers.sessions import (
    CompactHandler,
    HistoryHandler,
    SessionHandler,
    SessionsHandler,
    SessionStreamHandler,
)
from agi_jupyter.server.handlers.tick import TickHandler
from agi_jupyter.server.handlers.webhooks import WebhookHandler
from agi_jupyter.server.mcp_http import MCP_PATH, McpHandler
from agi_jupyter.server.models import (
    ApprovalDecision,
    BridgeAnnounce,
    BridgeQuery,
    CancelRequest,
    ChangesQuery,
    CompletionCreate,
    ExecutionsQuery,
    HistoryQuery,
    KeepRequest,
    McpResourcesQuery,
    MentionsQuery,
    MessageCreate,
    NotebookBudgetUpdate,
    NotebookQuery,
    NotebookReply,
    OneShotRequest,
    PageQuery,
    RunCreate,
    RunEventsQuery,
    RunStreamCreate,
    SessionCreate,
    SessionStreamQuery,
    SessionUpdate,
    TasksQuery,
    TickRequest,
    ToolsQuery,
    UndoRequest,
    WebhookPayload,
)
from agi_jupyter.server.responses import (
    Ack,
    AgentList,
    ApprovalList,
    ApprovalResult,
    ArtifactList,
    ArtifactResponse,
    CancelResponse,
    ChangeList,
    CompactionResponse,
    CompletionChunk,
    CompletionResponse,
    CompletionSettingsResponse,
    Deleted,
    ExecutionList,
    History,
    McpResourceList,
    MentionCandidateList,
    Message,
    MessagePage,
    NotebookBudgets,
    ProviderList,
    RunEvents,
    RunPage,
    RunResponse,
    RunResultResponse,
    SdkList,
    SessionPage,
    SessionResponse,
    StaleCellList,
    Stats,
    TaskPage,
    TickResponse,
    ToolList,
    UndoResponse,
    WebhookAck,
)

API_VERSION = "1.0.0"
PREFIX = "/agi"
V1 = f"{PREFIX}/v1"

Method = Literal["GET", "POST", "PATCH", "DELETE"]
StreamFormat = Literal["ndjson", "sse"]

SESSION = (ErrorCode.SESSION_NOT_FOUND,)
RUN = (ErrorCode.RUN_NOT_FOUND,)
AGENT = (ErrorCode.AGENT_NOT_FOUND, ErrorCode.SDK_MODEL_MISMATCH)
# A session's options: hosted tools its model's provider does not offer.
OPTIONS = (*AGENT, ErrorCode.HOSTED_TOOL_UNSUPPORTED)
# A run's start: a provider without a key; in a JSON reply, what made the run fail at once.
START = (ErrorCode.PROVIDER_NOT_CONFIGURED, ErrorCode.SDK_NOT_AVAILABLE, *AGENT)
INPUT = (ErrorCode.NO_USER_MESSAGE, ErrorCode.MESSAGE_NOT_FOUND)
# A message's @ mentions: a name that is not there, over the bound, a notebook with no kernel.
MENTIONS = (
    ErrorCode.MENTION_NOT_FOUND,
    ErrorCode.MENTIONS_TOO_LARGE,
    ErrorCode.NO_KERNEL,
    ErrorCode.PATH_OUTSIDE_PROJECT,
)
# A message's attached images: not an image taken, too many, a text-only model (one too large
# is a validation error: the schema bounds its base64).
IMAGES = (ErrorCode.ATTACHMENT_REFUSED, ErrorCode.MODEL_READS_NO_IMAGES)
WEBHOOK_HEADERS = (
    ("webhook-id", "The delivery's id (the same for every retry of it)."),
    ("webhook-timestamp", "Unix time of the delivery (at most five minutes away from now)."),
    ("webhook-signature", "`v1,<base64 HMAC-SHA256 of id.timestamp.body>` (Standard Webhooks)."),
)


@dataclass(frozen=True)
class Route:
    method: Method
    path: str  # the OpenAPI path: /agi/v1/sessions/{session_id}
    handler: type[AgiHandler]
    operation_id: str
    summary: str
    tag: str
    query: type[BaseModel] | None = None
    body: type[BaseModel] | None = None
    response: type[BaseModel] | None = None
    status: int = 200
    streams: tuple[StreamFormat, ...] = ()
    stream_default: bool = False  # streams unless Accept asks for application/json
    raw_content: str | None = None  # a non-JSON response (artifact content)
    stream_item: type[BaseModel] | None = None  # what a stream carries (default: Event)
    errors: tuple[ErrorCode, ...] = ()
    # Other successful answers, by what the request asked: (status, JSON model, when).
    also: tuple[tuple[int, type[BaseModel], str], ...] = ()
    headers: tuple[tuple[str, str], ...] = ()  # required request headers: (name, description)
    authenticated: bool = True
    project: bool = True
    description: str = field(default="", compare=False)


ROUTES: tuple[Route, ...] = (
    Route("GET", f"{PREFIX}/openapi.json", OpenAPIHandler, "getOpenAPI",
          "This OpenAPI document", "meta", raw_content="application/json", project=False),
    # sessions
    Route("GET", f"{V1}/sessions", SessionsHandler, "listSessions", "List sessions, newest first",
          "sessions", query=PageQuery, response=SessionPage),
    Route("POST", f"{V1}/sessions", SessionsHandler, "createSession", "Create a session",
          "sessions", body=SessionCreate, response=SessionResponse, status=201, errors=OPTIONS),
    Route("GET", f"{V1}/sessions/{{session_id}}", SessionHandler, "getSession", "Get a session",
          "sessions", response=SessionResponse, errors=SESSION),
    Route("PATCH", f"{V1}/sessions/{{session_id}}", SessionHandler, "updateSession",
          "Change a session", "sessions", body=SessionUpdate, response=SessionResponse,
          errors=SESSION + OPTIONS),
    Route("DELETE", f"{V1}/sessions/{{session_id}}", SessionHandler, "deleteSession",
          "Delete a session (its active runs are cancelled first)", "sessions",
          response=Deleted, errors=SESSION),
    Route("GET", f"{V1}/sessions/{{session_id}}/messages", MessagesHandler, "listMessages",
          "List a session's messages, oldest first", "messages", query=PageQuery,
          response=MessagePage, errors=SESSION),
    Route("POST", f"{V1}/sessions/{{session_id}}/messages", MessagesHandler, "postMessage",
          "Send a user message; the reply streams as SSE or NDJSON (by Accept) or returns as JSON",
          "messages", body=MessageCreate, response=RunResultResponse, streams=("ndjson", "sse"),
          also=((201, Message, "run: false: the message, appended without a run"),),
          errors=(*SESSION, *START, ErrorCode.RUN_ACTIVE, *MENTIONS, *IMAGES)),
    Route("GET", f"{V1}/sessions/{{session_id}}/history", HistoryHandler, "getHistory",
          "The session's history, simple or full view", "messages", query=HistoryQuery,
          response=History, errors=SESSION),
    Route("POST", f"{V1}/sessions/{{session_id}}/compact", CompactHandler, "compactSession",
          "Fold the messages before the last turn into a summary the session's model writes, "
          "sent in their place from the next request on (the history is not changed)",
          "sessions", response=CompactionResponse,
          errors=(*SESSION, ErrorCode.PROVIDER_NOT_CONFIGURED, ErrorCode.PROVIDER_ERROR,
                  ErrorCode.PROVIDER_HTTP_ERROR, ErrorCode.PROVIDER_DISCONNECTED)),
    Route("GET", f"{V1}/sessions/{{session_id}}/stream", SessionStreamHandler, "streamSession",
          "Live events of every run of the session (SSE), wherever the runs execute",
          "sessions", query=SessionStreamQuery, streams=("sse",), stream_default=True,
          errors=(*SESSION, ErrorCode.CURSOR_NOT_FOUND)),
    # runs
    Route("GET", f"{V1}/sessions/{{session_id}}/runs", SessionRunsHandler, "listRuns",
          "List a session's runs, newest first", "runs", query=PageQuery, response=RunPage,
          errors=SESSION),
    Route("POST", f"{V1}/sessions/{{session_id}}/runs", SessionRunsHandler, "createRun",
          "Queue a background run (agent or deep_research)", "runs", body=RunCreate,
          response=RunResponse, status=202, errors=SESSION + START + INPUT + MENTIONS + IMAGES),
    Route("POST", f"{V1}/sessions/{{session_id}}/runs:stream", SessionRunsStreamHandler,
          "streamRun", "Start a run and stream its events (NDJSON by default)", "runs",
          body=RunStreamCreate, response=RunResultResponse, streams=("ndjson", "sse"),
          stream_default=True, errors=SESSION + START + INPUT + MENTIONS + IMAGES),
    Route("GET", f"{V1}/runs/{{run_id}}", RunHandler, "getRun", "Get a run", "runs",
          response=RunResponse, errors=RUN),
    Route("POST", f"{V1}/runs/{{run_id}}/cancel", RunCancelHandler, "cancelRun",
          "Cancel a run; the cells its notebook.run started go on running (named in the "
          "answer) unless interrupt", "runs", body=CancelRequest, response=CancelResponse,
          errors=(*RUN, ErrorCode.RUN_TERMINAL)),
    Route("GET", f"{V1}/runs/{{run_id}}/approvals", RunApprovalsHandler, "listApprovals",
          "The run's tool calls waiting for a person's decision", "runs",
          response=ApprovalList, errors=RUN),
    Route("POST", f"{V1}/runs/{{run_id}}/approvals", RunApprovalsHandler, "decideApprovals",
          "Approve or deny the run's waiting tool calls (one, or all without tool_call_id); "
          "once none is undecided the run is queued and resumes", "runs",
          body=ApprovalDecision, response=ApprovalResult,
          errors=(*RUN, ErrorCode.NO_PENDING_APPROVAL, ErrorCode.VALIDATION_ERROR)),
    Route("GET", f"{V1}/runs/{{run_id}}/events", RunEventsHandler, "getRunEvents",
          "Replay a run's persisted events after after_seq; with follow, continue live until "
          "run.final", "runs", query=RunEventsQuery, response=RunEvents,
          streams=("ndjson", "sse"), stream_default=True, errors=RUN),
    Route("GET", f"{V1}/runs/{{run_id}}/artifacts", RunArtifactsHandler, "listRunArtifacts",
          "A run's artifacts", "artifacts", response=ArtifactList, errors=RUN),
    Route("POST", f"{V1}/runs/{{run_id}}/undo", RunUndoHandler, "undoRun",
          "Undo the run's changes (all, from a turn on, or the chosen ones) by a merge per "
          "cell and file: what was changed since is a conflict left as it is, unless forced; "
          "everything else stays", "runs",
          body=UndoRequest, response=UndoResponse,
          errors=(*RUN, ErrorCode.CHANGE_NOT_FOUND, ErrorCode.RUN_ACTIVE)),
    Route("POST", f"{V1}/runs/{{run_id}}/redo", RunRedoHandler, "redoRun",
          "Make the run's undone changes (all, from a turn on, or the chosen ones) again, "
          "by the same merge", "runs",
          body=UndoRequest, response=UndoResponse,
          errors=(*RUN, ErrorCode.CHANGE_NOT_FOUND, ErrorCode.RUN_ACTIVE)),
    Route("GET", f"{V1}/runs/{{run_id}}/changes", RunChangesHandler, "listRunChanges",
          "The changes the run made, one per notebook cell and per file, with unified diffs "
          "and whether each is undone", "runs",
          response=ChangeList, errors=RUN),
    Route("POST", f"{V1}/runs/{{run_id}}/keep", RunKeepHandler, "keepRunChanges",
          "Keep the run's changes (all, or the chosen ones): the user accepted them after "
          "review, so they are no longer to review", "runs",
          body=KeepRequest, response=ChangeList,
          errors=(*RUN, ErrorCode.CHANGE_NOT_FOUND, ErrorCode.RUN_ACTIVE)),
    Route("GET", f"{V1}/changes", ChangesHandler, "listChanges",
          "The changes ended runs made to one notebook or file, in order (to_review: those "
          "neither undone nor kept, as the notebook highlights them)", "runs",
          query=ChangesQuery, response=ChangeList),

    Route("GET", f"{V1}/executions", ExecutionsHandler, "listExecutions",
          "The ledger of a notebook's kernel executions, oldest first: who ran each cell (the "
          "user, or an agent's run and tool call), its source hash, execution count, status "
          "and output summary", "runs",
          query=ExecutionsQuery, response=ExecutionList,
          errors=(ErrorCode.VALIDATION_ERROR, ErrorCode.PATH_OUTSIDE_PROJECT)),
    Route("GET", f"{V1}/executions/stale", StaleCellsHandler, "listStaleCells",
          "A notebook's stale code cells, from the ledger: changed since they last ran, or "
          "reading a name a later execution of another cell re-bound (a static name analysis)",
          "runs", query=NotebookQuery, response=StaleCellList,
          errors=(ErrorCode.VALIDATION_ERROR, ErrorCode.PATH_OUTSIDE_PROJECT)),
    Route("GET", f"{V1}/artifacts/{{artifact_id}}", ArtifactHandler, "getArtifact",
          "Get an artifact's metadata", "artifacts", response=ArtifactResponse,
          errors=(ErrorCode.ARTIFACT_NOT_FOUND,)),
    Route("GET", f"{V1}/artifacts/{{artifact_id}}/content", ArtifactContentHandler,
          "getArtifactContent", "An artifact's content, with its MIME type", "artifacts",
          raw_content="application/octet-stream", errors=(ErrorCode.ARTIFACT_NOT_FOUND,)),
    Route("POST", f"{V1}/one-shot", OneShotHandler, "oneShot",
          "Answer one prompt in a fresh session (streamed by Accept, or JSON)", "messages",
          body=OneShotRequest, response=RunResultResponse, streams=("ndjson", "sse"),
          errors=START),
    # @ mentions
    Route("GET", f"{V1}/mentions", MentionsHandler, "listMentions",
          "What an @ mention may name: project files, or the variables of a notebook's kernel "
          "(name, type, one-line summary), filtered by what was typed", "messages",
          query=MentionsQuery, response=MentionCandidateList,
          errors=(ErrorCode.VALIDATION_ERROR, ErrorCode.NO_KERNEL,
                  ErrorCode.PATH_OUTSIDE_PROJECT)),
    # inline completion (not a run)
    Route("POST", f"{V1}/completions", CompletionsHandler, "complete",
          "Complete at the cursor (inline completion; not a run: counted in stats and notebook "
          "budgets). JSON in the inline completer's shape, or NDJSON lines of the insertion so "
          "far by Accept; closing the connection cancels the model request", "completion",
          body=CompletionCreate, response=CompletionResponse, streams=("ndjson",),
          stream_item=CompletionChunk,
          errors=(ErrorCode.COMPLETION_DISABLED, ErrorCode.BUDGET_EXCEEDED,
                  ErrorCode.PROVIDER_NOT_CONFIGURED, ErrorCode.PROVIDER_ERROR,
                  ErrorCode.PROVIDER_HTTP_ERROR, ErrorCode.PROVIDER_DISCONNECTED)),
    Route("GET", f"{V1}/completions", CompletionsHandler, "completionSettings",
          "The project's completion settings: enabled, model, debounce, what it is off for",
          "completion", response=CompletionSettingsResponse),
    # catalogue
    Route("GET", f"{V1}/agents", AgentsHandler, "listAgents", "Agents of the project", "catalog",
          response=AgentList),
    Route("GET", f"{V1}/tools", ToolsHandler, "listTools", "Tools (of one agent, or all)",
          "catalog", query=ToolsQuery, response=ToolList, errors=(ErrorCode.AGENT_NOT_FOUND,)),
    Route("GET", f"{V1}/mcp/resources", McpResourcesHandler, "listMcpResources",
          "What the configured MCP servers offer besides tools: resources, resource templates "
          "and prompts (servers started to list them; one that cannot start says why)",
          "catalog", query=McpResourcesQuery, response=McpResourceList,
          errors=(ErrorCode.MCP_SERVER_NOT_FOUND,)),
    Route("GET", f"{V1}/providers", ProvidersHandler, "listProviders",
          "Model providers and whether they are configured (never their keys)", "catalog",
          response=ProviderList),
    Route("GET", f"{V1}/sdks", SdksHandler, "listSdks",
          "Agent SDKs, their capabilities and whether they are installed", "catalog",
          response=SdkList),
    Route("GET", f"{V1}/stats", StatsHandler, "getStats", "Counts, tokens and cost", "catalog",
          response=Stats),
    Route("GET", f"{V1}/notebook-budgets", NotebookBudgetsHandler, "listNotebookBudgets",
          "Every notebook budget by path (the config's, with the stored ones over them)",
          "catalog", response=NotebookBudgets),
    Route("PATCH", f"{V1}/notebook-budgets", NotebookBudgetsHandler, "setNotebookBudget",
          "Set (budget null: remove) a notebook's stored budget, seen by every process",
          "catalog", body=NotebookBudgetUpdate, response=NotebookBudgets,
          errors=(ErrorCode.VALIDATION_ERROR,)),
    Route("GET", f"{V1}/tasks", TasksHandler, "listTasks", "The project's tasks", "catalog",
          query=TasksQuery, response=TaskPage),
    # the labextension's notebook bridge (open tabs without real-time collaboration)
    Route("GET", f"{V1}/notebook/bridge", NotebookBridgeHandler, "notebookBridge",
          "A browser window's stream of notebook requests (read, apply a change) for the "
          "notebooks it has open", "notebooks", query=BridgeQuery, streams=("sse",),
          stream_default=True, stream_item=NotebookRequest, project=False),
    Route("POST", f"{V1}/notebook/bridge", NotebookBridgeHandler, "announceNotebooks",
          "The notebooks a browser window has open", "notebooks", body=BridgeAnnounce,
          response=Ack, project=False),
    Route("POST", f"{V1}/notebook/replies", NotebookRepliesHandler, "notebookReply",
          "A tab's answer to a notebook request of this server or of a kernel", "notebooks",
          body=NotebookReply, response=Ack,
          errors=(ErrorCode.REQUEST_NOT_FOUND, ErrorCode.PROJECT_NOT_FOUND), project=False),
    # runner and webhooks
    Route("POST", f"{V1}/webhooks/openai", WebhookHandler, "openaiWebhook",
          "OpenAI webhook (Standard Webhooks signature; no Jupyter auth)", "runner",
          body=WebhookPayload, response=WebhookAck, headers=WEBHOOK_HEADERS,
          errors=(ErrorCode.INVALID_SIGNATURE, ErrorCode.WEBHOOK_NOT_CONFIGURED,
                  ErrorCode.RATE_LIMITED), authenticated=False),
    Route("POST", f"{V1}/runner/tick", TickHandler, "tick",
          "Run one bounded tick: webhook events, polls, stale and queued runs", "runner",
          body=TickRequest, response=TickResponse),
)  # fmt: skip

# Protocol endpoints: their protocol's SDK answers them, so they are no REST operations and
# are not in the OpenAPI document (its description names them).
PROTOCOL_ROUTES: tuple[tuple[str, type[AgiHandler]], ...] = ((MCP_PATH, McpHandler),)

_PARAM = re.compile(r"\{(\w+)\}")


def path_params(path: str) -> list[str]:
    return _PARAM.findall(path)


def url_pattern(path: str) -> str:
    """The tornado regex of an OpenAPI path (relative to the base URL). A ``:`` also matches
    its percent-encoding (``runs%3Astream``), which some clients send."""
    parts = _PARAM.split(path)
    pattern = ""
    for index, part in enumerate(parts):
        if index % 2:
            pattern += f"(?P<{part}>[^/]+)"
        else:
            pattern += "(?::|%3[Aa])".join(re.escape(piece) for piece in part.split(":"))
    return pattern


def url_patterns() -> list[tuple[str, type[AgiHandler]]]:
    """One (pattern, handler) per path, in table order (a path has a single handler class),
    then a JSON 404 for every other path under the prefix."""
    handlers: dict[str, type[AgiHandler]] = {}
    for route in ROUTES:
        known = handlers.setdefault(route.path, route.handler)
        if known is not route.handler:
            raise RuntimeError(f"{route.path}: two handler classes ({known}, {route.handler})")
    patterns = [(url_pattern(path) + "$", handler) for path, handler in handlers.items()]
    protocol = [(url_pattern(path) + "/?$", handler) for path, handler in PROTOCOL_ROUTES]
    return [*patterns, *protocol, (re.escape(PREFIX) + "(?:/.*)?$", NotFoundHandler)]
