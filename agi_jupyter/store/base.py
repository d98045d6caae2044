"""The ``Store`` protocol: everything above the store talks to it through this API only.

``SqliteStore`` implements it over ``<project>/.agi/agi.sqlite`` (the embedded default);
``PostgresStore`` over a PostgreSQL database shared by several servers (``store/postgres/``).
Both pass the same conformance suite (``tests/store``). Nothing here names a backend's types:
cursors are opaque strings, positions are not row ids. Conventions:

- unknown ids raise a ``NotFound`` (``SessionNotFound``, ``RunNotFound``, ``ArtifactNotFound``,
  or ``NotFound`` with codes ``MESSAGE_NOT_FOUND``, ``TOOL_CALL_NOT_FOUND``, ``TASK_NOT_FOUND``,
  ``WEBHOOK_EVENT_NOT_FOUND``); the compare-and-set methods (``update_run_if``, ``claim_run``,
  ``heartbeat``) return False instead, and listings of an unknown parent are empty;
- unknown or store-managed field names, invalid enum values, bad limits or cursors raise
  ``UsageError``; a uniqueness violation (tool_call_id per run, provider_response_id, a
  ``seq`` already used) raises ``Conflict``;
- every change to a run bumps its ``version`` (heartbeats too, so a recovery decided on a stale
  read loses its compare-and-set);
- fencing: every change of a run's ``owner`` (``claim_run``, ``claim_due_runs``, an update
  setting ``owner``, e.g. a takeover by recovery or a release) bumps its ``epoch``. The writes a
  run's owner makes take ``fence=RunFence(run_id, owner, epoch)`` (``add_message``,
  ``update_message``, ``add_session_usage``, ``update_run``, ``append_run_event(s)``,
  ``create_tool_call``, ``update_tool_call``, ``heartbeat``): the fence is checked in the
  write's own transaction, and a write whose fence no longer holds changes nothing and raises
  ``RunLost``. ``fence=None`` writes unconditionally (callers that own no run);
- listings with cursors are newest first and stable under inserts; the others are in creation
  order;
- times are ISO-8601 UTC strings with milliseconds (``records.utc_now()``), compared as text;
- every method may block on I/O (a database round trip): call them off an event loop that
  must stay responsive.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from types import TracebackType
from typing import Any, Protocol, Self, runtime_checkable

from agi_jupyter.records import (
    JSON,
    Artifact,
    Capability,
    Change,
    ChangeKind,
    Compaction,
    ExecutionOrigin,
    ExecutionStatus,
    KernelExecution,
    Message,
    MessageStatus,
    Page,
    Part,
    QueryResult,
    QueueMode,
    Role,
    Run,
    RunEvent,
    RunFence,
    Session,
    Task,
    TaskStatus,
    ToolCall,
    ToolCallStatus,
    WebhookEvent,
)


class ArtifactWriter(Protocol):
    """An artifact written a piece at a time (a command's large output): ``write`` the bytes,
    then ``commit`` (the row appears, with size and sha256) or ``abort`` (nothing remains)."""

    def write(self, data: bytes) -> None: ...
    def commit(self) -> Artifact: ...
    def abort(self) -> None: ...


@runtime_checkable
class Store(Protocol):
    @property
    def location(self) -> str:
        """Where the data lives, for people (a file path, or a database URL without its
        password and the project's schema)."""
        ...

    @property
    def dialect(self) -> str:
        """The SQL dialect of ``query``: ``"sqlite"`` or ``"postgresql"``."""
        ...

    def close(self) -> None: ...
    def __enter__(self) -> Self: ...
    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None: ...

    # --- sessions -------------------------------------------------------------------------

    def create_session(
        self,
        *,
        title: str | None = None,
        agent: str = "general",
        sdk: str = "native",
        provider: str | None = None,
        model: str | None = None,
        system_prompt: str | None = None,
        thinking_level: str | None = None,
        queue_mode: QueueMode = "queue",
        tool_config: JSON | None = None,
        metadata: JSON | None = None,
        notebook_path: str | None = None,
        budget: JSON | None = None,
    ) -> Session: ...
    def get_session(self, id: str) -> Session: ...
    def list_sessions(
        self, *, limit: int = 50, cursor: str | None = None, notebook_path: str | None = None
    ) -> Page[Session]:
        """Newest first; ``next_cursor`` is opaque and stable under inserts."""
        ...

    def update_session(self, id: str, /, **changes: Any) -> Session: ...
    def delete_session(self, id: str) -> None:
        """Cascades to messages, parts, runs, run events, tool calls, artifacts and their files."""
        ...

    def add_session_usage(
        self,
        id: str,
        *,
        input_tokens: int,
        output_tokens: int,
        cost_usd: float,
        cached_input_tokens: int = 0,
        fence: RunFence | None = None,
    ) -> None: ...

    # --- messages -------------------------------------------------------------------------

    def add_message(
        self,
        session_id: str,
        role: Role,
        parts: Sequence[Part],
        *,
        run_id: str | None = None,
        status: MessageStatus = "complete",
        meta: JSON | None = None,
        fence: RunFence | None = None,
    ) -> Message: ...
    def update_message(
        self,
        id: str,
        *,
        parts: Sequence[Part] | None = None,
        status: MessageStatus | None = None,
        meta: JSON | None = None,
        fence: RunFence | None = None,
    ) -> Message: ...
    def get_message(self, id: str) -> Message: ...
    def list_messages(
        self,
        session_id: str,
        *,
        after_id: str | None = None,
        limit: int | None = None,
        text_only: bool = False,
        lazy: bool = False,
    ) -> list[Message]:
        """``text_only``: only user and assistant messages, each with only its non-empty text
        parts (the simple history view; a message left with no parts is still listed).
        ``lazy``: each message's ``meta`` and ``parts`` are decoded when first read
        (``records.Message.__getattr__``): cheaper for a reader of roles and texts
        (``Agi.history``), dearer for one that reads every message's parts (about twice the
        eager decoding)."""
        ...

    # --- runs -----------------------------------------------------------------------------

    def create_run(self, session_id: str, /, **fields: Any) -> Run: ...
    def get_run(self, id: str) -> Run: ...
    def list_runs(
        self,
        *,
        session_id: str | None = None,
        statuses: Iterable[str] | None = None,
        limit: int = 50,
        cursor: str | None = None,
    ) -> Page[Run]: ...
    def update_run(self, id: str, /, *, fence: RunFence | None = None, **changes: Any) -> Run: ...
    def update_run_if(self, id: str, expected_version: int, /, **changes: Any) -> bool: ...
    def claim_run(self, id: str, expected_version: int, *, owner: str) -> RunFence | None:
        """CAS on ``version``: the run becomes ``running`` with ``owner``, a new ``epoch``, its
        next ``attempt`` (``next_attempt_at`` cleared), a fresh heartbeat and ``started_at``
        kept from its first start. The new fence, or None
        when the version moved on (someone else got it)."""
        ...

    def claim_due_runs(
        self,
        *,
        owner: str,
        stale_before: str,
        limit: int = 10,
        now: str | None = None,
        exclude: Sequence[str] = (),
    ) -> list[Run]:
        """Claim in one atomic step up to ``limit`` due queued runs (as ``claim_run`` does):
        only the oldest queued run of each session, and only of sessions without a running
        run heartbeated at or after ``stale_before``; never the ids in ``exclude``. Oldest
        first. Concurrent callers get disjoint runs (SQLite: one write transaction; PostgreSQL:
        ``FOR UPDATE SKIP LOCKED`` or the like)."""
        ...

    def heartbeat(self, fence: RunFence) -> bool:
        """Refresh the run's ``heartbeat_at`` (bumps ``version``) while ``fence`` holds, else
        ``RunLost``; False, refreshing nothing, when the run is no longer ``running`` (its
        cancel was asked for elsewhere: the owner should end it)."""
        ...

    def due_runs(self, *, now: str | None = None, limit: int = 10) -> list[Run]: ...
    def stale_runs(self, *, heartbeat_before: str, limit: int = 10) -> list[Run]: ...
    def find_replayable_run(self, request_hash: str, *, notebook_path: str | None) -> Run | None:
        """The newest run with this ``request_hash`` that succeeded without an error, started
        from ``notebook_path`` (any notebook if None): what a notebook replay repeats."""
        ...

    def get_run_by_response_id(self, response_id: str) -> Run | None: ...

    # --- run events -----------------------------------------------------------------------

    def append_run_event(
        self,
        run_id: str,
        type: str,
        payload: JSON,
        *,
        seq: int | None = None,
        fence: RunFence | None = None,
    ) -> RunEvent:
        """Numbered after the run's last event, or ``seq`` if given (it must increase)."""
        ...

    def append_run_events(
        self,
        run_id: str,
        events: Sequence[tuple[str, JSON]],
        *,
        seqs: Sequence[int] | None = None,
        fence: RunFence | None = None,
    ) -> list[RunEvent]: ...
    def list_run_events(
        self, run_id: str, *, after_seq: int = 0, limit: int | None = None
    ) -> list[RunEvent]: ...
    def list_session_run_events(
        self, session_id: str, *, after_cursor: str | None = None, limit: int = 500
    ) -> list[tuple[str, RunEvent]]:
        """The events of all runs of a session in the order they became visible, as (cursor,
        event) pairs, after ``after_cursor`` (from the start if None). A tailer that passes
        the last cursor back never misses an event committed later: cursors follow commit
        order, not the order numbers were handed out. Cursors are opaque; a malformed one, or
        one of another backend, is a ``UsageError``."""
        ...

    def session_events_end(self, session_id: str) -> str:
        """The cursor after the session's last stored run event (where "from now" starts)."""
        ...

    # --- tool calls -----------------------------------------------------------------------

    def create_tool_call(
        self,
        run_id: str,
        tool_call_id: str,
        name: str,
        args: JSON,
        *,
        message_id: str | None = None,
        status: ToolCallStatus = "pending",
        fence: RunFence | None = None,
    ) -> ToolCall: ...
    def update_tool_call(
        self, id: str, /, *, fence: RunFence | None = None, **changes: Any
    ) -> ToolCall: ...
    def decide_tool_calls(
        self, run_id: str, decision: JSON, *, tool_call_id: str | None = None
    ) -> list[ToolCall]:
        """Record a person's decision on the run's calls in ``waiting_approval`` that have none
        (all, or the one with ``tool_call_id``); when none is left undecided, a run in
        ``waiting_approval`` is queued, due now, in the same transaction. Returns the calls
        decided (empty: nothing was waiting)."""
        ...

    def get_tool_call(self, id: str) -> ToolCall: ...
    def list_tool_calls(
        self, *, run_id: str | None = None, session_id: str | None = None
    ) -> list[ToolCall]: ...

    # --- artifacts ------------------------------------------------------------------------

    def create_artifact(
        self,
        kind: str,
        *,
        run_id: str | None = None,
        session_id: str | None = None,
        message_part_id: str | None = None,
        title: str | None = None,
        mime: str | None = None,
        data: JSON | None = None,
        text: str | None = None,
        content: bytes | None = None,
        filename: str | None = None,
    ) -> Artifact: ...
    def open_artifact(
        self,
        kind: str,
        *,
        run_id: str | None = None,
        session_id: str | None = None,
        title: str | None = None,
        mime: str | None = None,
        data: JSON | None = None,
        filename: str | None = None,
    ) -> ArtifactWriter:
        """An artifact whose content is written in pieces, never held whole in memory; it
        is always stored as a file (``path``, ``size``, ``sha256``)."""
        ...

    def get_artifact(self, id: str) -> Artifact: ...
    def read_artifact(self, id: str) -> bytes: ...
    def list_artifacts(
        self, *, run_id: str | None = None, session_id: str | None = None
    ) -> list[Artifact]: ...

    # --- webhook events -------------------------------------------------------------------

    def insert_webhook_event(
        self,
        *,
        provider: str,
        event_id: str,
        type: str,
        payload: JSON,
        response_id: str | None = None,
        delivery_id: str | None = None,
    ) -> tuple[WebhookEvent, bool]:
        """Once per event: False (and the stored event) when ``event_id`` or ``delivery_id``
        (the delivery's ``webhook-id`` header) is already known."""
        ...

    def list_unprocessed_webhook_events(self, *, limit: int = 50) -> list[WebhookEvent]: ...
    def mark_webhook_event_processed(self, id: str, *, error: str | None = None) -> bool: ...

    # --- tasks ----------------------------------------------------------------------------

    def create_task(
        self, title: str, *, details: str | None = None, due_at: str | None = None
    ) -> Task: ...
    def get_task(self, id: str) -> Task: ...
    def list_tasks(self, *, status: TaskStatus | None = None) -> list[Task]: ...
    def update_task(self, id: str, /, **changes: Any) -> Task: ...
    def delete_task(self, id: str) -> None: ...
    def due_tasks(self, *, before: str) -> list[Task]: ...

    # --- capabilities ---------------------------------------------------------------------

    def upsert_capability(
        self, name: str, *, description: str, file_path: str, tool_schema: JSON
    ) -> Capability: ...
    def get_capability(self, name: str) -> Capability | None: ...
    def list_capabilities(self) -> list[Capability]: ...
    def delete_capability(self, name: str) -> bool: ...

    # --- notebook budgets (set from a front door; win over the config's) ---------------------

    def set_notebook_budget(self, path: str, budget: JSON | None) -> None:
        """Store the budget of the notebook ``path`` (a ``budget.notebook_key``); None
        removes it."""
        ...

    def notebook_budgets(self) -> dict[str, JSON]:
        """The stored notebook budgets, by path."""
        ...

    # --- compactions (summaries sent in place of older messages) ----------------------------

    def add_compaction(
        self,
        session_id: str,
        *,
        first_message_id: str,
        through_message_id: str,
        message_count: int,
        summary: str,
        run_id: str | None = None,
        provider: str | None = None,
        model: str | None = None,
        input_tokens: int | None = None,
        output_tokens: int | None = None,
        cost_usd: float | None = None,
    ) -> Compaction:
        """Store a summary of ``session_id``'s sendable messages from ``first_message_id``
        through ``through_message_id``; the messages themselves are not changed."""
        ...

    def list_compactions(self, session_id: str) -> list[Compaction]:
        """A session's compactions, oldest first."""
        ...

    def latest_compaction(self, session_id: str) -> Compaction | None:
        """The compaction in use for ``session_id`` (its newest), or None."""

    # --- inline completions (counted, not stored as sessions) --------------------------------

    def add_completion_usage(
        self,
        *,
        path: str,
        model: str,
        input_tokens: int | None,
        output_tokens: int | None,
        cost_usd: float | None,
        cancelled: bool = False,
    ) -> None:
        """Count one completion request of ``model`` (``provider:model``) for the notebook
        ``path`` ('' for none): its tokens (None: not reported) and cost (None: unknown)."""
        ...

    def completion_totals(self, path: str | None = None) -> dict[str, int | float]:
        """requests, cancelled, input_tokens, output_tokens, cost_usd, unpriced: of every
        completion, or of the notebook ``path``'s."""

    # --- the ledger of kernel executions (store/executions.py) -----------------------------

    def start_execution(
        self,
        path: str,
        *,
        origin: ExecutionOrigin,
        cell_id: str | None = None,
        source_hash: str | None = None,
        run_id: str | None = None,
        tool_call_id: str | None = None,
        started_at: str | None = None,
    ) -> KernelExecution:
        """Record an execution of a cell of the notebook ``path`` that started (``running``)."""
        ...

    def end_execution(
        self,
        id: str,
        *,
        status: ExecutionStatus,
        execution_count: int | None = None,
        summary: str | None = None,
    ) -> KernelExecution:
        """Record how an execution ended."""
        ...

    def list_executions(self, path: str, *, limit: int | None = None) -> list[KernelExecution]:
        """The executions of the notebook ``path``, oldest first (the last ``limit``)."""
        ...

    # --- queries and notifications --------------------------------------------------------

    def query(self, sql: str, params: Sequence[Any] = (), *, max_rows: int = 200) -> QueryResult:
        """One read-only SQL statement on this project's data (in ``dialect``), with ``?``
        placeholders on every backend; at most ``max_rows`` rows. A write, a second
        statement, or any database error is a ``UsageError`` carrying the database's message."""
        ...

    def listen(self, callback: Callable[[], None]) -> Callable[[], None]:
        """Call ``callback`` (from another thread) when new work may be claimable in this
        project: a background run was queued, or a run ended whose session has queued runs.
        Returns a function that stops it. A store without notifications (SQLite) never calls
        it: a periodic tick finds the work anyway."""
        ...

    # --- snapshots and changes (undo) ------------------------------------------------------

    def put_blob(self, data: bytes) -> str:
        """Store a content once, addressed by its sha256 (hex), which is returned."""
        ...

    def get_blob(self, sha256: str) -> bytes:
        """A stored content; ``NotFound`` (``BLOB_NOT_FOUND``) if there is none."""
        ...

    def add_change(
        self,
        *,
        run_id: str | None,
        kind: ChangeKind,
        path: str,
        before_sha: str | None,
        after_sha: str | None,
        tool_call_id: str | None = None,
        turn: int | None = None,
    ) -> Change:
        """Record a change of ``path`` (its blobs stored first; None: no content)."""
        ...

    def list_changes(self, *, run_id: str | None = None, path: str | None = None) -> list[Change]:
        """Changes in the order they were made."""
        ...

    def put_notebook_reply(self, request_id: str, payload: JSON) -> None:
        """A JupyterLab tab's answer to a kernel's notebook request (see ``kernel.tab``)."""
        ...

    def take_notebook_reply(self, request_id: str) -> JSON | None:
        """Remove and return the answer to ``request_id``; None while there is none."""
        ...

    # --- stats ----------------------------------------------------------------------------

    def stats(self) -> dict[str, Any]:
        """sessions, messages, runs, runs_by_status, tool_calls, tool_calls_by_name, artifacts,
        tasks, webhook_events, input_tokens, output_tokens, total_tokens, cost_usd."""
        ...
