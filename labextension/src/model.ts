/**
 * The panel's controller: which project and session are shown, the chat state (through the
 * reducer of `state.ts`), and what the person does (create a session, send, stop, switch the
 * view or tab). It talks only to `AgiClient`, holds no DOM, and notifies listeners on every
 * change (the React view re-renders from `snapshot`, see `snapshot.ts`).
 *
 * A reply streams from `POST /sessions/{id}/messages`; every other run of the session arrives
 * through the streams of `streams.ts`. Nothing here cancels a run except `stop()` and
 * `cancelRun()`: aborting a stream only stops reading it.
 */

import { ApiError, type AgiClient, type Whereabouts } from './api';
import { collectArtifacts, openArtifact } from './artifacts';
import { type Attachment, messageContent } from './attachments';
import { loadCatalogue } from './catalogue';
import type { MentionInput, MentionSource } from './mentions';
import { isNotebookSession, sessionToShow } from './follow';
import { PanelMemory, type Storage } from './memory';
import { DecisionDoor, ErrorCode } from './openapi';
import { folderOf, PanelStore, type Tab } from './snapshot';
import { activeRuns, initialState } from './state';
import { SessionStreams } from './streams';
import type { Artifact, HistoryView, NewSession, RunningCells, Session } from './types';
import { isTerminal } from './types';

const SESSION_POLL_MS = 5000;

export class PanelModel extends PanelStore {
  private readonly memory: PanelMemory;
  private readonly streams: SessionStreams;
  /** Aborted when the project or session changes: ends every stream of the old one. */
  private scope = new AbortController();
  private pendingId = 0;
  private pollTimer: ReturnType<typeof setInterval> | null = null;
  private visible = false;
  /** The active cell of the notebook the user looks at (set by the plugin). */
  activeCell: () => string | null = () => null;
  /** What `@` mentions in the composer may name (set by the plugin: the open notebooks). */
  mentionSource: MentionSource | null = null;
  /** A file's bytes in base64, from the server's contents (set by the plugin): an image
   * dragged from the file browser is attached with them. */
  readFile: ((path: string) => Promise<string>) | null = null;
  /** Told when the panel undid a run's changes (the notebook's highlights follow). */
  changesUndone: () => void = () => {};

  constructor(
    readonly client: AgiClient,
    storage: Storage | null = null
  ) {
    const memory = new PanelMemory(storage);
    const pinned = memory.value.pinnedProject;
    super({
      project: pinned ?? '',
      projectSource: pinned !== null ? 'picked' : 'root',
      notebookPath: null,
      sessions: [],
      sessionsLoaded: false,
      sessionId: null,
      pinned: false,
      chat: initialState(),
      view: memory.value.view,
      tab: memory.value.tab,
      agents: [],
      models: [],
      defaultModel: null,
      sdks: null,
      errors: [],
      sending: false,
      historyLoading: false,
      artifacts: null
    });
    this.memory = memory;
    this.streams = new SessionStreams(this);
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
    this.forgetListeners();
  }

  /** The project's agents, model choices and agent SDKs (for the new-session form). */
  async loadCatalogue(): Promise<void> {
    const { patch, errors } = await loadCatalogue(this.client, this.state.project);
    this.set(patch);
    errors.forEach(error => this.reportError(error));
  }

  // --- project -----------------------------------------------------------------------------

  /** The active notebook changed: the project follows it (unless a folder was picked), and
   * so does the session (unless one is pinned). */
  setActivePath(path: string | null): void {
    if (path === null || path === this.state.notebookPath) {
      return;
    }
    this.set({ notebookPath: path });
    if (this.state.projectSource !== 'picked') {
      const project = folderOf(path);
      this.set({ projectSource: 'notebook' });
      if (project !== this.state.project) {
        void this.openProject(project);
        return;
      }
    }
    void this.showFollowed();
  }

  /** Pin the project to a folder chosen by the user (null: follow the notebook again). */
  pickProject(folder: string | null): void {
    this.memory.update({ pinnedProject: folder });
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
    if (this.state.project === project) {
      await this.showFollowed(true);
    }
  }

  /** The session the panel should show now (see `follow.ts`). */
  private followed(): string | null {
    const { project, sessions, notebookPath, projectSource } = this.state;
    return sessionToShow({
      sessions,
      pinned: this.memory.value.pinnedSessionByProject[project] ?? null,
      notebookPath: projectSource === 'picked' ? null : notebookPath,
      remembered: this.memory.value.sessionByProject[project]
    });
  }

