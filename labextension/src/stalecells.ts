/**
 * Stale cells marked in the open notebooks (issue 30), from the ledger of executions: the
 * server answers which code cells changed since they last ran, or read a name a later execution
 * of another cell re-bound (`GET /executions/stale`, rule in `agi_jupyter/notebook/stale.py`).
 *
 * Each open notebook asks when it opens, when it becomes the current tab, after a cell of it
 * ran and after it was saved; a stale cell gets the class `jp-AgiStale` (`data-agi-stale`: the
 * reason) and a tooltip on its prompt saying why.
 */

import type { INotebookTracker, NotebookPanel } from '@jupyterlab/notebook';
import { NotebookActions } from '@jupyterlab/notebook';

import type { AgiClient } from './api';
import { locate } from './cellchanges';
import { type StaleCell, staleText } from './cellmarks';
import type { Trans } from './i18n';

export const STALE_CLASS = 'jp-AgiStale';

export class StaleCells {
  constructor(
    private readonly client: AgiClient,
    private readonly tracker: INotebookTracker,
    private readonly project: () => string,
    private readonly trans: Trans
  ) {
    tracker.forEach(panel => this.watch(panel));
    tracker.widgetAdded.connect((_, panel) => this.watch(panel));
    tracker.currentChanged.connect((_, panel) => panel && void this.refresh(panel));
    NotebookActions.executed.connect((_, { notebook }) => {
      const panel = this.panels().find(p => p.content === notebook);
      if (panel) {
        void this.refresh(panel);
      }
    });
  }

  /** Ask the server again for the notebook's stale cells, and mark them. */
  async refresh(panel: NotebookPanel): Promise<void> {
    const where = locate(panel.context.path, this.project());
    let cells: StaleCell[];
    try {
      const query = { project: where.project, path: where.path };
      cells = (await this.client.request('get', '/agi/v1/executions/stale', { query })).cells;
    } catch {
      cells = []; // (not a notebook of the project, or the server is away: nothing to mark)
    }
    if (!panel.isDisposed) {
      this.mark(panel, cells);
    }
  }

  private panels(): NotebookPanel[] {
    const found: NotebookPanel[] = [];
    this.tracker.forEach(panel => found.push(panel));
    return found.filter(panel => !panel.isDisposed);
  }

  private watch(panel: NotebookPanel): void {
    void panel.context.ready.then(() => this.refresh(panel));
    panel.context.saveState.connect((_, state) => state === 'completed' && void this.refresh(panel));
  }

  private mark(panel: NotebookPanel, cells: StaleCell[]): void {
    const stale = new Map(cells.map(cell => [cell.cell_id, cell]));
    for (const widget of panel.content.widgets) {
      const cell = stale.get(widget.model.id);
      widget.node.classList.toggle(STALE_CLASS, cell !== undefined);
      if (cell) {
        widget.node.dataset.agiStale = cell.reason;
      } else {
        delete widget.node.dataset.agiStale;
      }
      // A cell not yet rendered (JupyterLab renders long notebooks lazily) has no prompt yet:
      // its tooltip is set once it is, unless a later answer changed the mark meanwhile.
      const reason = cell?.reason;
      void widget.ready.then(() => {
        const prompt = widget.node.querySelector<HTMLElement>('.jp-InputArea-prompt');
        if (prompt && !widget.isDisposed && widget.node.dataset.agiStale === reason) {
          if (cell) {
            prompt.title = staleText(cell, this.trans);
          } else {
            prompt.removeAttribute('title');
          }
        }
      });
    }
    panel.node.dataset.agiStaleCells = `${cells.length}`; // (what was loaded last: tests wait on it)
  }
}
