"""``agi --server URL``: the same prompt through a running server's REST + NDJSON API.

Standard library HTTP only (``urllib``): the CLI needs no HTTP client package. The URL may be
the one ``agi serve`` prints (``http://127.0.0.1:8888/?token=…``): its token is used when
``--token`` is not given. Errors come back as ``{"error": {"code", "message"}}`` and are raised
as the matching ``AgiError``.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs, quote, urlencode, urlsplit, urlunsplit

from agi_jupyter import errors
from agi_jupyter.cli.common import EXIT_WAITING, fail
from agi_jupyter.errors import ErrorCode

if TYPE_CHECKING:
    from http.client import HTTPResponse

    from agi_jupyter.cli.ask import AskOptions
    from agi_jupyter.cli.stream import StreamPrinter

NDJSON = "application/x-ndjson"
_ERRORS: dict[str, type[errors.AgiError]] = {
    ErrorCode.VALIDATION_ERROR: errors.UsageError,
    ErrorCode.CONFIG_ERROR: errors.ConfigError,
    ErrorCode.PROVIDER_NOT_CONFIGURED: errors.ProviderNotConfigured,
    ErrorCode.SDK_NOT_AVAILABLE: errors.SdkNotAvailable,
    ErrorCode.SDK_MODEL_MISMATCH: errors.SdkModelMismatch,
    ErrorCode.SESSION_NOT_FOUND: errors.SessionNotFound,
    ErrorCode.RUN_NOT_FOUND: errors.RunNotFound,
    ErrorCode.ARTIFACT_NOT_FOUND: errors.ArtifactNotFound,
    ErrorCode.AGENT_NOT_FOUND: errors.AgentNotFound,
    ErrorCode.RUN_TERMINAL: errors.RunTerminal,
    ErrorCode.NO_USER_MESSAGE: errors.NoUserMessage,
    ErrorCode.NO_PENDING_APPROVAL: errors.NoPendingApproval,
    ErrorCode.UNDO_CONFLICT: errors.Conflict,
    ErrorCode.RUN_ACTIVE: errors.Conflict,
}
_BY_STATUS: dict[int, type[errors.AgiError]] = {  # codes of newer servers, by their status
    400: errors.UsageError,
    404: errors.NotFound,
    409: errors.Conflict,
}


class ServerClient:
    """Calls ``/agi/v1/...`` of one server, authenticated with its Jupyter token."""

    def __init__(
        self, url: str, token: str | None, project: str | None = None, timeout: float = 30.0
    ) -> None:
        parts = urlsplit(url if "://" in url else "http://" + url)
        query_token = parse_qs(parts.query).get("token", [None])[0]
        self.token = token or query_token
        base_path = parts.path if parts.path.endswith("/") else parts.path + "/"
        self.base = urlunsplit((parts.scheme, parts.netloc, base_path, "", ""))
        self.project = project
        self.timeout = timeout

    def url(self, path: str, **params: str) -> str:
        query = {k: v for k, v in params.items() if v}
        if self.project:
            query["project"] = self.project
        return self.base + "agi/v1/" + path + ("?" + urlencode(query) if query else "")

    def call(self, method: str, path: str, body: Any = None, **params: str) -> Any:
        url = self.url(path, **params)
        with self._open(method, url, body, "application/json", self.timeout) as response:
            data = response.read()
        return json.loads(data) if data else None

    def stream(
        self, path: str, body: Any, method: str = "POST", **params: str
    ) -> Iterator[dict[str, Any]]:
        """Send ``body`` (POST) or ``params`` (GET) and yield the NDJSON objects of the response
        as they arrive (waiting as long as the run takes: a model may think for minutes
        between two events)."""
        with self._open(method, self.url(path, **params), body, NDJSON, None) as response:
            try:
                for line in response:
                    if line.strip():
                        yield json.loads(line)
            except (OSError, http.client.HTTPException) as e:
                raise errors.AgiError(f"lost the connection to {self.base}: {e}") from None

    def _open(
        self, method: str, url: str, body: Any, accept: str, timeout: float | None
    ) -> HTTPResponse:
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(url, data=data, method=method)
        request.add_header("Accept", accept)
        if data is not None:
            request.add_header("Content-Type", "application/json")
        if self.token:
            request.add_header("Authorization", f"token {self.token}")
        try:
            response: HTTPResponse = urllib.request.urlopen(request, timeout=timeout)
        except urllib.error.HTTPError as e:
            raise _error_from(e) from None
        except OSError as e:  # URLError, timeouts
            raise errors.AgiError(f"cannot reach {self.base}: {getattr(e, 'reason', e)}") from None
        return response


def _error_from(response: urllib.error.HTTPError) -> errors.AgiError:
    try:
        error = json.loads(response.read() or b"{}").get("error") or {}
    except (ValueError, AttributeError):
        error = {}
    code = str(error.get("code") or f"HTTP_{response.code}")
    message = str(error.get("message") or f"HTTP {response.code} {response.reason}")
    if response.code in (401, 403):  # exit code 3: not configured
        return errors.ConfigError(
            f"the server refused the token (HTTP {response.code}: {message}); pass the "
            "server's token with --token or set AGI_SERVER_TOKEN",
            code=code,
        )
    cls = _ERRORS.get(code) or _BY_STATUS.get(response.code)
    return cls(message, code=code) if cls is not None else errors.AgiError(message, code=code)


def ask_remote(
    server: str,
    token: str | None,
    project: Path | None,
    options: AskOptions,
    printer: StreamPrinter,
) -> bool:
    """Stream the prompt's run from the server; True when Ctrl-C cancelled it."""
    client = ServerClient(server, token, str(project) if project else None)
    session_id = _session_id(client, options)
    body = {"content": options.prompt, "model": options.model, "agent": options.agent}
    path = f"sessions/{quote(session_id, safe='')}/messages"
    try:
        printer.consume(client.stream(path, {k: v for k, v in body.items() if v}))
    except KeyboardInterrupt:
        printer.progress.stop()
        printer.end_line()
        if printer.run_id:
            with contextlib.suppress(errors.RunTerminal):
                cancelled = client.call("POST", f"runs/{quote(printer.run_id, safe='')}/cancel")
                printer.final = cancelled["run"]
        return True
    if printer.final is None and printer.run_id:
        follow_with_approvals(client, printer.run_id, printer)
    return False


