"""One exception tree for the whole package. Imports nothing from the package.

    AgiError                      code, message, http_status, retryable
    ├── UsageError                VALIDATION_ERROR (400): the caller passed something wrong
    │   ├── SdkModelMismatch      SDK_MODEL_MISMATCH (400): the session's SDK cannot run the model
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
    ├── Conflict                  CONFLICT (409)
    │   ├── RunTerminal           RUN_TERMINAL (409): the run already ended
    │   ├── NoUserMessage         NO_USER_MESSAGE (409): nothing for a run to answer
    │   ├── RunLost               RUN_LOST (409): this process no longer owns the run
    │   └── NoPendingApproval     NO_PENDING_APPROVAL (409): no tool call of the run waits
    ├── RunCancelled              RUN_CANCELLED: the run was cancelled
    ├── BudgetExceeded            BUDGET_EXCEEDED (409): a token/cost budget is spent
    ├── RunStateUnreadable        RUN_STATE_UNREADABLE (500): a run's stored state is unreadable
    └── StoreUnavailable          STORE_UNAVAILABLE (503): the store's database cannot be reached

Messages never contain secrets: callers pass only what is safe to show to a user.
"""

from __future__ import annotations


class AgiError(Exception):
    code = "AGI_ERROR"
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
    code = "VALIDATION_ERROR"
    http_status = 400


class SdkModelMismatch(UsageError):
    """A session's agent SDK cannot run its model (the claude SDK runs Anthropic models, the
    codex SDK OpenAI Responses models)."""

    code = "SDK_MODEL_MISMATCH"


class BudgetNotRaised(UsageError):
    """A run waits for a larger budget, and its approval gave none (or one no larger than the
    budget it has): raise ``max_tokens`` and/or ``max_usd``, or deny."""

    code = "BUDGET_NOT_RAISED"


class ConfigError(AgiError):
    code = "CONFIG_ERROR"
    http_status = 400


class ProviderNotConfigured(ConfigError):
    code = "PROVIDER_NOT_CONFIGURED"


class SdkNotAvailable(ConfigError):
    """An optional agent SDK (``claude-agent-sdk``, the ``codex`` CLI) is missing; the message
    says how to install it."""

    code = "SDK_NOT_AVAILABLE"


class ProviderError(AgiError):
    code = "PROVIDER_ERROR"
    http_status = 502


class ProviderHTTPError(ProviderError):
    code = "PROVIDER_HTTP_ERROR"

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
    code = "PROVIDER_DISCONNECTED"
    retryable = True


class ToolError(AgiError):
    code = "TOOL_ERROR"
    http_status = 400


class ToolDenied(ToolError):
    code = "TOOL_DENIED"
    http_status = 403


class PathOutsideProject(ToolError):
    code = "PATH_OUTSIDE_PROJECT"
    http_status = 403


class NotFound(AgiError):
    code = "NOT_FOUND"
    http_status = 404


class SessionNotFound(NotFound):
    code = "SESSION_NOT_FOUND"


class RunNotFound(NotFound):
    code = "RUN_NOT_FOUND"


class ArtifactNotFound(NotFound):
    code = "ARTIFACT_NOT_FOUND"


class AgentNotFound(NotFound):
    code = "AGENT_NOT_FOUND"


class Conflict(AgiError):
    code = "CONFLICT"
    http_status = 409


class RunTerminal(Conflict):
    code = "RUN_TERMINAL"


class NoUserMessage(Conflict):
    """A run was asked to answer the session's last user message, and there is none."""

    code = "NO_USER_MESSAGE"


class RunLost(Conflict):
    """A write of a run's owner found that it no longer owns the run (another process took it
    over after the owner stalled, or the run was released): the owner must stop at once and
    write nothing more. Raised by the ``Store`` methods called with ``fence=``."""

    code = "RUN_LOST"


class NoPendingApproval(Conflict):
    """A decision was given for a run (or one of its tool calls) that waits for none."""

    code = "NO_PENDING_APPROVAL"


class RunCancelled(AgiError):
    code = "RUN_CANCELLED"
    http_status = 409


class BudgetExceeded(AgiError):
    """The next model call of a run would go over its session's or notebook's token or cost
    budget (``agi_jupyter.budget``): the run stops before making it. Not retryable: only a
    larger budget helps."""

    code = "BUDGET_EXCEEDED"
    http_status = 409


class RunStateUnreadable(AgiError):
    """A run's stored state (``loop_state``) cannot be read by this version: written by a newer
    one in a format it does not know (its ``version``), or malformed (``run_state_codec``)."""

    code = "RUN_STATE_UNREADABLE"


class StoreUnavailable(AgiError):
    """The store's database server cannot be reached (PostgreSQL down, wrong host or password);
    retrying later may work. The message names the database without its password."""

    code = "STORE_UNAVAILABLE"
    http_status = 503
    retryable = True
