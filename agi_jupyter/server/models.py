"""Request bodies, query parameters and shared unions of the REST API, as pydantic models.

Handlers validate every request body with these (``extra="forbid"``: an unknown field is a 400
``VALIDATION_ERROR``); ``openapi.py`` generates the OpenAPI document's schemas from the same
classes. The base classes (``Body``, ``Query``, ``Out``), the error body and the event and
message-part unions (discriminated by ``type``) live here too; the response bodies are in
``responses.py``.
"""

from __future__ import annotations

import re
from enum import StrEnum
from typing import Annotated, Any, Literal, Self, TypeVar, Union

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    JsonValue,
    RootModel,
    ValidationError,
    field_validator,
    model_validator,
)
from pydantic.config import JsonDict

from agi_jupyter import events as ev
from agi_jupyter.errors import ErrorCode
from agi_jupyter.kinds import (
    DecisionDoor,
    HostedTool,
    MentionKind,
    ReviewMode,
    SdkName,
    Verdict,
)
from agi_jupyter.mentions import MAX_MENTIONS, MCP_KINDS
from agi_jupyter.model_specs import model_spec_pattern
from agi_jupyter.notebook.wire import TabReply
from agi_jupyter.records import (
    MAX_ATTACHED_BASE64,
    NON_BLANK,
    ArtifactRefPart,
    ErrorPart,
    HostedToolPart,
    ImagePart,
    MentionPart,
    QueueMode,
    ReasoningPart,
    TaskStatus,
    TextPart,
    ToolCallPart,
    ToolResultPart,
)

E = TypeVar("E", bound=StrEnum)
MAX_PAGE_SIZE = 200
BASE64 = r"^[A-Za-z0-9+/]*={0,2}$"  # base64's alphabet (standard, unwrapped, padded at the end)
MAX_INT = 2**63 - 1  # what a 64-bit database column holds
JSONObject = dict[str, Any]

MODEL_PATTERN = model_spec_pattern()
CLAUDE_MODELS = model_spec_pattern(["anthropic"])
CODEX_MODELS = model_spec_pattern(["openai"])


def _model_spec(value: str) -> str:
    # Python's re, as the document's consumers (and schemathesis) read the pattern; pydantic's
    # own ``pattern`` runs another regex engine, whose \S differs on a few characters.
    if not re.search(MODEL_PATTERN, value):
        raise ValueError("not a model spec: provider:model, or a known model name (gpt-…)")
    return value


ModelSpec = Annotated[
    str,
    AfterValidator(_model_spec),
    Field(
        description="provider:model, e.g. openai:gpt-5-mini (or a bare gpt-…/claude-… name).",
        json_schema_extra={"pattern": MODEL_PATTERN},
    ),
]
Prompt = Annotated[str, Field(pattern=NON_BLANK, description="Not blank.")]


def _sdk_needs_model(sdk: SdkName, pattern: str) -> JsonDict:
    """JSON Schema: with ``sdk`` set to ``sdk``, a ``model`` given is one it runs. (Without a
    model, the session's or the project's default applies; the server answers 409 when that
    one does not fit.)"""
    return {
        "if": {"properties": {"sdk": {"const": sdk.value}}, "required": ["sdk"]},
        "then": {
            "properties": {"model": {"anyOf": [{"type": "null"}, {"pattern": pattern}]}},
        },
    }


SDK_RULES: list[JsonValue] = [
    _sdk_needs_model(SdkName.CLAUDE, CLAUDE_MODELS),
    _sdk_needs_model(SdkName.CODEX, CODEX_MODELS),
]
SDK_MODEL_RULES: JsonDict = {"allOf": SDK_RULES}


class Body(BaseModel):
    """A request body: unknown fields are refused."""

    model_config = ConfigDict(extra="forbid", str_strip_whitespace=False)

    @model_validator(mode="before")
    @classmethod
    def _integral_floats(cls, data: Any) -> Any:
        """JSON Schema's integers include ``206.0``; strict validation takes only ``206``."""
        if not isinstance(data, dict):
            return data
        return {
            k: int(v) if isinstance(v, float) and v.is_integer() and k in _int_fields(cls) else v
            for k, v in data.items()
        }


