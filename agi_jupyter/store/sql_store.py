"""``SqlStore``: the ``Store`` protocol over one ``sql.Database``, as a set of repositories.

Each resource is a repository object holding the shared database (and its dialect):
``Sessions``, ``Messages``, ``Runs``, ``RunEvents``, ``ToolCalls``, ``Artifacts``, ``Webhooks``,
``Tasks``, ``Capabilities``, ``NotebookBudgets``, ``Compactions``, ``CompletionUsage``,
``Changes``, ``NotebookReplies``, ``Executions``, ``Stats``.
The store holds them and hands each protocol method to its repository: ``store.create_run`` is
``store.runs.create_run`` (bound once, when the store is made; mypy checks every signature
against the protocol, ``sqlite._implements_protocol``). A backend (``SqliteStore``,
``postgres.PostgresStore``) adds its connection, where artifacts' large payloads go,
``query`` and ``listen``.
"""

from __future__ import annotations

from types import TracebackType
from typing import Self

from agi_jupyter.store.artifacts import Artifacts, Payloads
from agi_jupyter.store.budgets import NotebookBudgets
from agi_jupyter.store.capabilities import Capabilities
from agi_jupyter.store.changes import Changes
from agi_jupyter.store.compactions import Compactions
from agi_jupyter.store.completions import CompletionUsage
from agi_jupyter.store.events import RunEvents
from agi_jupyter.store.executions import Executions
from agi_jupyter.store.messages import Messages
from agi_jupyter.store.replies import NotebookReplies
from agi_jupyter.store.runs import Runs
from agi_jupyter.store.sessions import Sessions
from agi_jupyter.store.sql import Database
from agi_jupyter.store.stats import Stats
from agi_jupyter.store.tasks import Tasks
from agi_jupyter.store.tool_calls import ToolCalls
from agi_jupyter.store.values import LargeValues
from agi_jupyter.store.webhooks import Webhooks


class SqlStore:
    """The repositories of one database; the protocol's methods are theirs."""

    def __init__(self, db: Database, payloads: Payloads, *, artifact_threshold: int) -> None:
        self.database = db
        self.artifacts = Artifacts(db, payloads, threshold=artifact_threshold)
        self.sessions = Sessions(db, payloads)
        values = LargeValues(db)
        self.messages = Messages(db, values)
        self.runs = Runs(db)
        self.events = RunEvents(db, values)
        self.tool_calls = ToolCalls(db, values)
        self.webhooks = Webhooks(db)
        self.tasks = Tasks(db)
        self.capabilities = Capabilities(db)
        self.budgets = NotebookBudgets(db)
        self.compactions = Compactions(db)

        self.completions = CompletionUsage(db)
        self.changes = Changes(db)
        self.replies = NotebookReplies(db)
        self.executions = Executions(db)
        self.statistics = Stats(db)

        sessions = self.sessions
        self.create_session = sessions.create_session
        self.get_session = sessions.get_session
        self.list_sessions = sessions.list_sessions
        self.update_session = sessions.update_session
        self.delete_session = sessions.delete_session
        self.add_session_usage = sessions.add_session_usage

        messages = self.messages
        self.add_message = messages.add_message
        self.update_message = messages.update_message
        self.get_message = messages.get_message
        self.list_messages = messages.list_messages

        runs = self.runs
        self.create_run = runs.create_run
        self.get_run = runs.get_run
        self.list_runs = runs.list_runs
        self.update_run = runs.update_run
        self.update_run_if = runs.update_run_if
        self.claim_run = runs.claim_run
        self.claim_due_runs = runs.claim_due_runs
        self.heartbeat = runs.heartbeat
        self.due_runs = runs.due_runs
        self.stale_runs = runs.stale_runs
        self.find_replayable_run = runs.find_replayable_run
        self.get_run_by_response_id = runs.get_run_by_response_id

        events = self.events
        self.append_run_event = events.append_run_event
        self.append_run_events = events.append_run_events
        self.list_run_events = events.list_run_events
        self.list_session_run_events = events.list_session_run_events
        self.session_events_end = events.session_events_end

        tool_calls = self.tool_calls
        self.create_tool_call = tool_calls.create_tool_call
        self.update_tool_call = tool_calls.update_tool_call
        self.decide_tool_calls = tool_calls.decide_tool_calls
        self.get_tool_call = tool_calls.get_tool_call
        self.list_tool_calls = tool_calls.list_tool_calls

        artifacts = self.artifacts
        self.create_artifact = artifacts.create_artifact
        self.open_artifact = artifacts.open_artifact
        self.get_artifact = artifacts.get_artifact
        self.read_artifact = artifacts.read_artifact
        self.list_artifacts = artifacts.list_artifacts

        webhooks = self.webhooks
        self.insert_webhook_event = webhooks.insert_webhook_event
        self.list_unprocessed_webhook_events = webhooks.list_unprocessed_webhook_events
        self.mark_webhook_event_processed = webhooks.mark_webhook_event_processed

        tasks = self.tasks
        self.create_task = tasks.create_task
        self.get_task = tasks.get_task
        self.list_tasks = tasks.list_tasks
        self.update_task = tasks.update_task
        self.delete_task = tasks.delete_task
        self.due_tasks = tasks.due_tasks

        capabilities = self.capabilities
        self.upsert_capability = capabilities.upsert_capability
        self.get_capability = capabilities.get_capability
        self.list_capabilities = capabilities.list_capabilities
        self.delete_capability = capabilities.delete_capability

        self.set_notebook_budget = self.budgets.set_notebook_budget
        self.notebook_budgets = self.budgets.notebook_budgets
        self.add_completion_usage = self.completions.add_completion_usage
        self.completion_totals = self.completions.completion_totals

        compactions = self.compactions
        self.add_compaction = compactions.add_compaction
        self.list_compactions = compactions.list_compactions
        self.latest_compaction = compactions.latest_compaction

        changes = self.changes
        self.put_blob = changes.put_blob
        self.get_blob = changes.get_blob
        self.add_change = changes.add_change
        self.list_changes = changes.list_changes

        self.put_notebook_reply = self.replies.put_notebook_reply
        self.take_notebook_reply = self.replies.take_notebook_reply

        executions = self.executions
        self.start_execution = executions.start_execution
        self.end_execution = executions.end_execution
        self.list_executions = executions.list_executions

        self.stats = self.statistics.stats

    @property
    def artifact_threshold(self) -> int:
        return self.artifacts.threshold

    @property
    def dialect(self) -> str:
        return self.database.dialect.name

    def close(self) -> None:
        """Close the connection(s); the store cannot be used afterwards. Safe to call twice."""
        self.database.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()
