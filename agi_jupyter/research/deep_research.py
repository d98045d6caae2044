"""Deep research runs (DESIGN.md section 8): background Responses completed by webhook or poll.

    queued -> running: responses.create(background=True, Idempotency-Key=<run id>-<attempt>)
           -> waiting_webhook (provider_response_id stored, next_attempt_at = next poll)
           -> processing_webhook (claimed by whoever saw it finish: a webhook event or a poll)
           -> succeeded (deep_research_report artifact + assistant message) | failed | cancelled

Every step that finishes a run is a compare-and-set on the run's version, so concurrent ticks,
pollers and webhook deliveries in any number of processes complete a run exactly once.

All of it runs on the runtime loop, which runs every agent of the process, so its store calls
go to the store thread (``RuntimeDeps.stored``): parking a run is the attempt's ending, a
``RunEmitter.section`` there, and completing one (the claim, the report, the run's end) is one
call there, whole, its events published as they are stored.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

from agi_jupyter import events as ev
from agi_jupyter.aio import regardless
from agi_jupyter.errors import Conflict, ErrorCode, ProviderError, RunLost
from agi_jupyter.providers.base import Usage
from agi_jupyter.providers.catalog import cost_usd
from agi_jupyter.records import (
    JSON,
    ArtifactRefPart,
    Part,
    Run,
    Session,
    TextPart,
    WebhookEvent,
    utc_now,
)
from agi_jupyter.research.client import ResponsesClient
from agi_jupyter.research.report import REPORT_KIND, build_report, failure_message
from agi_jupyter.research.settings import ResearchSettings
from agi_jupyter.runtime.agent_loop import message_to_dict
from agi_jupyter.runtime.run_stops import seconds_until

if TYPE_CHECKING:
    from agi_jupyter.runtime.deps import RuntimeDeps
    from agi_jupyter.runtime.emitter import RunEmitter
    from agi_jupyter.runtime.runs import RunManager

log = logging.getLogger(__name__)

PENDING = frozenset({"queued", "in_progress"})
ORPHAN_SCAN = 200  # unprocessed events without a run yet that a tick looks past
PARKED = "waiting_webhook"


def iso_in(seconds: float) -> str:
    moment = datetime.now(UTC) + timedelta(seconds=seconds)
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _older_than(iso: str, seconds: float) -> bool:
    return iso < iso_in(-seconds)


class DeepResearch:
    """The ``RunExecutor`` of ``deep_research`` runs, plus their share of the tick."""

    def __init__(self, deps: RuntimeDeps, manager: RunManager, settings: ResearchSettings) -> None:
        self.deps = deps
        self.manager = manager
        self.settings = settings
        self._client: ResponsesClient | None = None
        self._watchers: dict[str, asyncio.Task[None]] = {}

    @property
    def client(self) -> ResponsesClient:
        if self._client is None:
            self._client = ResponsesClient(self.deps.config.provider("openai"))
        return self._client

    # --- RunExecutor --------------------------------------------------------------------------

    async def start(self, run: Run, emitter: RunEmitter) -> Run:
        """Create the background response and park the run until it finishes."""
        prompt, session = await self.deps.stored(self._inputs, run)
        response = await self.client.create(
            model=run.model or self.settings.model,
            prompt=prompt,
            tools=[dict(t) for t in self.settings.tools],
            idempotency_key=f"{run.id}-{run.attempt}",
            instructions=run.system_prompt or session.system_prompt,
        )
        response_id = str(response["id"])
        # Parking is the attempt's ending: it runs whole, and a cancellation meanwhile finds
        # the run parked (as when it comes once ``start`` returned).
        run = await regardless(emitter.section(self._park, run, response_id, emitter))
        if not self.settings.webhooks:
            self._watch(run.id)
        return run

    def _inputs(self, run: Run) -> tuple[str, Session]:
        """The run's prompt and session (store thread)."""
        store = self.deps.store
        prompt = store.get_message(run.input_message_id).text if run.input_message_id else ""
        return prompt, store.get_session(run.session_id)

    def _park(self, run: Run, response_id: str, emitter: RunEmitter) -> Run:
        """Record the response and give the run up until it finishes (store thread)."""
        store = self.deps.store
        # Announced before the update that gives up ownership (the fence stops holding).
        emitter.emit(ev.RunStatusEvent(status=PARKED))
        try:
            run = store.update_run(
                run.id,
                provider_response_id=response_id,
                status=PARKED,
                owner=None,
                next_attempt_at=iso_in(self.settings.next_poll_in),
                fence=emitter.fence,
            )
        except RunLost:
            raise
        except Conflict:  # the same response (an idempotent replay) already belongs to a run
            log.warning("response %s of run %s is already recorded", response_id, run.id)
            run = store.update_run(run.id, status=PARKED, owner=None, fence=emitter.fence)
        return run

    async def on_cancelled(self, run: Run) -> None:
        """Cancel the background response too (best effort: the run is cancelled anyway)."""
        if not run.provider_response_id:
            return
        try:
            await self.client.cancel(run.provider_response_id)
        except ProviderError as e:
            log.info("cancelling response %s: %s", run.provider_response_id, e.message)

    async def aclose(self) -> None:
        watchers = list(self._watchers.values())
        for task in watchers:
            task.cancel()
        await asyncio.gather(*watchers, return_exceptions=True)
        if self._client is not None:
            await self._client.aclose()

    # --- completion ---------------------------------------------------------------------------

    def _watch(self, run_id: str) -> None:
        """Poll this run from here until it ends (the tick polls too; claims keep it single)."""
        if run_id not in self._watchers:
            task = asyncio.get_running_loop().create_task(self._watch_loop(run_id))
            self._watchers[run_id] = task
            task.add_done_callback(lambda _t: self._watchers.pop(run_id, None))

    async def _watch_loop(self, run_id: str) -> None:
        get_run = self.deps.store.get_run
        while True:
            run = await self.deps.stored(get_run, run_id)
            if run.status != PARKED:
                return
            await asyncio.sleep(seconds_until(run.next_attempt_at))
            try:
                await self.poll(await self.deps.stored(get_run, run_id))
            except ProviderError as e:
                log.warning("polling run %s: %s", run_id, e.message)
            except Exception:
                log.exception("polling run %s failed", run_id)
                return

    async def poll(self, run: Run) -> bool:
        """Retrieve the response of a parked run that is due; complete the run if it ended.
        Returns whether this call completed it."""
        if run.status != PARKED or not run.provider_response_id:
            return False
        next_poll = iso_in(self.settings.next_poll_in)
        moved = self.deps.store.update_run_if
        if not await self.deps.stored(moved, run.id, run.version, next_attempt_at=next_poll):
            return False  # another poller took this round
        response = await self.client.retrieve(run.provider_response_id)
        if response.get("status") in PENDING:
            return False
        return await self.complete(run.id, response)

    async def complete(
        self, run_id: str, response: JSON, *, webhook_event_id: str | None = None
    ) -> bool:
        """Claim a parked run (``processing_webhook``) and end it from its final response, in
        one call on the store thread (whole, even when the caller is cancelled meanwhile)."""
        return await self.deps.stored(self._complete, run_id, response, webhook_event_id)

    def _complete(self, run_id: str, response: JSON, webhook_event_id: str | None) -> bool:
        store = self.deps.store
        run = store.get_run(run_id)
        changes: JSON = {"status": "processing_webhook", "next_attempt_at": None}
        if webhook_event_id:
            changes["last_webhook_event_id"] = webhook_event_id
        if run.status != PARKED or not store.update_run_if(run.id, run.version, **changes):
            return False
        run = store.get_run(run.id)
        emitter = self.manager.emitter_for(run)
        emitter.emit(ev.RunStatusEvent(status="processing_webhook"))
        status = response.get("status")
        if status == "completed":
            self._succeed(run, response, emitter)
        elif status == "cancelled":
            error = {"code": ErrorCode.RUN_CANCELLED, "message": "the response was cancelled"}
            self.manager.finish(run.id, emitter, "cancelled", error)
        else:
            error = {"code": ErrorCode.DEEP_RESEARCH_FAILED, "message": failure_message(response)}
            self.manager.finish(run.id, emitter, "failed", error)
        return True

    def _succeed(self, run: Run, response: JSON, emitter: RunEmitter) -> None:
        store = self.deps.store
        model = run.model or self.settings.model
        report = build_report(response)
        raw = response if self.settings.persist_raw_response else None
        artifact = store.create_artifact(
            REPORT_KIND,
            run_id=run.id,
            session_id=run.session_id,
            title=report.title,
            mime="text/markdown",
            text=report.markdown,
            filename="report.md",
            data=report.artifact_data(model=model, response_id=str(response["id"]), raw=raw),
        )
        parts: list[Part] = [
            TextPart(text=report.markdown),
            ArtifactRefPart(artifact_id=artifact.id, kind=REPORT_KIND, title=report.title),
        ]
        meta = {"provider": "openai", "model": model, "usage": report.usage}
        message = store.add_message(run.session_id, "assistant", parts, run_id=run.id, meta=meta)
        emitter.emit(ev.TextDone(text=report.markdown))
        emitter.emit(ev.MessageCompleted(message=message_to_dict(message)))
        self._record_usage(run, report.usage, model, emitter)
        self.manager.finish(run.id, emitter, "succeeded", None)

    def _record_usage(self, run: Run, usage: JSON, model: str, emitter: RunEmitter) -> None:
        tokens = Usage(
            input_tokens=int(usage.get("input_tokens", 0)),
            output_tokens=int(usage.get("output_tokens", 0)),
        )
        cost = cost_usd("openai", model, tokens)
        self.deps.store.add_session_usage(
            run.session_id,
            input_tokens=tokens.input_tokens,
            output_tokens=tokens.output_tokens,
            cost_usd=cost or 0.0,
        )
        self.deps.store.update_run(run.id, usage=usage, cost_usd=cost or 0.0)
        emitter.emit(
            ev.UsageEvent(
                input_tokens=tokens.input_tokens, output_tokens=tokens.output_tokens, cost_usd=cost
            )
        )

    # --- the tick's share -----------------------------------------------------------------------

    async def tick(self, *, max_runs: int, max_webhook_events: int) -> tuple[int, int]:
        """Process unprocessed webhook events, poll due parked runs, and put runs left in
        ``processing_webhook`` by a dead process back to waiting. Returns (events processed,
        runs completed)."""
        await self.deps.stored(self._unstick, max_runs)
        events, completed = await self.process_webhooks(max_webhook_events)
        for run in await self.deps.stored(self._due_parked, max_runs):
            try:
                completed += await self.poll(run)
            except ProviderError as e:
                log.warning("polling run %s: %s", run.id, e.message)
        return events, completed

    async def process_webhooks(self, limit: int) -> tuple[int, int]:
        """Process up to ``limit`` events, oldest first; events still waiting for their run are
        looked past (up to ``ORPHAN_SCAN`` of them), so they cannot hold newer ones back."""
        processed = completed = 0
        scan = limit + ORPHAN_SCAN
        unprocessed = self.deps.store.list_unprocessed_webhook_events
        for event in await self.deps.stored(unprocessed, limit=scan):
            if processed >= limit:
                break
            try:
                done, finished = await self._process(event)
            except ProviderError as e:
                log.warning("webhook event %s: %s (will retry)", event.event_id, e.message)
                continue
            processed += done
            completed += finished
        return processed, completed

    async def _process(self, event: WebhookEvent) -> tuple[bool, bool]:
        """(whether the event is now processed, whether it completed a run)."""
        store, stored = self.deps.store, self.deps.stored
        if not event.type.startswith("response.") or not event.response_id:
            return await stored(store.mark_webhook_event_processed, event.id), False
        run = await stored(store.get_run_by_response_id, event.response_id)
        if run is None:  # it may arrive before its run stored the response id: wait a while
            if not _older_than(event.received_at, self.settings.orphan_grace):
                return False, False
            error = f"no run has response id {event.response_id}"
            return await stored(store.mark_webhook_event_processed, event.id, error=error), False
        if run.status == "processing_webhook":
            return False, False  # someone is finishing it; look again at the next tick
        finished = False
        if run.status == PARKED:
            response = await self.client.retrieve(event.response_id)
            if response.get("status") in PENDING:
                return False, False  # not visible as finished yet: look again next tick
            finished = await self.complete(run.id, response, webhook_event_id=event.event_id)
        return await stored(store.mark_webhook_event_processed, event.id), finished

    def _due_parked(self, limit: int) -> list[Run]:
        """Parked runs whose next poll is due (store thread)."""
        now = utc_now()
        parked = self.deps.store.list_runs(statuses=[PARKED], limit=max(limit, 50)).items
        due = [r for r in parked if (r.next_attempt_at or "") <= now]
        return due[:limit]

    def _unstick(self, limit: int) -> None:
        """Runs left in ``processing_webhook`` by a process that died go back (store thread)."""
        store = self.deps.store
        for run in store.list_runs(statuses=["processing_webhook"], limit=limit).items:
            if _older_than(run.updated_at, self.settings.stuck_after):
                with contextlib.suppress(Exception):
                    store.update_run_if(run.id, run.version, status=PARKED, next_attempt_at=None)
