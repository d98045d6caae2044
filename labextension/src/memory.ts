/**
 * What the panel remembers across reloads, in `localStorage`: the folder pinned as the
 * project, the session last open in each project, the history view and the tab. Storage that
 * is missing, full or holds garbage only makes the panel forget.
 */

import type { Tab } from './snapshot';
import type { HistoryView } from './types';

export interface Remembered {
  pinnedProject: string | null;
  sessionByProject: Record<string, string>;
  /** The session pinned in a project (it stays shown whatever notebook is active). */
  pinnedSessionByProject: Record<string, string>;
  view: HistoryView;
  tab: Tab;
}

export interface Storage {
  getItem(key: string): string | null;
  setItem(key: string, value: string): void;
}

export const STORAGE_KEY = 'agi-jupyter:panel';

export class PanelMemory {
  readonly value: Remembered;

  constructor(private readonly storage: Storage | null) {
    this.value = this.recall();
  }

  /** Change what is remembered and save it. */
  update(patch: Partial<Remembered>): void {
    Object.assign(this.value, patch);
    this.save();
  }

  /** Remember the session open in a project. */
  rememberSession(project: string, id: string): void {
    this.value.sessionByProject[project] = id;
    this.save();
  }

  /** Pin a session in a project (null: follow the active notebook again). */
  pinSession(project: string, id: string | null): void {
    if (id === null) {
      delete this.value.pinnedSessionByProject[project];
    } else {
      this.value.pinnedSessionByProject[project] = id;
    }
    this.save();
  }

  private recall(): Remembered {
    const fallback: Remembered = {
      pinnedProject: null,
      sessionByProject: {},
      pinnedSessionByProject: {},
      view: 'full',
      tab: 'chat'
    };
    try {
      const raw = this.storage?.getItem(STORAGE_KEY);
      if (!raw) {
        return fallback;
      }
      const value = JSON.parse(raw) as Partial<Remembered>;
      return {
        pinnedProject: typeof value.pinnedProject === 'string' ? value.pinnedProject : null,
        sessionByProject: record(value.sessionByProject),
        pinnedSessionByProject: record(value.pinnedSessionByProject),
        view: value.view === 'simple' ? 'simple' : 'full',
        tab: value.tab === 'runs' || value.tab === 'artifacts' ? value.tab : 'chat'
      };
    } catch {
      return fallback;
    }
  }

  private save(): void {
    try {
      this.storage?.setItem(STORAGE_KEY, JSON.stringify(this.value));
    } catch {
      // storage full or disabled: the panel still works, it just forgets
    }
  }
}

function record(value: unknown): Record<string, string> {
  if (typeof value !== 'object' || value === null) {
    return {};
  }
  return Object.fromEntries(Object.entries(value).filter(([, v]) => typeof v === 'string')) as Record<string, string>;
}