def _int_fields(model: type[BaseModel]) -> set[str]:
    return {
        name
        for name, f in model.model_fields.items()
        if f.annotation is int or f.annotation == (int | None)
    }


def body_required(model: type[BaseModel]) -> bool:
    """Whether a request body of ``model`` must be sent: ``{}`` is not a valid one (a body
    that may be empty may be left out, and is then ``{}``; the OpenAPI document says the
    same)."""
    try:
        model.model_validate({})
    except ValidationError:
        return True
    return False


class Query(BaseModel):
    """Query parameters: unknown ones are ignored (clients add their own)."""

    model_config = ConfigDict(extra="ignore")


class Out(BaseModel):
    """A response body. Fields with defaults are still always present (required in the doc)."""

    model_config = ConfigDict(json_schema_serialization_defaults_required=True)


# --- unions ----------------------------------------------------------------------------------

PartUnion = Annotated[
    Union[  # noqa: UP007 (a tuple of types reads better than a long | chain here)
        TextPart,
        ReasoningPart,
        ToolCallPart,
        ToolResultPart,
        HostedToolPart,
        ImagePart,
        ErrorPart,
        ArtifactRefPart,
        MentionPart,
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
    code: ErrorCode
    message: str


class ErrorBody(Out):
    """Every error: ``{"error": {"code", "message"}}``."""

    error: ErrorDetail


# --- query parameters ------------------------------------------------------------------------


class PageQuery(Query):
    page_size: int = Field(50, ge=1, le=MAX_PAGE_SIZE, description="Items per page.")
    cursor: str | None = Field(
        None, description="The next_cursor of the previous page (empty: the first page)."
    )

    @field_validator("cursor")
    @classmethod
    def _empty_is_first(cls, value: str | None) -> str | None:
        return value or None


class HistoryQuery(Query):
    view: Literal["simple", "full"] = Field(
        "simple",
        description="simple: user/assistant text (and the user's mentions and images); full: "
        "every part of every message.",
    )


class SessionStreamQuery(Query):
    after_cursor: str | None = Field(
        None,
        description="Resume after this position: the opaque `id` of an SSE event of this "
        "stream (as Last-Event-ID does). Default (and empty): from now.",
    )


class RunEventsQuery(Query):
    after_seq: int = Field(0, ge=0, le=MAX_INT, description="Replay events with a greater seq.")
    follow: bool = Field(False, description="Keep following live events until run.final.")


class ToolsQuery(Query):
    agent: str | None = Field(None, description="Only the tools this agent is offered.")


class MentionsQuery(Query):
    kind: Literal["file", "var"] = Field(
        description="file: project files whose path holds q; var: the variables of the "
        "notebook's kernel whose name holds q."
    )
    q: str = Field("", max_length=200, description="What the typed mention holds so far.")
    notebook_path: str | None = Field(
        None, max_length=1_000, description="The notebook whose kernel's variables (var)."
    )
    limit: int = Field(50, ge=1, le=200)


class McpResourcesQuery(Query):
    server: str | None = Field(
        None, min_length=1, max_length=200, description="Only this MCP server's."
    )


class TasksQuery(PageQuery):
    status: TaskStatus | None = None


class NotebookQuery(Query):
    path: str = Field(
        min_length=1,
        max_length=4096,
        pattern=r"^[^\x00]*\.ipynb$",
        description="The notebook (.ipynb), relative to the project.",
    )


class ExecutionsQuery(NotebookQuery):
    limit: int | None = Field(None, ge=1, le=10_000, description="Only the last N executions.")


# --- request bodies --------------------------------------------------------------------------


class TextInput(Body):
    type: Literal["text"]
    text: str


_ONE_SOURCE: JsonDict = {  # JSON Schema: an image's bytes or its URL, exactly one of them
    "oneOf": [
        {"properties": {key: {"type": "string"}}, "required": [key]}
        for key in ("data_base64", "url")
    ]
}


class ImageInput(Body):
    """An image attached to the message: its bytes in base64 (a PNG, JPEG, GIF or WebP image
    of at most 5 MB, read from its bytes; scaled down and stored as an ``image`` artifact the
    message names), or a URL the model fetches. A message holds at most 4 images, for a model
    that reads images (else ``MODEL_READS_NO_IMAGES``)."""

    model_config = ConfigDict(json_schema_extra=_ONE_SOURCE)

    type: Literal["image"]
    mime: str = Field(description="As sent; the stored type is the one read from the bytes.")
    data_base64: str | None = Field(
        None,
        max_length=MAX_ATTACHED_BASE64,
        pattern=BASE64,
        description="The image's bytes in base64 (a PNG, JPEG, GIF or WebP image; other "
        "bytes are refused: ATTACHMENT_REFUSED, 422).",
    )
    url: str | None = Field(
        None, pattern=r"^https?://", max_length=8_000, description="An http(s) URL."
    )

    @model_validator(mode="after")
    def _one_source(self) -> Self:
        if (self.data_base64 is None) == (self.url is None):
            raise ValueError("an image is given by its data_base64 or by its url (one of them)")
        return self


InputPart = Annotated[Union[TextInput, ImageInput], Field(discriminator="type")]  # noqa: UP007


def _member_of(kind: type[E]) -> BeforeValidator:
    """A request's string as the member of ``kind`` it names (bodies are validated strictly,
    and strict validation of Python data takes only members; the JSON has strings)."""

    def member(value: Any) -> Any:
        return kind(value) if isinstance(value, str) else value

    return BeforeValidator(member)


# The named kinds of kinds.py, as request fields (the document names their enums).
SdkChoice = Annotated[SdkName, _member_of(SdkName)]
ReviewModeChoice = Annotated[ReviewMode, _member_of(ReviewMode)]
VerdictChoice = Annotated[Verdict, _member_of(Verdict)]
DecisionDoorChoice = Annotated[DecisionDoor, _member_of(DecisionDoor)]
MentionKindChoice = Annotated[MentionKind, _member_of(MentionKind)]
HostedToolChoice = Annotated[HostedTool, _member_of(HostedTool)]
_HOSTED_HELP = (
    "The provider's own tools the session's runs may use, run by the provider inside its "
    "response: web_search, file_search, code_interpreter (OpenAI Responses), web_search, "
    "code_execution (Anthropic); Chat Completions offers none (HOSTED_TOOL_UNSUPPORTED). "
    "Default: none."
)
_VECTOR_STORES_HELP = "The OpenAI vector store ids file_search searches (required with it)."
_SDK_HELP = "The agent SDK that runs the session: native (default), claude, codex or acp."
_PERMISSIONS_HELP = (
    "The session's tool rules, over the agent's: a tool name or glob (notebook.*, mcp.*) -> "
    "allow, ask or deny."
)
_REVIEW_HELP = (
    "Which tool calls wait for a person: ask (every call the tool policy marks ask), "
    "auto-edit (file and notebook edits go through; commands and code ask) or auto "
    "(nothing asks). Default: the configured review_mode (AGI_REVIEW_MODE), else ask."
)


_IN_A_NOTEBOOK: JsonDict = {  # JSON Schema: a cell or a variable names its notebook
    "if": {"properties": {"kind": {"enum": ["cell", "var"]}}},
    "then": {"properties": {"notebook_path": {"type": "string"}}, "required": ["notebook_path"]},
}
_ON_A_SERVER: JsonDict = {  # JSON Schema: a resource or a prompt names its MCP server
    "if": {"properties": {"kind": {"enum": ["resource", "prompt"]}}},
    "then": {"properties": {"server": {"type": "string"}}, "required": ["server"]},
}
_NEED_AN_INPUT: JsonDict = {  # JSON Schema: a run's mentions and images go with its input
    "allOf": [
        {
            "if": {"properties": {key: {"minItems": 1}}, "required": [key]},
            "then": {"properties": {"input": {"type": "string"}}, "required": ["input"]},
        }
        for key in ("mentions", "images")
    ]
}


class MentionInput(Body):
    """An ``@`` mention of the message: the server resolves it into a context part of at
    most 2,000 tokens, stored with the message (a message's mentions together: 8,000)."""

    model_config = ConfigDict(json_schema_extra={"allOf": [_IN_A_NOTEBOOK, _ON_A_SERVER]})

    kind: MentionKindChoice
    ref: str = Field(
        min_length=1,
        max_length=1_000,
        description="A path relative to the project (file, notebook), a cell id (cell), a "
        "variable name (var), a resource's URI (resource) or a prompt's name (prompt).",
    )
    notebook_path: str | None = Field(
        None,
        min_length=1,
        max_length=1_000,
        description="The notebook of a cell, or whose kernel holds a var.",
    )
    server: str | None = Field(
        None,
        min_length=1,
        max_length=200,
        description="The MCP server of a resource or a prompt (GET /agi/v1/mcp/resources).",
    )

    @model_validator(mode="after")
    def _say_where(self) -> MentionInput:
        if self.kind in (MentionKind.CELL, MentionKind.VAR) and self.notebook_path is None:
            raise ValueError(f"a {self.kind} mention names its notebook (notebook_path)")
        if self.kind in MCP_KINDS and self.server is None:
            raise ValueError(f"a {self.kind} mention names its MCP server (server)")
        return self


Mentions = Annotated[
    list[MentionInput],
    Field(
        max_length=MAX_MENTIONS,
        description="@ mentions: files, notebooks, cells, kernel variables and MCP resources "
        "and prompts the message points at, resolved into context stored with it.",
    ),
]


class BudgetBody(Body):
    """A session's token/cost budget; either limit optional (see README, Budgets)."""

    max_tokens: int | None = Field(None, ge=1, description="Input + output tokens.")
    max_usd: float | None = Field(None, gt=0, description="List-price cost in USD.")


class NotebookBudgetUpdate(Body):
    """Set (or with ``budget`` null remove) the stored budget of one notebook."""

    path: str = Field(
        min_length=1,
        max_length=4096,
        # No NUL, and something besides "/" and "." (a path that names a notebook).
        pattern=r"^[^\x00]*[^\x00/.][^\x00]*$",
        description="The notebook's path relative to the project.",
    )
    budget: BudgetBody | None = Field(
        description="Its token/cost budget (wins over the config's); null removes it."
    )


class SessionCreate(Body):
    model_config = ConfigDict(json_schema_extra=SDK_MODEL_RULES)

    title: str | None = None
    agent: str | None = Field(None, description="general, plan, build or a project agent.")
    sdk: SdkChoice | None = Field(None, description=_SDK_HELP)
    model: ModelSpec | None = None
    system_prompt: str | None = None
    thinking_level: str | None = None
    queue_mode: QueueMode = "queue"
    notebook_path: str | None = None
    tools: list[str] = Field(default_factory=list, description="Extra tools for this session.")
    metadata: JSONObject = Field(default_factory=dict)
    review_mode: ReviewModeChoice | None = Field(None, description=_REVIEW_HELP)
    permissions: dict[str, VerdictChoice] | None = Field(None, description=_PERMISSIONS_HELP)
    hosted_tools: list[HostedToolChoice] = Field(default_factory=list, description=_HOSTED_HELP)
    vector_store_ids: list[str] = Field(default_factory=list, description=_VECTOR_STORES_HELP)
    budget: BudgetBody | None = Field(
        None,
        description="Stop its runs with BUDGET_EXCEEDED before a model call would go over it "
        "(default: the config's budgets.session).",
    )


class SessionUpdate(Body):
    """Fields to change; a null leaves agent, sdk, model, queue_mode, tools and metadata as
    they are (and clears the others)."""

    model_config = ConfigDict(json_schema_extra=SDK_MODEL_RULES)

    title: str | None = None
    agent: str | None = None
    sdk: SdkChoice | None = Field(None, description=_SDK_HELP)
    model: ModelSpec | None = None
    system_prompt: str | None = None
    thinking_level: str | None = None
    queue_mode: QueueMode | None = None
    notebook_path: str | None = None
    tools: list[str] | None = None
    metadata: JSONObject | None = None
    review_mode: ReviewModeChoice | None = Field(None, description=_REVIEW_HELP)
    permissions: dict[str, VerdictChoice] | None = Field(None, description=_PERMISSIONS_HELP)
    hosted_tools: list[HostedToolChoice] | None = Field(None, description=_HOSTED_HELP)
    vector_store_ids: list[str] | None = Field(None, description=_VECTOR_STORES_HELP)
    budget: BudgetBody | None = Field(None, description="The session's budget; null removes it.")


class RunOptions(Body):
    model: ModelSpec | None = Field(None, description="Override the session's model.")
    agent: str | None = Field(None, description="Switch the session to this agent.")
    thinking_level: str | None = None
    max_iterations: int | None = Field(None, ge=1, le=1000)


def _has_content(parts: list[TextInput | ImageInput]) -> list[TextInput | ImageInput]:
    if not any(isinstance(p, ImageInput) or re.search(NON_BLANK, p.text) for p in parts):
        raise ValueError("the parts hold no image and no text that is not blank")
    return parts


_CONTENT_ITEM: JsonDict = {  # JSON Schema of a part that makes a message non-empty (_has_content)
    "anyOf": [
        {"properties": {"type": {"const": "image"}}},
        {"properties": {"type": {"const": "text"}, "text": {"pattern": NON_BLANK}}},
    ]
}
Parts = Annotated[
    list[InputPart],
    AfterValidator(_has_content),
    Field(min_length=1, json_schema_extra={"contains": _CONTENT_ITEM}),
]


# What only a run takes: with ``run: false`` these must be absent (MessageCreate).
_RUN_ONLY = ("model", "agent", "thinking_level", "max_iterations", "notebook_path", "cell_id")
_APPEND_ONLY: JsonDict = {  # JSON Schema: a message appended without a run takes no run option
    "if": {"properties": {"run": {"const": False}}, "required": ["run"]},
    "then": {"properties": {name: {"type": "null"} for name in _RUN_ONLY}},
}


class MessageCreate(RunOptions):
    """A user message; the reply is streamed (by ``Accept``) or returned when done. With
    ``run: false`` the message is only appended to the session (201, the message): a later
    ``POST /runs`` answers it (its ``input_message_id``, or by default the last user message)."""

    model_config = ConfigDict(json_schema_extra=_APPEND_ONLY)

    content: Prompt | Parts = Field(description="Text, or a list of text/image parts.")
    notebook_path: str | None = Field(
        None,
        description="The notebook the user is looking at (relative to the project or to the "
        "server root): the run's notebook for the notebook tools and the outline.",
    )
    cell_id: str | None = Field(None, description="The notebook's active cell.")
    mentions: Mentions = Field(default_factory=list)
    run: bool = Field(
        True,
        description="false: append the message without starting a run (seed 001 §11.8.3); "
        "the run options must then be absent.",
    )

    @model_validator(mode="after")
    def _no_run_options_without_a_run(self) -> MessageCreate:
        given = [name for name in _RUN_ONLY if getattr(self, name) is not None]
        if not self.run and given:
            raise ValueError(f"run is false: no run, so no {', '.join(given)}")
        return self


_INPUT_OR_MESSAGE: JsonDict = {  # JSON Schema: not both input and input_message_id
    "not": {
        "properties": {"input": {"type": "string"}, "input_message_id": {"type": "string"}},
        "required": ["input", "input_message_id"],
    }
}
_RESEARCH_MODELS: JsonDict = {  # JSON Schema: deep research runs take OpenAI models
    "if": {"properties": {"type": {"const": "deep_research"}}, "required": ["type"]},
    "then": {
        "properties": {
            "model": {"anyOf": [{"type": "null"}, {"type": "string", "pattern": CODEX_MODELS}]}
        }
    },
}


class RunInput(RunOptions):
    """What a new run answers, as both run bodies take it: a prompt (or the last user
    message), a system prompt, and the prompt's mentions."""

    input: Prompt | None = Field(None, description="The prompt; default: the last user message.")
    input_message_id: str | None = None
    system_prompt: str | None = None
    mentions: Mentions = Field(default_factory=list)
    images: list[ImageInput] = Field(
        default_factory=list, description="Images attached to the prompt (see ImageInput)."
    )

    @model_validator(mode="after")
    def _mentions_go_with_an_input(self) -> Self:
        if (self.mentions or self.images) and self.input is None:
            raise ValueError("mentions and images go with an input (the prompt they belong to)")
        return self


class RunCreate(RunInput):
    """A background run: an agent run, or a deep research run."""

    model_config = ConfigDict(
        json_schema_extra={"allOf": [_INPUT_OR_MESSAGE, _RESEARCH_MODELS, _NEED_AN_INPUT]}
    )

    type: Literal["agent", "deep_research"] = "agent"
    execution_mode: Literal["background"] = "background"


class RunStreamCreate(RunInput):
    """A foreground run whose events are streamed."""

    model_config = ConfigDict(json_schema_extra={"allOf": [_INPUT_OR_MESSAGE, _NEED_AN_INPUT]})

    type: Literal["agent"] = "agent"


class ChatTurn(Body):
    role: Literal["user", "assistant"]
    content: Prompt


_PROMPT_OR_MESSAGES: JsonDict = {  # JSON Schema: exactly one of prompt and messages
    "oneOf": [
        {"properties": {"prompt": {"type": "string"}}, "required": ["prompt"]},
        {"properties": {"messages": {"type": "array"}}, "required": ["messages"]},
    ]
}


_A_USER_TURN: JsonDict = {"properties": {"role": {"const": "user"}}, "required": ["role"]}


class OneShotRequest(RunOptions):
    """One prompt, or a short conversation answered in a fresh session: the run answers its
    last user turn, and the assistant turns after that one reach the model as they are (the
    start of its answer, which Anthropic models continue)."""

    model_config = ConfigDict(json_schema_extra={"allOf": [_PROMPT_OR_MESSAGES, *SDK_RULES]})

    prompt: Prompt | None = None
    messages: list[ChatTurn] | None = Field(
        None, min_length=1, json_schema_extra={"contains": _A_USER_TURN}
    )
    system_prompt: str | None = None
    sdk: SdkChoice | None = Field(None, description=_SDK_HELP)

    @model_validator(mode="after")
    def _prompt_or_a_conversation(self) -> OneShotRequest:
        if (self.prompt is None) == (self.messages is None):
            raise ValueError("give either prompt or messages")
        if self.messages is not None and all(t.role != "user" for t in self.messages):
            raise ValueError("messages: the conversation has no user turn to answer")
        return self


class WebhookPayload(BaseModel):
    """An OpenAI webhook event (checked only after its signature): its ``type`` says what
    happened, ``data.id`` names the response it is about."""

    model_config = ConfigDict(extra="allow")

    type: str = Field(examples=["response.completed"])
    id: str | None = Field(None, description="The event id (deliveries are kept once per id).")
    object: str | None = None
    created_at: int | None = None
    data: JSONObject | None = Field(None, description="{id: the response id}")


class TickRequest(Body):
    max_runs: int = Field(10, ge=1, le=1000)
    max_webhook_events: int = Field(50, ge=1, le=1000)


class ApprovalDecision(Body):
    """A person's decision on a run's tool calls waiting for approval."""

    tool_call_id: str | None = Field(
        None, description="The call to decide; without it, every call of the run that waits."
    )
    decision: Literal["approve", "deny", "approve_always"] = Field(
        description="approve_always also approves the tool for the rest of the session."
    )
    message: str | None = Field(
        None, max_length=10_000, description="Given to the model with a denial."
    )
    budget: BudgetBody | None = Field(
        None,
        description="For a run waiting for a larger budget (its budget question): the "
        "session's new limits, each above the current one (else 400 BUDGET_NOT_RAISED).",
    )
    door: DecisionDoorChoice = Field(
        DecisionDoor.REST,
        description="Where the person decided (the side panel says panel, agi --server says "
        "cli); stored with the decision, with the server's user name, and carried by "
        "approval.decided so every door showing the question says who answered it.",
    )


# --- notebooks: undo, changes, the labextension's notebook bridge ------------------------------


class UndoRequest(Body):
    force: bool | list[str] = Field(
        False,
        description="Put back conflicted cells and files anyway (those changed after the "
        "run): true for every one of the chosen changes, or a list of the cell ids, file "
        "paths or change ids to force (only those).",
    )
    turn: int | None = Field(
        None,
        ge=1,
        description="Rewind to before this model turn of the run (it and the later turns are "
        "undone); default: the whole run.",
    )
    changes: list[str] | None = Field(
        None,
        max_length=10_000,
        description="Only these changes (ids of GET /runs/{id}/changes, or a stored change's "
        "id for every cell it touched); with turn, they must be of that turn or later.",
    )


class CancelRequest(Body):
    interrupt: bool = Field(
        False,
        description="Also interrupt the cells the run's notebook.run left running (default: "
        "they go on in their kernel, and the answer names them).",
    )


class KeepRequest(Body):
    changes: list[str] | None = Field(
        None,
        max_length=10_000,
        description="Only these changes (ids of GET /runs/{id}/changes, or a stored change's "
        "id for every cell it touched); default: every change of the run not undone.",
    )


class ChangesQuery(Query):
    path: str = Field(
        min_length=1,
        max_length=4096,
        pattern=r"^[^\x00]*$",
        description="The notebook or file, relative to the project (as changes name it).",
    )
    to_review: bool = Field(
        False, description="Only the changes still to review: neither undone nor kept."
    )


class NotebookReply(Body):
    """A JupyterLab tab's answer to a notebook request (of this server, or of a kernel)."""

    request_id: str = Field(min_length=1, max_length=200)
    reply: TabReply
    project_dir: str | None = Field(
        None, description="A kernel's request: the kernel's project folder (absolute path)."
    )


class BridgeQuery(Query):
    client_id: str = Field(min_length=1, max_length=200, description="The browser window.")


class BridgeAnnounce(Body):
    client_id: str = Field(min_length=1, max_length=200)
    open: list[str] = Field(description="Notebooks open in the window, relative to the root.")


# --- inline completion ---------------------------------------------------------------------------

MAX_CODE_CHARS = 100_000  # a prefix or a suffix: the server keeps what fits in context_tokens


class CompletionCell(Body):
    """A cell around the cursor (markdown goes to the model as comments)."""

    cell_type: Literal["code", "markdown", "raw"] = "code"
    source: str = Field(max_length=20_000)


class CompletionVariable(Body):
    """A kernel variable: ``summary`` is what its type makes useful (a DataFrame's columns
    and dtypes, an array's shape and dtype)."""

    name: str = Field(min_length=1, max_length=200)
    type: str = Field(max_length=200)
    summary: str = Field("", max_length=2_000)


class CompletionCreate(Body):
    """The text around the cursor. The answer streams as NDJSON when ``Accept`` asks for
    ``application/x-ndjson`` (the insertion so far on each line, then the final one with
    ``done``), else it is one JSON body in the inline completer's shape."""

    prefix: str = Field(max_length=MAX_CODE_CHARS, description="The text before the cursor.")
    suffix: str = Field("", max_length=MAX_CODE_CHARS, description="The text after the cursor.")
    language: str = Field("python", min_length=1, max_length=50, pattern=r"^[\w.+#-]+$")
    path: str | None = Field(
        None,
        max_length=1_000,
        description="The notebook or file, relative to the project "
        "(its budget applies; completion.notebooks may turn it off).",
    )
    cell_id: str | None = Field(None, max_length=200)
    model: ModelSpec | None = Field(None, max_length=200)
    cells_before: list[CompletionCell] = Field(
        default_factory=list, max_length=50, description="The cells above, in order."
    )
    cells_after: list[CompletionCell] = Field(
        default_factory=list, max_length=50, description="The cells below, in order."
    )
    variables: list[CompletionVariable] = Field(default_factory=list, max_length=100)
    max_output_tokens: int | None = Field(None, ge=1, le=2_048)
