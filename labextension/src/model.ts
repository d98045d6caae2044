/**
 * The panel's controller: which project and session are shown, the chat state (through the
 * reducer of `state.ts`), and the streams that feed it. It talks only to `AgiClient`, holds no
 * DOM, and notifies listeners on every change (the React view re-renders from `snapshot`).
 *
 * Streams: a reply streams from `POST /sessions/{id}/messages`; every other run of the session
 * (a notebook's `%%agi`, another tab) arrives through `GET /sessions/{id}/stream`. A run that
 * was already going when the panel (re)loaded, or whose stream dropped, is followed with
 * `GET /runs/{id}/events?after_seq=<last applied>&follow=true`. Nothing here cancels a run
 * except `stop()`: aborting a stream only stops reading it.
 */

import { AgiClient, ApiError, errorText, isAbort, type NewSession } from './api';
import { activeRuns, initialState, reduce, type Action, type ChatState } from './state';
import type { AgentInfo, AgiEvent, Artifact, HistoryView, ProviderInfo, Session } from './types';
import { isTerminal } from './types';

export type Tab = 'chat' | 'runs' | 'artifacts';

export type ProjectSource = 'notebook' | 'picked' | 'root';

export interface PanelError {
  id: number;
  text: string;
}

export interface ArtifactEntry {
  artifact: Artifact;
  runId: string;
}

export interface Snapshot {
  project: string;
  projectSource: ProjectSource;
  notebookPath: string | null;
  sessions: Session[];
  sessionsLoaded: boolean;
  sessionId: string | null;
  chat: ChatState;
  view: HistoryView;
  tab: Tab;
  agents: AgentInfo[];
  providers: ProviderInfo[];
  /** The project's default model (`provider:model`), when the server says. */
  defaultModel: string | null;
  errors: PanelError[];
  sending: boolean;
  historyLoading: boolean;
  artifacts: ArtifactEntry[] | null;
}

/** What the panel remembers across reloads (localStorage). */
interface Remembered {
  pinnedProject: string | null;
  sessionByProject: Record<string, string>;
  view: HistoryView;
  tab: Tab;
}

export interface Storage {
  getItem(key: string): string | null;
  setItem(key: string, value: string): void;
}

const STORAGE_KEY = 'agi-jupyter:panel';
const SESSION_POLL_MS = 5000;

export function folderOf(path: string): string {
  const index = path.lastIndexOf('/');
  return index < 0 ? '' : path.slice(0, index);
}

function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise(resolve => {
    const timer = setTimeout(resolve, ms);
    signal?.addEventListener('abort', () => {
      clearTimeout(timer);
      resolve();
    });
  });
}

export class PanelModel {
  private state: Snapshot;
  private readonly listeners = new Set<() => void>();
  private remembered: Remembered;
  /** Aborted when the project or session changes: ends every stream of the old one. */
  private scope = new AbortController();
  /** Runs read directly (reply stream or events follow); the session stream skips them. */
  private readonly followed = new Map<string, AbortController>();
  private errorId = 0;
  private pendingId = 0;
  private pollTimer: ReturnType<typeof setInterval> | null = null;
  private disposed = false;
  private visible = false;

  constructor(
    readonly client: AgiClient,
    private readonly storage: Storage | null = null
  ) {
    this.remembered = this.recall();
    const pinned = this.remembered.pinnedProject;
    this.state = {
      project: pinned ?? '',
      projectSource: pinned !== null ? 'picked' : 'root',
      notebookPath: null,
      sessions: [],
      sessionsLoaded: false,
      sessionId: null,
      chat: initialState(),
      view: this.remembered.view,
      tab: this.remembered.tab,
      agents: [],
      providers: [],
      defaultModel: null,
      errors: [],
      sending: false,
      historyLoading: false,
      artifacts: null
    };
  }

  // --- observing ---------------------------------------------------------------------------

  get snapshot(): Snapshot {
    return this.state;
  }

