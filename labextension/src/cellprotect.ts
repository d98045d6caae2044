/**
 * Protected cells in the notebook (issue 30): a cell whose metadata has `agi.protected` is the
 * user's, and agents may not run, edit or delete it (the server refuses with `CELL_PROTECTED`).
 *
 * - *AGI: Protect Cell* / *AGI: Unprotect Cell* toggles it on the active cell, from the cell's
 *   context menu, the cell toolbar (a lock button) and the palette. It changes the cell's
 *   metadata in the notebook's shared model, as the user's own edit (saved with the notebook;
 *   `%agi protect CELL` does the same from a kernel);
 * - every protected cell of an open notebook has the class `jp-AgiProtected`: a lock in its
 *   prompt area, with a tooltip saying why, kept in step with its metadata.
 */

import type { JupyterFrontEnd } from '@jupyterlab/application';
import type { ICommandPalette } from '@jupyterlab/apputils';
import type { ICellModel } from '@jupyterlab/cells';
import type { INotebookTracker, NotebookPanel } from '@jupyterlab/notebook';
import { lockIcon } from '@jupyterlab/ui-components';

import { isProtected, toggleProtected } from './cellmarks';
import type { Trans } from './i18n';

export const PROTECT = 'agi-jupyter:toggle-protect';
export const PROTECTED_CLASS = 'jp-AgiProtected';
const SELECTOR = '.jp-Notebook .jp-Cell';

function mark(panel: NotebookPanel, trans: Trans): void {
  for (const cell of panel.content.widgets) {
    const on = isProtected(cell.model.getMetadata('agi'));
    cell.node.classList.toggle(PROTECTED_CLASS, on);
    const prompt = cell.node.querySelector<HTMLElement>('.jp-InputArea-prompt');
    const text = trans.__('Protected: agents may not run, edit or delete this cell');
    if (prompt && on) {
      prompt.title = text;
    } else if (prompt?.title === text) {
      prompt.title = '';
    }
  }
}

function watch(panel: NotebookPanel, trans: Trans): void {
  const refresh = (): void => {
    requestAnimationFrame(() => !panel.isDisposed && mark(panel, trans));
  };
  const listen = (cell: ICellModel): void => {
    cell.metadataChanged.connect(refresh);
  };
  void panel.context.ready.then(() => {
    const cells = panel.content.model?.cells;
    if (!cells) {
      return;
    }
    for (const cell of cells) {
      listen(cell);
    }
    cells.changed.connect((_, change) => {
      change.newValues.forEach(listen);
      refresh();
    });
    refresh();
  });
}

/** The toggle command, its menu and palette entries, and the lock on every open notebook. */
export function addProtectToggle(
  app: JupyterFrontEnd,
  tracker: INotebookTracker,
  trans: Trans,
  palette: ICommandPalette | null
): void {
  const active = (): ICellModel | null => tracker.currentWidget?.content.activeCell?.model ?? null;
  app.commands.addCommand(PROTECT, {
    label: () => (isProtected(active()?.getMetadata('agi')) ? trans.__('AGI: Unprotect Cell') : trans.__('AGI: Protect Cell')),
    caption: trans.__('Protected cells are the user\'s: agents may not run, edit or delete them'),
    icon: lockIcon,
    isEnabled: () => active() !== null,
    isToggled: () => isProtected(active()?.getMetadata('agi')),
    execute: () => {
      const cell = active();
      if (cell) {
        toggleProtected(cell);
      }
    }
  });
  app.contextMenu.addItem({ command: PROTECT, selector: SELECTOR, rank: 24 });
  palette?.addItem({ command: PROTECT, category: 'AGI' });
  tracker.forEach(panel => watch(panel, trans));
  tracker.widgetAdded.connect((_, panel) => watch(panel, trans));
  tracker.activeCellChanged.connect(() => app.commands.notifyCommandChanged(PROTECT));
}
