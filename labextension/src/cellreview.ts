/**
 * The agent's changes highlighted in the open notebooks, with Keep / Undo on each changed cell
 * (marimo's and Cursor's model). Lab glue over `cellchanges.ts`:
 *
 * - every open notebook asks the server which changes of ended runs are still to review
 *   (`GET /changes?to_review=true`): when it opens, when it becomes the current tab, when a run
 *   of the panel ends and after every Keep or Undo;
 * - a cell with changes gets the class `jp-AgiChanged` (`data-agi-change` says what the agent
 *   did) and a small bar above its input: what changed, *Keep* and *Undo*;
 * - *Undo* is the server's undo of those changes (`POST /runs/{id}/undo` with their ids): a
 *   cell typed into since is a conflict, named on the cell and left as it is, with *Undo
 *   anyway*. *Keep* records the changes as kept (`POST /runs/{id}/keep`), so the highlight
 *   stays away after a reload and in every door (`agi diff` says "kept");
 * - the side panel's review bar (`reviewbar.tsx`) uses the same object for *Keep all*,
 *   *Undo all* and *Next change*.
 */

import type { INotebookTracker, NotebookPanel } from '@jupyterlab/notebook';
import { Signal, type ISignal } from '@lumino/signaling';

import { type AgiClient, errorText } from './api';
import { type CellReview, conflictText, locate, nextChanged, perRun, reviewLabel, reviewsByCell } from './cellchanges';
import type { PanelModel } from './model';
import { sortedRuns } from './state';
import { type Change, isTerminal, type UndoResult } from './types';

export const CHANGED_CLASS = 'jp-AgiChanged';
const BAR_CLASS = 'jp-AgiCellReview';

/** A notebook's changes to review, and what the last Keep / Undo left to say. */
export interface NotebookChanges {
  path: string;
  cells: CellReview[];
  /** Conflicts or errors of the last action, per cell id ('' for the whole notebook). */
  notes: Map<string, { text: string; force: Change[] }>;
  busy: boolean;
}

export class NotebookReview {
  private readonly notebooks = new Map<string, NotebookChanges>();
  private readonly changedSignal = new Signal<this, string>(this);

  /** `project`: the panel's project (relative to the server root), where runs keep changes. */
  constructor(
    private readonly client: AgiClient,
    private readonly tracker: INotebookTracker,
    private readonly project: () => string
  ) {
    tracker.widgetAdded.connect((_, panel) => this.watch(panel));
    tracker.forEach(panel => this.watch(panel));
    tracker.currentChanged.connect((_, panel) => panel && void this.refresh(panel.context.path));
  }

  /** Emits the path of a notebook whose changes to review changed. */
  get changed(): ISignal<this, string> {
    return this.changedSignal;
  }

  /** The changes to review of the notebook at `path` (relative to the server root). */
  of(path: string | null): NotebookChanges | null {
    return path === null ? null : (this.notebooks.get(path) ?? null);
  }

  /** Ask the server again, for the open notebook at `path` or for every open one. */
  async refresh(path?: string): Promise<void> {
    const panels = this.panels().filter(panel => path === undefined || panel.context.path === path);
    await Promise.all(panels.map(panel => this.load(panel)));
  }

  /** Keep the changes of the chosen cells (all when none is named). */
  async keep(path: string, cellIds?: string[]): Promise<void> {
    await this.act(path, cellIds, async (where, changes, notes) => {
      for (const { runId, ids } of perRun(changes, false)) {
        await this.client.keepChanges(where.project, runId, ids);
      }
      for (const id of [...(cellIds ?? notes.keys()), '']) {
        notes.delete(id);
      }
    });
  }

  /** Undo the changes of the chosen cells (all when none is named); `force`: also where the
   * cell was changed since (the "Undo anyway" of a conflict). */
  async undo(path: string, cellIds?: string[], force = false): Promise<void> {
    await this.act(path, cellIds, async (where, changes, notes) => {
      const results: UndoResult[] = [];
      for (const { runId, ids } of perRun(changes, true)) {
        results.push(await this.client.undoChanges(where.project, runId, ids, force));
      }
      const text = conflictText(results);
      const key = cellIds?.length === 1 ? cellIds[0]! : '';
      if (text) {
        const left = new Set(results.flatMap(r => (r.conflicts ?? []).map(c => c.id)));
        notes.set(key, { text, force: changes.filter(c => left.has(c.id)) });
      } else {
        notes.delete(key);
      }
    });
  }

  /** Make the next changed cell after the active one active, and scroll to it. */
  next(path: string): void {
    const panel = this.panels().find(p => p.context.path === path);
    const notebook = this.notebooks.get(path);
    if (!panel || !notebook) {
      return;
    }
    const cells = panel.content.widgets;
    const order = cells.map(cell => cell.model.id);
    const active = panel.content.activeCell?.model.id ?? null;
    const id = nextChanged(order, new Set(notebook.cells.map(c => c.cellId)), active);
    const index = id === null ? -1 : order.indexOf(id);
    const cell = cells[index];
    if (cell) {
      panel.content.activeCellIndex = index;
      void panel.content.scrollToCell(cell, 'center');
    }
  }

  private panels(): NotebookPanel[] {
    const found: NotebookPanel[] = [];
    this.tracker.forEach(panel => found.push(panel));
    return found.filter(panel => !panel.isDisposed);
  }