  subscribe(listener: () => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  private set(patch: Partial<Snapshot>): void {
    this.state = { ...this.state, ...patch };
    for (const listener of [...this.listeners]) {
      listener();
    }
  }

  private dispatch(action: Action): void {
    this.set({ chat: reduce(this.state.chat, action) });
  }

  reportError(error: unknown): void {
    if (isAbort(error) || this.disposed) {
      return;
    }
    const text = errorText(error);
    this.set({ errors: [...this.state.errors, { id: ++this.errorId, text }].slice(-5) });
  }

  dismissError(id: number): void {
    this.set({ errors: this.state.errors.filter(e => e.id !== id) });
  }

  // --- lifecycle ---------------------------------------------------------------------------

  /** Load the catalogue and the project's sessions; poll the session list while alive. */
  async start(): Promise<void> {
    await Promise.all([this.loadCatalogue(), this.openProject(this.state.project)]);
    this.pollTimer = setInterval(() => {
      if (this.visible) {
        void this.refreshSessions(true);
      }
    }, SESSION_POLL_MS);
  }

  /** Whether the panel is shown: the session list is polled only then. */
  setVisible(visible: boolean): void {
    const wasHidden = !this.visible;
    this.visible = visible;
    if (visible && wasHidden && this.pollTimer !== null) {
      void this.refreshSessions(true);
    }
  }

  dispose(): void {
    this.disposed = true;
    this.scope.abort();
    if (this.pollTimer !== null) {
      clearInterval(this.pollTimer);
    }
    this.listeners.clear();
  }

  async loadCatalogue(): Promise<void> {
    const project = this.state.project;
    const [agents, providers] = await Promise.allSettled([
      this.client.agents(project),
      this.client.providers(project)
    ]);
    if (agents.status === 'fulfilled') {
      this.set({ agents: agents.value });
    } else {
      this.reportError(agents.reason);
    }
    if (providers.status === 'fulfilled') {
      this.set({ providers: providers.value.providers, defaultModel: providers.value.defaultModel });
    } else {
      this.reportError(providers.reason);
    }
  }

  // --- project -----------------------------------------------------------------------------

  /** The active document changed: the project follows it unless a folder was picked. */
  setActivePath(path: string | null): void {
    this.set({ notebookPath: path });
    if (this.state.projectSource === 'picked' || path === null) {
      return;
    }
    const project = folderOf(path);
    this.set({ projectSource: 'notebook' });
    if (project !== this.state.project) {
      void this.openProject(project);
    }
  }

  /** Pin the project to a folder chosen by the user (null: follow the notebook again). */
  pickProject(folder: string | null): void {
    this.remembered.pinnedProject = folder;
    this.remember();
    if (folder === null) {
      const path = this.state.notebookPath;
      this.set({ projectSource: path ? 'notebook' : 'root' });
      void this.openProject(path ? folderOf(path) : '');
      return;
    }
    this.set({ projectSource: 'picked' });
    void this.openProject(folder);
  }

  private async openProject(project: string): Promise<void> {
    const changed = project !== this.state.project;
    this.set({ project, sessions: [], sessionsLoaded: false });
    this.selectSessionLocal(null);
    if (changed) {
      void this.loadCatalogue();
    }
    await this.refreshSessions(false);
    if (this.state.project !== project) {
      return;
    }
    const wanted = this.remembered.sessionByProject[project];
    const sessions = this.state.sessions;
    const pick = sessions.find(s => s.id === wanted) ?? sessions[0];
    if (pick) {
      await this.selectSession(pick.id);
    }
  }

  // --- sessions ----------------------------------------------------------------------------

  async refreshSessions(quiet: boolean): Promise<void> {
    const project = this.state.project;
    try {
      const page = await this.client.listSessions(project);
      if (project === this.state.project) {
        this.set({ sessions: page.items, sessionsLoaded: true });
        const current = page.items.find(s => s.id === this.state.sessionId);
        if (current) {
          this.dispatch({ type: 'session', session: current });
        }
      }
    } catch (error) {
      if (project === this.state.project) {
        this.set({ sessionsLoaded: true });
      }
      if (!quiet) {
        this.reportError(error);
      }
    }
  }

  async selectSession(id: string | null): Promise<void> {
    this.selectSessionLocal(id);
    if (id === null) {
      return;
    }
    this.remembered.sessionByProject[this.state.project] = id;
    this.remember();
    const signal = this.scope.signal;
    await this.loadSession(id, signal);
    if (!signal.aborted) {
      void this.watchSession(id, signal);
    }
  }

  private selectSessionLocal(id: string | null): void {
    this.scope.abort();
    this.scope = new AbortController();
    this.followed.clear();
    const session = this.state.sessions.find(s => s.id === id) ?? null;
    this.set({ sessionId: id, chat: initialState(session), artifacts: null, sending: false });
  }

  /** History from the store, the runs, then every run still going is followed again. */
  private async loadSession(id: string, signal: AbortSignal): Promise<void> {
    const project = this.state.project;
    this.set({ historyLoading: true });
    try {
      const [messages, runs] = await Promise.all([
        this.client.history(project, id, this.state.view),
        this.client.listRuns(project, id)
      ]);
      if (signal.aborted) {
        return;
      }
      this.dispatch({ type: 'runs', runs: runs.items });
      this.dispatch({ type: 'history', messages });
      for (const run of runs.items) {
        if (!isTerminal(run.status)) {
          void this.followRun(run.id, signal);
        }
      }
    } catch (error) {
      if (!signal.aborted) {
        this.reportError(error);
      }
    } finally {
      if (!signal.aborted) {
        this.set({ historyLoading: false });
      }
    }
  }

  async newSession(options: NewSession): Promise<Session | null> {
    const project = this.state.project;
    const body: NewSession = { ...options };
    if (this.state.notebookPath && this.state.projectSource === 'notebook') {
      body.notebook_path = this.state.notebookPath;
    }
    try {
      const session = await this.client.createSession(project, body);
      if (project !== this.state.project) {
        return session;
      }
      this.set({ sessions: [session, ...this.state.sessions.filter(s => s.id !== session.id)] });
      await this.selectSession(session.id);
      return session;
    } catch (error) {
      this.reportError(error);
      return null;
    }
  }

  // --- view --------------------------------------------------------------------------------

  async setView(view: HistoryView): Promise<void> {
    this.remembered.view = view;
    this.remember();
    this.set({ view });
    const id = this.state.sessionId;
    if (!id) {
      return;
    }
    try {
      const messages = await this.client.history(this.state.project, id, view);
      if (this.state.sessionId === id && this.state.view === view) {
        this.dispatch({ type: 'history', messages });
      }
    } catch (error) {
      this.reportError(error);
    }
  }

  setTab(tab: Tab): void {
    this.remembered.tab = tab;
    this.remember();
    this.set({ tab });
    if (tab === 'artifacts') {
      void this.loadArtifacts();
    }
  }

  // --- chatting ----------------------------------------------------------------------------

  /**
   * Send a prompt (creating a session first if none is selected) and stream the reply.
   * Resolves false when the server did not take the message (the error is shown).
   */
  async send(text: string, newSession: NewSession = {}): Promise<boolean> {
    const prompt = text.trim();
    if (!prompt) {
      return false;
    }
    let sessionId = this.state.sessionId;
    if (!sessionId) {
      const session = await this.newSession(newSession);
      if (!session) {
        return false;
      }
      sessionId = session.id;
    }
    const signal = this.scope.signal;
    const key = `pending:${++this.pendingId}`;
    this.dispatch({ type: 'pending', key, text: prompt });
    this.set({ sending: true });
    const reader = new AbortController();
    signal.addEventListener('abort', () => reader.abort());
    let runId: string | null = null;
    try {
      const events = this.client.sendMessage(this.state.project, sessionId, prompt, reader.signal);
      for await (const event of events) {
        if (signal.aborted) {
          break;
        }
        if (!runId && typeof event.run_id === 'string' && event.run_id) {
          runId = event.run_id;
          this.followed.set(runId, reader);
        }
        this.dispatch({ type: 'event', event });
      }
    } catch (error) {
      if (!runId) {
        this.dispatch({ type: 'pending.failed', key });
      }
      this.reportError(error);
    } finally {
      if (runId && this.followed.get(runId) === reader) {
        this.followed.delete(runId);
      }
      if (!signal.aborted) {
        this.set({ sending: false });
      }
    }
    if (runId && !signal.aborted) {
      if (!isTerminal(this.state.chat.runs[runId]?.status)) {
        await this.followRun(runId, signal); // the stream dropped: resume from the last event
      }
      void this.afterRun();
    }
    return runId !== null;
  }

  /** Cancel the session's runs that are still going (the stop button). */
  async stop(): Promise<void> {
    const runs = activeRuns(this.state.chat);
    await Promise.all(runs.map(run => this.cancelRun(run.id)));
  }

  async cancelRun(runId: string): Promise<void> {
    try {
      const run = await this.client.cancelRun(this.state.project, runId);
      if (run && typeof run.id === 'string') {
        this.dispatch({ type: 'run', run });
      }
    } catch (error) {
      if (error instanceof ApiError && error.code === 'RUN_TERMINAL') {
        return;
      }
      this.reportError(error);
    }
  }

  // --- streams -----------------------------------------------------------------------------

  /**
   * Read a run's events after the last one applied, following it live until `run.final`.
   * Reconnects a few times if the connection drops.
   */
  async followRun(runId: string, scope: AbortSignal = this.scope.signal): Promise<void> {
    if (this.followed.has(runId) || scope.aborted) {
      return;
    }
    const reader = new AbortController();
    scope.addEventListener('abort', () => reader.abort());
    this.followed.set(runId, reader);
    try {
      for (let attempt = 0; attempt < 6 && !reader.signal.aborted; attempt++) {
        try {
          const after = this.state.chat.runs[runId]?.lastSeq ?? 0;
          for await (const event of this.client.runEvents(this.state.project, runId, after, true, reader.signal)) {
            this.dispatch({ type: 'event', event });
          }
          if (isTerminal(this.state.chat.runs[runId]?.status)) {
            break;
          }
        } catch (error) {
          if (isAbort(error) || reader.signal.aborted) {
            return;
          }
          if (error instanceof ApiError && error.status === 404) {
            this.reportError(error);
            return;
          }
        }
        await sleep(Math.min(8000, 500 * 2 ** attempt), reader.signal);
      }
    } finally {
      if (this.followed.get(runId) === reader) {
        this.followed.delete(runId);
      }
    }
    if (!scope.aborted) {
      void this.afterRun();
    }
  }

  /**
   * The session stream: the events of every run of the session, wherever it executes (a
   * notebook's `%%agi`, another tab). It reconnects with a backoff, then catches up on what
   * it missed from the store.
   */
  private async watchSession(sessionId: string, scope: AbortSignal): Promise<void> {
    for (let attempt = 0; !scope.aborted; attempt++) {
      try {
        for await (const event of this.client.sessionStream(this.state.project, sessionId, scope)) {
          attempt = 0;
          this.onSessionEvent(event);
        }
      } catch (error) {
        if (isAbort(error) || scope.aborted) {
          return;
        }
        if (error instanceof ApiError && (error.status === 404 || error.status === 403)) {
          this.reportError(error);
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
    const runId = typeof event.run_id === 'string' ? event.run_id : null;
    if (runId && this.followed.has(runId)) {
      return;
    }
    const isNew = runId !== null && !(runId in this.state.chat.runs);
    this.dispatch({ type: 'event', event });
    if (runId && isNew && event.type !== 'run.final') {
      // A run that started while we watch: the stream carries it from its first event, so
      // it needs no stream of its own (browsers allow only a few connections per server).
      void this.fillRun(runId);
    } else if (runId && event.type === 'run.final') {
      void this.afterRun();
    }
  }

  /** After a reconnect: messages and runs that came or ended while the stream was down. */
  private async catchUp(sessionId: string, scope: AbortSignal): Promise<void> {
    try {
      const [messages, runs] = await Promise.all([
        this.client.history(this.state.project, sessionId, this.state.view),
        this.client.listRuns(this.state.project, sessionId)
      ]);
      if (scope.aborted) {
        return;
      }
      this.dispatch({ type: 'runs', runs: runs.items });
      this.dispatch({ type: 'history', messages });
      for (const run of runs.items) {
        if (!isTerminal(run.status)) {
          void this.followRun(run.id, scope);
        }
      }
    } catch {
      // the next reconnect tries again
    }
  }

  private async fillRun(runId: string): Promise<void> {
    try {
      const run = await this.client.getRun(this.state.project, runId);
      this.dispatch({ type: 'run', run });
    } catch {
      // the run's own events fill in what matters
    }
  }

  /** A run ended: totals of the session and the artifact list may have changed. */
  private async afterRun(): Promise<void> {
    await this.refreshSessions(true);
    if (this.state.tab === 'artifacts') {
      await this.loadArtifacts();
    }
  }

  // --- artifacts ---------------------------------------------------------------------------

  async loadArtifacts(): Promise<void> {
    const project = this.state.project;
    const sessionId = this.state.sessionId;
    if (!sessionId) {
      this.set({ artifacts: [] });
      return;
    }
    const runs = Object.keys(this.state.chat.runs).sort().reverse().slice(0, 30);
    const lists = await Promise.allSettled(runs.map(id => this.client.runArtifacts(project, id)));
    if (this.state.sessionId !== sessionId) {
      return;
    }
    const entries: ArtifactEntry[] = [];
    lists.forEach((result, index) => {
      if (result.status === 'fulfilled') {
        for (const artifact of result.value) {
          entries.push({ artifact, runId: runs[index] as string });
        }
      }
    });
    const failed = lists.find((r): r is PromiseRejectedResult => r.status === 'rejected');
    if (failed) {
      this.reportError(failed.reason);
    }
    this.set({ artifacts: entries });
  }

  /** An artifact with its text (from the row, or from `/content` for large ones). */
  async openArtifact(id: string): Promise<{ artifact: Artifact; text: string | null }> {
    const artifact = await this.client.getArtifact(this.state.project, id);
    let text = typeof artifact.text === 'string' ? artifact.text : null;
    if (text === null && artifact.path) {
      text = await this.client.artifactContent(this.state.project, id);
    }
    return { artifact, text };
  }

  // --- memory ------------------------------------------------------------------------------

  private recall(): Remembered {
    const fallback: Remembered = { pinnedProject: null, sessionByProject: {}, view: 'full', tab: 'chat' };
    try {
      const raw = this.storage?.getItem(STORAGE_KEY);
      if (!raw) {
        return fallback;
      }
      const value = JSON.parse(raw) as Partial<Remembered>;
      return {
        pinnedProject: typeof value.pinnedProject === 'string' ? value.pinnedProject : null,
        sessionByProject: typeof value.sessionByProject === 'object' && value.sessionByProject ? value.sessionByProject : {},
        view: value.view === 'simple' ? 'simple' : 'full',
        tab: value.tab === 'runs' || value.tab === 'artifacts' ? value.tab : 'chat'
      };
    } catch {
      return fallback;
    }
  }

  private remember(): void {
    try {
      this.storage?.setItem(STORAGE_KEY, JSON.stringify(this.remembered));
    } catch {
      // storage full or disabled: the panel still works, it just forgets
    }
  }
}
