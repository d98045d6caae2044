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

  private save(): void {
    try {
      this.storage?.setItem(STORAGE_KEY, JSON.stringify(this.value));
    } catch {
      // storage full or disabled: the panel still works, it just forgets
    }
  }
}
