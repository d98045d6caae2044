"""One exception tree for the whole package. Imports nothing from the package.

    AgiError                      code, message, http_status, retryable
    ├── UsageError                VALIDATION_ERROR (400): the caller passed something wrong
    │   ├── SdkModelMismatch      SDK_MODEL_MISMATCH (400): the session's SDK cannot run the model
    │   ├── HostedToolUnsupported HOSTED_TOOL_UNSUPPORTED (400): a hosted tool the provider lacks
    │   └── BudgetNotRaised       BUDGET_NOT_RAISED (400): approving a budget question needs more
    ├── ConfigError               CONFIG_ERROR (400): a config file or setting is invalid
    │   ├── ProviderNotConfigured PROVIDER_NOT_CONFIGURED (400): no key / SDK / base URL
    │   └── SdkNotAvailable       SDK_NOT_AVAILABLE (400): an agent SDK / CLI is not installed
    ├── ProviderError             PROVIDER_ERROR (502): the model API failed
    │   ├── ProviderHTTPError     PROVIDER_HTTP_ERROR: an HTTP error status (429, 5xx, 4xx)
    │   └── ProviderDisconnected  PROVIDER_DISCONNECTED: the stream dropped or ended unfinished
    ├── ToolError                 TOOL_ERROR: a tool failed (returned to the model, not raised)
    │   ├── ToolDenied            TOOL_DENIED: the agent may not use this tool
    │   └── PathOutsideProject    PATH_OUTSIDE_PROJECT: a path escapes the project root
    ├── NotFound                  NOT_FOUND (404) and SESSION_/RUN_/ARTIFACT_/AGENT_NOT_FOUND
    │   └── MentionNotFound       MENTION_NOT_FOUND (404): an @ mention names nothing there
    ├── Conflict                  CONFLICT (409)
    │   ├── RunTerminal           RUN_TERMINAL (409): the run already ended
    │   ├── NoUserMessage         NO_USER_MESSAGE (409): nothing for a run to answer
    │   ├── RunLost               RUN_LOST (409): this process no longer owns the run
    │   └── NoPendingApproval     NO_PENDING_APPROVAL (409): no tool call of the run waits
    ├── RunCancelled              RUN_CANCELLED: the run was cancelled
    ├── BudgetExceeded            BUDGET_EXCEEDED (409): a token/cost budget is spent
    ├── CompletionDisabled        COMPLETION_DISABLED (409): inline completion is turned off
    ├── MentionsTooLarge          MENTIONS_TOO_LARGE (413): a message's @ mentions exceed the bound
    ├── AttachmentRefused         ATTACHMENT_REFUSED (422): not an image taken, or too many
    │   └── AttachmentTooLarge    ATTACHMENT_TOO_LARGE (413): an attached image is over the bound
    ├── ModelReadsNoImages        MODEL_READS_NO_IMAGES (409): images attached for a text-only model
    ├── RunStateUnreadable        RUN_STATE_UNREADABLE (500): a run's stored state is unreadable
    └── StoreUnavailable          STORE_UNAVAILABLE (503): the store's database cannot be reached

Every code the package answers or records with is a member of ``ErrorCode`` (the classes'
codes and the ones passed as ``code=``); the OpenAPI document lists them as an enum, from which
the panel's TypeScript gets the same constants.

Messages never contain secrets: callers pass only what is safe to show to a user.
"""

from __future__ import annotations

from enum import StrEnum, unique


