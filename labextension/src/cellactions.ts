/**
 * Cell actions: *Explain*, *Fix* (offered when the cell has an error output; its traceback goes
 * with the request) and *Edit…* (an instruction), on a notebook cell's context menu, on the
 * cell toolbar (icons: `jupyter.lab.toolbars` of schema/panel.json, so Lab's cell toolbar
 * settings can hide or move them) and in the command palette. Each sends a message to the panel's session (a normal run of that notebook,
 * visible in the panel); the agent changes the cell with the notebook tools, so its edit comes
 * back through the notebook's change review like every other agent edit.
 */

import type { JupyterFrontEnd } from '@jupyterlab/application';
import { InputDialog } from '@jupyterlab/apputils';
import { NotebookActions } from '@jupyterlab/notebook';
import { bugIcon, editIcon, type LabIcon } from '@jupyterlab/ui-components';

import { type ActiveCell, editPrompt, errorOf, type ErrorOutput, explainPrompt, fixPrompt } from './cellprompts';
import type { Trans } from './i18n';
import { agiIcon } from './icons';

export const EXPLAIN = 'agi-jupyter:explain-cell';
export const FIX = 'agi-jupyter:fix-cell';
export const EDIT = 'agi-jupyter:edit-cell';
const SELECTOR = '.jp-Notebook .jp-Cell';

function activeCell(app: JupyterFrontEnd): ActiveCell | null {
  const widget = app.shell.currentWidget as unknown as {
    content?: { activeCell?: { model: { id: string; sharedModel: { getSource(): string }; toJSON(): unknown } } | null };
  } | null;
  const cell = widget?.content?.activeCell;
  if (!cell) {
    return null;
  }
  const json = cell.model.toJSON() as { outputs?: ErrorOutput[] };
  return { id: cell.model.id, source: cell.model.sharedModel.getSource(), error: errorOf(json.outputs) };
}

/** Register the three actions; `send` posts a message to the panel's session (showing it). */
export function addCellActions(app: JupyterFrontEnd, send: (prompt: string) => Promise<unknown>, trans: Trans): void {
  const run = (prompt: (cell: ActiveCell) => string | null) => async () => {
    const cell = activeCell(app);
    const text = cell ? prompt(cell) : null;
    if (text) {
      await send(text);
    }
  };
  // On the cell toolbar (args.toolbar) a command shows its icon, its label as the tooltip.
  const onToolbar = (icon: LabIcon) => (args: { toolbar?: unknown }) => (args.toolbar ? icon : undefined);
  app.commands.addCommand(EXPLAIN, {
    label: trans.__('AGI: Explain Cell'),
    icon: onToolbar(agiIcon),
    isEnabled: () => activeCell(app) !== null,
    execute: run(explainPrompt)
  });
  app.commands.addCommand(FIX, {
    label: trans.__('AGI: Fix Cell'),
    icon: onToolbar(bugIcon),
    isEnabled: () => activeCell(app)?.error != null,
    isVisible: () => activeCell(app)?.error != null,
    execute: run(cell => (cell.error ? fixPrompt(cell) : null))
  });
  app.commands.addCommand(EDIT, {
    label: trans.__('AGI: Edit Cell…'),
    icon: onToolbar(editIcon),
    isEnabled: () => activeCell(app) !== null,
    execute: async () => {
      const cell = activeCell(app);
      if (!cell) {
        return;
      }
      const answer = await InputDialog.getText({ title: trans.__('How should the cell change?') });
      if (answer.button.accept && answer.value?.trim()) {
        await send(editPrompt(cell, answer.value.trim()));
      }
    }
  });
  [EXPLAIN, FIX, EDIT].forEach((command, rank) => {
    app.contextMenu.addItem({ command, selector: SELECTOR, rank: 20 + rank });
  });
  // Fix shows only on a failing cell: its toolbar button is redrawn when a cell has run.
  NotebookActions.executed.connect(() => app.commands.notifyCommandChanged(FIX));
}
