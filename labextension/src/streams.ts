/**
 * The streams that feed a session's chat state. Every run of the session (a notebook's
 * `%%agi`, another tab) arrives through `GET /sessions/{id}/stream`; a run that was already
 * going when the panel (re)loaded, or whose stream dropped, is followed with
 * `GET /runs/{id}/events?after_seq=<last applied>&follow=true`. A run read directly (a reply
 * stream, or such a follow) is skipped by the session stream. Aborting a stream only stops
 * reading it: nothing here cancels a run.
 */

import { ApiError, isAbort, type AgiClient } from './api';
import type { Snapshot } from './snapshot';
import type { Action } from './state';
import type { AgiEvent } from './types';
import { isTerminal } from './types';

/** What the streams read and change: the model. */
export interface StreamHost {
  readonly client: AgiClient;
  readonly snapshot: Snapshot;
  dispatch(action: Action): void;
  reportError(error: unknown): void;
  /** A run ended: totals and listings that depend on it are refreshed. */
  afterRun(): Promise<void>;
}

export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise(resolve => {
    const timer = setTimeout(resolve, ms);
    signal?.addEventListener('abort', () => {
      clearTimeout(timer);
      resolve();
    });
  });
}

export class SessionStreams {
  /** Runs read directly (reply stream or events follow); the session stream skips them. */
  private readonly followed = new Map<string, AbortController>();

  constructor(private readonly host: StreamHost) {}

  /** Forget the runs read directly (their scope, the old session's, was aborted). */
  clear(): void {
    this.followed.clear();
  }

  /** `reader` reads the run's events itself (a reply stream). */
  claim(runId: string, reader: AbortController): void {
    this.followed.set(runId, reader);
  }

  release(runId: string, reader: AbortController): void {
    if (this.followed.get(runId) === reader) {
      this.followed.delete(runId);
    }
  }

  /** History and runs from the store, then every run still going is followed again. */
  async load(sessionId: string, scope: AbortSignal): Promise<void> {
    const { client, snapshot } = this.host;
    const [history, runs] = await Promise.all([
      client.history(snapshot.project, sessionId, snapshot.view),
      client.listRuns(snapshot.project, sessionId)
    ]);
    if (scope.aborted) {
      return;
    }
    this.host.dispatch({ type: 'runs', runs });
    this.host.dispatch({ type: 'history', messages: history.messages, compactions: history.compactions });
    for (const run of runs) {
      if (!isTerminal(run.status)) {
        void this.followRun(run.id, scope);
      }
    }
  }

  /**
   * Read a run's events after the last one applied, following it live until `run.final`.
   * Reconnects a few times if the connection drops.
   */
  async followRun(runId: string, scope: AbortSignal): Promise<void> {
    if (this.followed.has(runId) || scope.aborted) {
      return;
    }
    const host = this.host;
    const reader = new AbortController();
    scope.addEventListener('abort', () => reader.abort());
    this.followed.set(runId, reader);
    try {
      for (let attempt = 0; attempt < 6 && !reader.signal.aborted; attempt++) {
        try {
          const after = host.snapshot.chat.runs[runId]?.lastSeq ?? 0;
          for await (const event of host.client.runEvents(host.snapshot.project, runId, after, true, reader.signal)) {
            host.dispatch({ type: 'event', event });
          }
          if (isTerminal(host.snapshot.chat.runs[runId]?.status)) {
            break;
          }
        } catch (error) {
          if (isAbort(error) || reader.signal.aborted) {
            return;
          }
          if (error instanceof ApiError && error.status === 404) {
            host.reportError(error);
            return;
          }
        }
        await sleep(Math.min(8000, 500 * 2 ** attempt), reader.signal);
      }
    } finally {
      this.release(runId, reader);
    }
    if (!scope.aborted) {
      void host.afterRun();
    }
  }

  /**
   * The session stream: the events of every run of the session, wherever it executes (a
   * notebook's `%%agi`, another tab). It reconnects with a backoff, then catches up on what
   * it missed from the store.
   */
  async watchSession(sessionId: string, scope: AbortSignal): Promise<void> {
    for (let attempt = 0; !scope.aborted; attempt++) {
      try {
        for await (const event of this.host.client.sessionStream(this.host.snapshot.project, sessionId, scope)) {
          attempt = 0;
          this.onSessionEvent(event);
        }
      } catch (error) {
        if (isAbort(error) || scope.aborted) {
          return;
        }
        if (error instanceof ApiError && [401, 403, 404].includes(error.status)) {
          this.host.reportError(error);
          return;
        }
      }
      await sleep(Math.min(10000, 1000 * 2 ** Math.min(attempt, 4)), scope);
      if (!scope.aborted) {
        await this.catchUp(sessionId, scope);
      }
    }
  }

  private onSessionEvent(event: AgiEvent): void {
    const runId = event.run_id || null;
    if (runId && this.followed.has(runId)) {
      return;
    }
    const isNew = runId !== null && !(runId in this.host.snapshot.chat.runs);
    this.host.dispatch({ type: 'event', event });
    if (runId && isNew && event.type !== 'run.final') {
      // A run that started while we watch: the stream carries it from its first event, so
      // it needs no stream of its own (browsers allow only a few connections per server).
      void this.fillRun(runId);
    } else if (runId && event.type === 'run.final') {
      void this.host.afterRun();
    }
  }

  /** After a reconnect: messages and runs that came or ended while the stream was down. */
  private async catchUp(sessionId: string, scope: AbortSignal): Promise<void> {
    try {
      await this.load(sessionId, scope);
    } catch {
      // the next reconnect tries again
    }
  }

  private async fillRun(runId: string): Promise<void> {
    try {
      const run = await this.host.client.getRun(this.host.snapshot.project, runId);
      this.host.dispatch({ type: 'run', run });
    } catch {
      // the run's own events fill in what matters
    }
  }
}