@unique
class ErrorCode(StrEnum):
    """Every error code, by what raises it. A member is its string on the wire."""

    # the exception tree below
    AGI_ERROR = "AGI_ERROR"
    VALIDATION_ERROR = "VALIDATION_ERROR"
    SDK_MODEL_MISMATCH = "SDK_MODEL_MISMATCH"
    HOSTED_TOOL_UNSUPPORTED = "HOSTED_TOOL_UNSUPPORTED"
    BUDGET_NOT_RAISED = "BUDGET_NOT_RAISED"
    CONFIG_ERROR = "CONFIG_ERROR"
    PROVIDER_NOT_CONFIGURED = "PROVIDER_NOT_CONFIGURED"
    SDK_NOT_AVAILABLE = "SDK_NOT_AVAILABLE"
    PROVIDER_ERROR = "PROVIDER_ERROR"
    PROVIDER_HTTP_ERROR = "PROVIDER_HTTP_ERROR"
    PROVIDER_DISCONNECTED = "PROVIDER_DISCONNECTED"
    TOOL_ERROR = "TOOL_ERROR"
    TOOL_DENIED = "TOOL_DENIED"
    PATH_OUTSIDE_PROJECT = "PATH_OUTSIDE_PROJECT"
    NOT_FOUND = "NOT_FOUND"
    SESSION_NOT_FOUND = "SESSION_NOT_FOUND"
    RUN_NOT_FOUND = "RUN_NOT_FOUND"
    ARTIFACT_NOT_FOUND = "ARTIFACT_NOT_FOUND"
    AGENT_NOT_FOUND = "AGENT_NOT_FOUND"
    CONFLICT = "CONFLICT"
    RUN_TERMINAL = "RUN_TERMINAL"
    NO_USER_MESSAGE = "NO_USER_MESSAGE"
    RUN_LOST = "RUN_LOST"
    NO_PENDING_APPROVAL = "NO_PENDING_APPROVAL"
    RUN_CANCELLED = "RUN_CANCELLED"
    BUDGET_EXCEEDED = "BUDGET_EXCEEDED"
    STORE_UNAVAILABLE = "STORE_UNAVAILABLE"
    # not found, by what was looked for
    MESSAGE_NOT_FOUND = "MESSAGE_NOT_FOUND"
    TASK_NOT_FOUND = "TASK_NOT_FOUND"
    TOOL_CALL_NOT_FOUND = "TOOL_CALL_NOT_FOUND"
    BLOB_NOT_FOUND = "BLOB_NOT_FOUND"
    WEBHOOK_EVENT_NOT_FOUND = "WEBHOOK_EVENT_NOT_FOUND"
    PROJECT_NOT_FOUND = "PROJECT_NOT_FOUND"
    CURSOR_NOT_FOUND = "CURSOR_NOT_FOUND"
    REQUEST_NOT_FOUND = "REQUEST_NOT_FOUND"
    # the HTTP layer (server/handlers/base.py) and webhooks
    BAD_REQUEST = "BAD_REQUEST"
    UNAUTHORIZED = "UNAUTHORIZED"
    FORBIDDEN = "FORBIDDEN"
    METHOD_NOT_ALLOWED = "METHOD_NOT_ALLOWED"
    PAYLOAD_TOO_LARGE = "PAYLOAD_TOO_LARGE"
    RATE_LIMITED = "RATE_LIMITED"
    INTERNAL_ERROR = "INTERNAL_ERROR"
    HTTP_ERROR = "HTTP_ERROR"  # another HTTP error status (and a client's, without a body)
    BAD_RESPONSE = "BAD_RESPONSE"  # a client's: the server's answer could not be read
    INVALID_SIGNATURE = "INVALID_SIGNATURE"
    WEBHOOK_NOT_CONFIGURED = "WEBHOOK_NOT_CONFIGURED"
    # runs
    RUN_ACTIVE = "RUN_ACTIVE"
    CHANGE_NOT_FOUND = "CHANGE_NOT_FOUND"
    RUN_STATE_UNREADABLE = "RUN_STATE_UNREADABLE"
    RUN_ABANDONED = "RUN_ABANDONED"
    MAX_ITERATIONS_REACHED = "MAX_ITERATIONS_REACHED"
    DEEP_RESEARCH_FAILED = "DEEP_RESEARCH_FAILED"
    # tool calls
    INVALID_ARGUMENTS = "INVALID_ARGUMENTS"
    TOOL_TIMEOUT = "TOOL_TIMEOUT"
    PATCH_FAILED = "PATCH_FAILED"
    # notebooks: their operations, their tabs (the notebook bridge) and undo
    CELL_NOT_FOUND = "CELL_NOT_FOUND"
    HASH_MISMATCH = "HASH_MISMATCH"
    INDEX_OUT_OF_RANGE = "INDEX_OUT_OF_RANGE"
    NOT_A_CODE_CELL = "NOT_A_CODE_CELL"
    CELL_PROTECTED = "CELL_PROTECTED"
    EXECUTION_NOT_FOUND = "EXECUTION_NOT_FOUND"
    NOTEBOOK_NOT_FOUND = "NOTEBOOK_NOT_FOUND"
    NOTEBOOK_CHANGED_ON_DISK = "NOTEBOOK_CHANGED_ON_DISK"
    INVALID_NOTEBOOK = "INVALID_NOTEBOOK"
    NO_KERNEL = "NO_KERNEL"
    SERVER_NOT_READY = "SERVER_NOT_READY"
    NOTEBOOK_TAB_ERROR = "NOTEBOOK_TAB_ERROR"
    NOTEBOOK_TAB_GONE = "NOTEBOOK_TAB_GONE"
    NOTEBOOK_TAB_TIMEOUT = "NOTEBOOK_TAB_TIMEOUT"
    UNDO_CONFLICT = "UNDO_CONFLICT"
    # inline completion
    COMPLETION_DISABLED = "COMPLETION_DISABLED"
    # @ mentions of a user message
    MENTION_NOT_FOUND = "MENTION_NOT_FOUND"
    MENTIONS_TOO_LARGE = "MENTIONS_TOO_LARGE"
    # MCP servers
    MCP_SERVER_NOT_FOUND = "MCP_SERVER_NOT_FOUND"
    # images attached to a user message
    ATTACHMENT_REFUSED = "ATTACHMENT_REFUSED"
    ATTACHMENT_TOO_LARGE = "ATTACHMENT_TOO_LARGE"
    MODEL_READS_NO_IMAGES = "MODEL_READS_NO_IMAGES"


