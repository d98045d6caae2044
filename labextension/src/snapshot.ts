/**
 * The panel's observable state: the `Snapshot` the React view renders, the listeners told of
 * every change, the chat state changed only through the reducer, and the list of errors shown
 * above the tabs. `PanelModel` builds on it; it holds no DOM and makes no request.
 */

import { errorText, isAbort } from './api';
import { reduce, type Action, type ChatState } from './state';
import type { SdkCatalogue } from './sdks';
import type { AgentInfo, Artifact, HistoryView, ModelChoice, Session } from './types';

export type Tab = 'chat' | 'runs' | 'artifacts';

/** Where the project comes from: a folder the user picked, the active notebook, or the root. */
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
  /** The active notebook (relative to the server root), if any. */
  notebookPath: string | null;
  sessions: Session[];
  sessionsLoaded: boolean;
  sessionId: string | null;
  /** Whether the shown session is pinned: it then stays when the active notebook changes.
   * Unpinned, the panel shows the active notebook's own (newest) session. */
  pinned: boolean;
  chat: ChatState;
  view: HistoryView;
  tab: Tab;
  agents: AgentInfo[];
  /** `provider:model` choices of the new-session form. */
  models: ModelChoice[];
  /** The project's default model (`provider:model`), when the server says. */
  defaultModel: string | null;
  /** The agent SDKs sessions can run on; null until loaded. */
  sdks: SdkCatalogue | null;
  errors: PanelError[];
  sending: boolean;
  historyLoading: boolean;
  artifacts: ArtifactEntry[] | null;
}

/** The folder of a path relative to the server root ('' for the root itself). */
export function folderOf(path: string): string {
  const index = path.lastIndexOf('/');
  return index < 0 ? '' : path.slice(0, index);
}

export class PanelStore {
  protected state: Snapshot;
  /** Set by `dispose`: errors of streams still ending are no longer shown. */
  protected disposed = false;
  private readonly listeners = new Set<() => void>();
  private errorId = 0;

  constructor(initial: Snapshot) {
    this.state = initial;
  }

  get snapshot(): Snapshot {
    return this.state;
  }

  subscribe(listener: () => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** Change the snapshot and notify every listener. */
  set(patch: Partial<Snapshot>): void {
    this.state = { ...this.state, ...patch };
    for (const listener of [...this.listeners]) {
      listener();
    }
  }

  /** Change the chat state through the reducer. */
  dispatch(action: Action): void {
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

  protected forgetListeners(): void {
    this.listeners.clear();
  }
}