  private watch(panel: NotebookPanel): void {
    const decorate = (): void => {
      // After the notebook made the widgets of new cells (it listens to the same signal).
      requestAnimationFrame(() => this.decorate(panel));
    };
    void panel.context.ready.then(() => {
      panel.content.model?.cells.changed.connect(decorate);
      void this.load(panel);
    });
    panel.context.pathChanged.connect(() => void this.load(panel));
    panel.disposed.connect(() => {
      this.notebooks.delete(panel.context.path);
      this.changedSignal.emit(panel.context.path);
    });
  }

  private async load(panel: NotebookPanel): Promise<void> {
    const path = panel.context.path;
    const where = locate(path, this.project());
    const notebook = this.entry(path);
    try {
      notebook.cells = reviewsByCell(await this.client.changesToReview(where.project, where.path));
      notebook.notes.delete('load');
    } catch (error) {
      notebook.cells = [];
      notebook.notes.set('load', { text: errorText(error), force: [] });
    }
    this.decorate(panel);
    panel.node.dataset.agiReview = `${notebook.cells.length}`; // (what was loaded last: tests wait on it)
    this.changedSignal.emit(path);
  }

  private entry(path: string): NotebookChanges {
    let notebook = this.notebooks.get(path);
    if (!notebook) {
      notebook = { path, cells: [], notes: new Map(), busy: false };
      this.notebooks.set(path, notebook);
    }
    return notebook;
  }

  private async act(
    path: string,
    cellIds: string[] | undefined,
    action: (where: { project: string; path: string }, changes: Change[], notes: NotebookChanges['notes']) => Promise<void>
  ): Promise<void> {
    const notebook = this.entry(path);
    const chosen = notebook.cells.filter(cell => !cellIds || cellIds.includes(cell.cellId));
    const changes = chosen.flatMap(cell => cell.changes);
    if (!changes.length || notebook.busy) {
      return;
    }
    notebook.busy = true;
    this.changedSignal.emit(path);
    try {
      await action(locate(path, this.project()), changes, notebook.notes);
    } catch (error) {
      notebook.notes.set(cellIds?.length === 1 ? cellIds[0]! : '', { text: errorText(error), force: [] });
    } finally {
      notebook.busy = false;
    }
    await this.refresh(path);
    this.changedSignal.emit(path);
  }

  /** Mark the cells with changes and give each its bar; unmark the others. */
  private decorate(panel: NotebookPanel): void {
    if (panel.isDisposed) {
      return;
    }
    const notebook = this.notebooks.get(panel.context.path);
    const reviews = new Map((notebook?.cells ?? []).map(cell => [cell.cellId, cell]));
    for (const cell of panel.content.widgets) {
      const review = reviews.get(cell.model.id);
      const old = cell.node.querySelector(`:scope > .${BAR_CLASS}`);
      old?.remove();
      if (!review || !notebook) {
        cell.removeClass(CHANGED_CLASS);
        delete cell.node.dataset.agiChange;
        delete cell.node.dataset.agiCell;
        continue;
      }
      cell.addClass(CHANGED_CLASS);
      cell.node.dataset.agiChange = review.action;
      cell.node.dataset.agiCell = review.cellId;
      cell.node.insertBefore(this.bar(panel.context.path, review, notebook), cell.node.firstChild);
    }
  }

  /** "Agent edited this cell · Keep · Undo", and a conflict with "Undo anyway". */
  private bar(path: string, review: CellReview, notebook: NotebookChanges): HTMLElement {
    const bar = document.createElement('div');
    bar.className = BAR_CLASS;
    bar.addEventListener('mousedown', event => event.stopPropagation()); // no cell drag or select
    const label = document.createElement('span');
    label.className = 'jp-AgiCellReview-label';
    label.textContent = reviewLabel(review);
    label.title = review.changes.map(c => c.diff).join('\n');
    bar.append(label);
    const button = (text: string, name: string, title: string, onClick: () => void): void => {
      const element = document.createElement('button');
      element.type = 'button';
      element.className = `jp-AgiButton jp-mod-small jp-AgiCellReview-${name}`;
      element.textContent = text;
      element.title = title;
      element.disabled = notebook.busy;
      element.addEventListener('click', event => {
        event.stopPropagation();
        onClick();
      });
      bar.append(element);
    };
    const cells = [review.cellId];
    button('Keep', 'keep', 'Keep the agent\'s change of this cell', () => void this.keep(path, cells));
    button('Undo', 'undo', 'Put this cell back as it was before the agent (your own edits are kept)', () => void this.undo(path, cells));
    const note = notebook.notes.get(review.cellId);
    if (note) {
      const text = document.createElement('span');
      text.className = 'jp-AgiBlockError jp-AgiCellReview-conflict';
      text.setAttribute('role', 'alert');
      text.textContent = note.text;
      bar.append(text);
      if (note.force.length) {
        button('Undo anyway', 'force', 'Put the cell back even though it changed since', () => void this.undo(path, cells, true));
      }
    }
    return bar;
  }
}

/** Ask again whenever a run the panel shows ends, and when the panel undid a run. */
export function refreshWhenRunsEnd(model: PanelModel, review: NotebookReview): void {
  let ended = '';
  model.subscribe(() => {
    const key = sortedRuns(model.snapshot.chat)
      .filter(run => isTerminal(run.status))
      .map(run => run.id)
      .join(' ');
    if (key !== ended) {
      ended = key;
      void review.refresh();
    }
  });
  model.changesUndone = () => void review.refresh();
}