class AgiError(Exception):
    code: str = ErrorCode.AGI_ERROR
    http_status = 500
    retryable = False

    def __init__(self, message: str, *, code: str | None = None, retryable: bool | None = None):
        super().__init__(message)
        self.message = message
        if code is not None:
            self.code = code
        if retryable is not None:
            self.retryable = retryable

    def to_dict(self) -> dict[str, object]:
        return {"code": self.code, "message": self.message, "retryable": self.retryable}


class UsageError(AgiError):
    code = ErrorCode.VALIDATION_ERROR
    http_status = 400


class SdkModelMismatch(UsageError):
    """A session's agent SDK cannot run its model (the claude SDK runs Anthropic models, the
    codex SDK OpenAI Responses models)."""

    code = ErrorCode.SDK_MODEL_MISMATCH


class HostedToolUnsupported(UsageError):
    """A session asks for a provider-hosted tool (``kinds.HostedTool``) its provider's wire API
    does not offer (Chat Completions offers none), or ``file_search`` without vector stores:
    409, the choice conflicts with the session's model (or its missing vector stores)."""

    code = ErrorCode.HOSTED_TOOL_UNSUPPORTED
    http_status = 409


class BudgetNotRaised(UsageError):
    """A run waits for a larger budget, and its approval gave none (or one no larger than the
    budget it has): raise ``max_tokens`` and/or ``max_usd``, or deny."""

    code = ErrorCode.BUDGET_NOT_RAISED


class ConfigError(AgiError):
    code = ErrorCode.CONFIG_ERROR
    http_status = 400


class ProviderNotConfigured(ConfigError):
    code = ErrorCode.PROVIDER_NOT_CONFIGURED


class SdkNotAvailable(ConfigError):
    """An optional agent SDK (``claude-agent-sdk``, the ``codex`` CLI) is missing; the message
    says how to install it."""

    code = ErrorCode.SDK_NOT_AVAILABLE


class ProviderError(AgiError):
    code = ErrorCode.PROVIDER_ERROR
    http_status = 502


class ProviderHTTPError(ProviderError):
    code = ErrorCode.PROVIDER_HTTP_ERROR

    def __init__(
        self,
        message: str,
        *,
        status: int,
        retryable: bool | None = None,
        retry_after: float | None = None,
    ):
        if retryable is None:
            retryable = status == 408 or status == 409 or status == 429 or status >= 500
        super().__init__(message, retryable=retryable)
        self.status = status
        self.retry_after = retry_after


class ProviderDisconnected(ProviderError):
    code = ErrorCode.PROVIDER_DISCONNECTED
    retryable = True