  /** Show the followed session if it is another one; `force`: even none (a new project). */
  private async showFollowed(force = false): Promise<void> {
    const id = this.followed();
    this.set({ pinned: !!this.memory.value.pinnedSessionByProject[this.state.project] });
    if (id !== this.state.sessionId && (id !== null || force || this.state.notebookPath)) {
      await this.selectSession(id);
    }
  }

  /** Pin the shown session (it then stays whatever notebook is active), or unpin it and
   * follow the active notebook again. */
  async togglePin(): Promise<void> {
    const { project, sessionId, pinned } = this.state;
    this.memory.pinSession(project, pinned ? null : sessionId);
    this.set({ pinned: !pinned && sessionId !== null });
    if (pinned) {
      await this.showFollowed();
    }
  }

  // --- sessions ----------------------------------------------------------------------------

  async refreshSessions(quiet: boolean): Promise<void> {
    const project = this.state.project;
    try {
      const sessions = await this.client.listSessions(project);
      if (project === this.state.project) {
        this.set({ sessions, sessionsLoaded: true });
        const current = sessions.find(s => s.id === this.state.sessionId);
        if (current) {
          this.dispatch({ type: 'session', session: current });
        }
        if (quiet && !this.state.pinned && this.state.sessionsLoaded) {
          // A kernel restart (or a first %%agi) opened a newer session for the notebook.
          const followed = this.followed();
          if (followed !== null && followed !== this.state.sessionId) {
            void this.selectSession(followed);
          }
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

  /** Show a session the person chose: it is pinned unless it is the one followed anyway. */
  async chooseSession(id: string | null): Promise<void> {
    const project = this.state.project;
    const notebook = this.state.projectSource === 'picked' ? null : this.state.notebookPath;
    const session = this.state.sessions.find(s => s.id === id);
    const own = session && notebook ? isNotebookSession(session, notebook) : !notebook;
    this.memory.pinSession(project, id !== null && !own ? id : null);
    this.set({ pinned: id !== null && !own });
    await this.selectSession(id);
  }

  async selectSession(id: string | null): Promise<void> {
    this.selectSessionLocal(id);
    if (id === null) {
      return;
    }
    this.memory.rememberSession(this.state.project, id);
    const signal = this.scope.signal;
    await this.loadSession(id, signal);
    if (!signal.aborted) {
      void this.streams.watchSession(id, signal);
    }
  }

  private selectSessionLocal(id: string | null): void {
    this.scope.abort();
    this.scope = new AbortController();
    this.streams.clear();
    const session = this.state.sessions.find(s => s.id === id) ?? null;
    this.set({ sessionId: id, chat: initialState(session), artifacts: null, sending: false });
  }

  /** History from the store, the runs, then every run still going is followed again. */
  private async loadSession(id: string, signal: AbortSignal): Promise<void> {
    this.set({ historyLoading: true });
    try {
      await this.streams.load(id, signal);
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

  /** Create a session (linked to the active notebook when the panel follows it) and show it. */
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
      await this.chooseSession(session.id);
      return session;
    } catch (error) {
      this.reportError(error);
      return null;
    }
  }

  // --- view --------------------------------------------------------------------------------

  async setView(view: HistoryView): Promise<void> {
    this.memory.update({ view });
    this.set({ view });
    const id = this.state.sessionId;
    if (!id) {
      return;
    }
    try {
      const history = await this.client.history(this.state.project, id, view);
      if (this.state.sessionId === id && this.state.view === view) {
        this.dispatch({ type: 'history', messages: history.messages, compactions: history.compactions });
      }
    } catch (error) {
      this.reportError(error);
    }
  }

  setTab(tab: Tab): void {
    this.memory.update({ tab });
    this.set({ tab });
    if (tab === 'artifacts') {
      void this.loadArtifacts();
    }
  }

  // --- chatting ----------------------------------------------------------------------------

  /** The active notebook (when the project follows it) and its active cell: the run's
   * notebook for the notebook tools and the outline. */
  private whereabouts(): Whereabouts {
    const path = this.state.projectSource === 'notebook' ? this.state.notebookPath : null;
    return path ? { notebook_path: path, cell_id: this.activeCell() ?? undefined } : {};
  }

  /**
   * Send a prompt (creating a session first if none is selected) and stream the reply.
   * Resolves false when the server did not take the message (the error is shown).
   */
  async send(text: string, newSession: NewSession = {}, mentions: MentionInput[] = [], images: Attachment[] = []): Promise<boolean> {
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
      const content = messageContent(prompt, images);
      const events = this.client.sendMessage(this.state.project, sessionId, content, reader.signal, this.whereabouts(), mentions);
      for await (const event of events) {
        if (signal.aborted) {
          break;
        }
        if (!runId && typeof event.run_id === 'string' && event.run_id) {
          runId = event.run_id;
          this.streams.claim(runId, reader);
        }
        this.dispatch({ type: 'event', event });
      }
    } catch (error) {
      if (!runId) {
        this.dispatch({ type: 'pending.failed', key });
      }
      this.reportError(error);
    } finally {
      if (runId) {
        this.streams.release(runId, reader);
      }
      if (!signal.aborted) {
        this.set({ sending: false });
      }
    }
    if (runId && !signal.aborted) {
      if (!isTerminal(this.state.chat.runs[runId]?.status)) {
        await this.streams.followRun(runId, signal); // the stream dropped: resume from the last event
      }
      void this.afterRun();
    }
    return runId !== null;
  }

  /** Cancel the session's runs that are still going (the stop button), and, with `interrupt`,
   * the cells their `notebook.run` left running; the cells that were running (left running, or
   * `interrupted`). */
  async stop(interrupt = false): Promise<RunningCells[]> {
    const runs = activeRuns(this.state.chat);
    return (await Promise.all(runs.map(run => this.cancelRun(run.id, interrupt)))).flat();
  }

  async cancelRun(runId: string, interrupt = false): Promise<RunningCells[]> {
    try {
      const { run, cells } = await this.client.cancelRun(this.state.project, runId, interrupt);
      if (run && typeof run.id === 'string') {
        this.dispatch({ type: 'run', run });
      }
      return cells ?? [];
    } catch (error) {
      if (!(error instanceof ApiError && error.code === ErrorCode.RUN_TERMINAL)) {
        this.reportError(error);
      }
      return [];
    }
  }

  /** Answer a run's budget question: a larger session budget, or deny (it then fails). */
  async decideBudget(runId: string, decision: 'approve' | 'deny', budget?: { max_tokens?: number; max_usd?: number }): Promise<void> {
    try {
      const body = { decision, budget: decision === 'approve' ? (budget ?? null) : null, door: DecisionDoor.PANEL };
      const run = await this.client.decideApproval(this.state.project, runId, body);
      if (run && typeof run.id === 'string') {
        this.dispatch({ type: 'run', run });
      }
    } catch (error) {
      if (error instanceof ApiError && error.code === ErrorCode.NO_PENDING_APPROVAL) {
        return;
      }
      this.reportError(error);
    }
  }

  /** Approve or deny what a run waits on (one call, or all of them): the server's runner
   * resumes the run once nothing is left undecided, and the session stream shows it. */
  async decideApproval(
    runId: string,
    decision: 'approve' | 'deny' | 'approve_always',
    toolCallId?: string,
    message?: string
  ): Promise<void> {
    try {
      const body = { decision, tool_call_id: toolCallId ?? null, message: message || null, door: DecisionDoor.PANEL };
      const run = await this.client.decideApproval(this.state.project, runId, body);
      if (run && typeof run.id === 'string') {
        this.dispatch({ type: 'run', run });
      }
    } catch (error) {
      if (error instanceof ApiError && error.code === ErrorCode.NO_PENDING_APPROVAL) {
        return; // decided meanwhile (another window, the CLI, a notebook)
      }
      this.reportError(error);
    }
  }

  /** A run ended: totals of the session and the artifact list may have changed. */
  async afterRun(): Promise<void> {
    await this.refreshSessions(true);
    if (this.state.tab === 'artifacts') {
      await this.loadArtifacts();
    }
  }

  // --- artifacts ---------------------------------------------------------------------------

  async loadArtifacts(): Promise<void> {
    const sessionId = this.state.sessionId;
    if (!sessionId) {
      this.set({ artifacts: [] });
      return;
    }
    const { entries, error } = await collectArtifacts(this.client, this.state.project, Object.keys(this.state.chat.runs));
    if (this.state.sessionId !== sessionId) {
      return;
    }
    if (error !== null) {
      this.reportError(error);
    }
    this.set({ artifacts: entries });
  }

  /** An artifact with its text (from the row, or from `/content` for large ones). */
  /** An image artifact as a URL an `<img>` shows (revoke it when done). */
  async artifactImageUrl(id: string): Promise<string> {
    return URL.createObjectURL(await this.client.artifactBlob(this.state.project, id));
  }

  async openArtifact(id: string): Promise<{ artifact: Artifact; text: string | null }> {
    return openArtifact(this.client, this.state.project, id);
  }
}