def follow_with_approvals(client: ServerClient, run_id: str, printer: StreamPrinter) -> None:
    """Each time the run stops to wait for approval: ask here on a terminal, send the
    decisions (the server's runner resumes the run) and stream the rest; without a terminal,
    print how to decide and exit with code 5, leaving the run waiting."""
    from agi_jupyter.cli.approve import ask_budget_answer, ask_person, budget_lines, can_ask

    run_path = f"runs/{quote(run_id, safe='')}"
    while client.call("GET", run_path)["run"]["status"] == "waiting_approval":
        listed = client.call("GET", f"{run_path}/approvals")
        waiting, question = listed["approvals"], listed.get("budget")
        if not can_ask():
            names = ", ".join(str(a["name"]) for a in waiting)
            what = f"approval of {names}" if waiting else "a larger budget"
            if question:
                what += " (" + "; ".join(line.strip() for line in budget_lines(question)) + ")"
            fail(
                f"run {run_id} is waiting for {what}; decide with "
                f"POST {client.url(run_path + '/approvals')} (or the side panel)",
                EXIT_WAITING,
            )
        if question and not waiting:
            decision, budget = ask_budget_answer(run_id, question)
            answer = {"decision": decision, "budget": budget, "door": "cli"}
            client.call("POST", f"{run_path}/approvals", answer)
        for call in waiting:
            diff = call.get("diff")
            decision, message = ask_person(str(call["name"]), dict(call["arguments"]), diff)
            body = {"tool_call_id": call["tool_call_id"], "decision": decision, "door": "cli"}
            if message:
                body["message"] = message
            client.call("POST", f"{run_path}/approvals", body)
        events = client.stream(
            f"{run_path}/events", None, "GET", follow="true", after_seq=str(printer.last_seq)
        )
        printer.consume(events)


def _session_id(client: ServerClient, options: AskOptions) -> str:
    if options.session:
        found = client.call("GET", f"sessions/{quote(options.session, safe='')}")
        return str(found["session"]["id"])
    if options.continue_:
        latest = client.call("GET", "sessions", page_size="1")["sessions"]
        if not latest:
            raise errors.UsageError("there is no earlier session to continue")
        return str(latest[0]["id"])
    body = {
        "agent": options.agent,
        "model": options.model,
        "title": options.session_title,
        "tools": list(options.tools),
        "sdk": options.sdk,
        "review_mode": options.review_mode,
        "budget": options.budget,
        "hosted_tools": list(options.hosted_tools),
        "vector_store_ids": list(options.vector_store_ids),
    }
    created = client.call("POST", "sessions", {k: v for k, v in body.items() if v})
    return str(created["session"]["id"])