class ToolError(AgiError):
    code = ErrorCode.TOOL_ERROR
    http_status = 400


class ToolDenied(ToolError):
    code = ErrorCode.TOOL_DENIED
    http_status = 403


class PathOutsideProject(ToolError):
    code = ErrorCode.PATH_OUTSIDE_PROJECT
    http_status = 403


class NotFound(AgiError):
    code = ErrorCode.NOT_FOUND
    http_status = 404


class SessionNotFound(NotFound):
    code = ErrorCode.SESSION_NOT_FOUND


class RunNotFound(NotFound):
    code = ErrorCode.RUN_NOT_FOUND


class ArtifactNotFound(NotFound):
    code = ErrorCode.ARTIFACT_NOT_FOUND


class AgentNotFound(NotFound):
    code = ErrorCode.AGENT_NOT_FOUND


class MentionNotFound(NotFound):
    """An ``@`` mention names a file, notebook, cell or variable that is not there."""

    code = ErrorCode.MENTION_NOT_FOUND


class Conflict(AgiError):
    code = ErrorCode.CONFLICT
    http_status = 409


class RunTerminal(Conflict):
    code = ErrorCode.RUN_TERMINAL


class NoUserMessage(Conflict):
    """A run was asked to answer the session's last user message, and there is none."""

    code = ErrorCode.NO_USER_MESSAGE


class RunLost(Conflict):
    """A write of a run's owner found that it no longer owns the run (another process took it
    over after the owner stalled, or the run was released): the owner must stop at once and
    write nothing more. Raised by the ``Store`` methods called with ``fence=``."""

    code = ErrorCode.RUN_LOST


class NoPendingApproval(Conflict):
    """A decision was given for a run (or one of its tool calls) that waits for none."""

    code = ErrorCode.NO_PENDING_APPROVAL


class RunCancelled(AgiError):
    code = ErrorCode.RUN_CANCELLED
    http_status = 409


class CompletionDisabled(AgiError):
    """Inline completion is turned off (``completion`` of the config) for the request's
    language or notebook: the editor should stop asking."""

    code = ErrorCode.COMPLETION_DISABLED
    http_status = 409


class MentionsTooLarge(AgiError):
    """The context a message's ``@`` mentions resolve to is over the bound of one message."""

    code = ErrorCode.MENTIONS_TOO_LARGE
    http_status = 413


class AttachmentRefused(AgiError):
    """An image attached to a user message is not one the server takes (not a PNG, JPEG, GIF
    or WebP image, or not base64), or a message has more than the images one may hold. A 422:
    the body is well formed (its schema says base64, of at most the bound), what its bytes
    hold is not an image the server takes."""

    code = ErrorCode.ATTACHMENT_REFUSED
    http_status = 422


class AttachmentTooLarge(AttachmentRefused):
    """An image attached to a user message is larger than one attached image may be."""

    code = ErrorCode.ATTACHMENT_TOO_LARGE
    http_status = 413


class ModelReadsNoImages(AgiError):
    """Images were attached to a message for a model that reads no images (the catalog's
    ``vision`` flag, or ``models.<key>.vision`` in config): refused before a run starts. A 409
    like ``HOSTED_TOOL_UNSUPPORTED``: the request conflicts with the model it is for."""

    code = ErrorCode.MODEL_READS_NO_IMAGES
    http_status = 409


class BudgetExceeded(AgiError):
    """The next model call of a run would go over its session's or notebook's token or cost
    budget (``agi_jupyter.budget``): the run stops before making it. Not retryable: only a
    larger budget helps."""

    code = ErrorCode.BUDGET_EXCEEDED
    http_status = 409


class RunStateUnreadable(AgiError):
    """A run's stored state (``loop_state``) cannot be read by this version: written by a newer
    one in a format it does not know (its ``version``), or malformed (``run_state_codec``)."""

    code = ErrorCode.RUN_STATE_UNREADABLE


class StoreUnavailable(AgiError):
    """The store's database server cannot be reached (PostgreSQL down, wrong host or password);
    retrying later may work. The message names the database without its password."""

    code = ErrorCode.STORE_UNAVAILABLE
    http_status = 503
    retryable = True
