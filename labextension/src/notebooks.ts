/**
 * The notebook the panel follows and inserts code into: the last notebook widget that was
 * active in the main area. Lab-only glue (commands and the notebook's shared model), kept
 * apart from the pure modules; it needs no notebook package at build time.
 */

import type { JupyterFrontEnd } from '@jupyterlab/application';
import { Clipboard } from '@jupyterlab/apputils';
import type { Widget } from '@lumino/widgets';

import type { CodeActions } from './codeblocks';

/** What the panel uses of a notebook widget (`NotebookPanel`). */
interface NotebookLike extends Widget {
  context: { path: string };
  content: { activeCell: { model: { sharedModel: { setSource(source: string): void } } } | null };
}

function isNotebook(widget: Widget | null): widget is NotebookLike {
  const candidate = widget as Partial<NotebookLike> | null;
  return typeof candidate?.context?.path === 'string' && candidate.context.path.endsWith('.ipynb') && !!candidate.content;
}

export class ActiveNotebook {
  private widget: NotebookLike | null = null;

  constructor(private readonly app: JupyterFrontEnd) {}

  /** Track `widget` when it is a notebook; returns its path (null for other widgets). */
  track(widget: Widget | null): string | null {
    if (!isNotebook(widget)) {
      return null;
    }
    this.widget = widget;
    widget.disposed.connect(() => {
      if (this.widget === widget) {
        this.widget = null;
      }
    });
    return widget.context.path;
  }

  /** The code blocks' actions: copy to the clipboard; insert as a new cell below the tracked
   * notebook's active cell (JupyterLab's own command, so undo works as for any new cell). */
  codeActions(): CodeActions {
    return {
      copy: text => Clipboard.copyToSystem(text),
      canInsert: () => this.widget !== null && !this.widget.isDisposed,
      insert: async text => {
        const widget = this.widget;
        if (!widget || widget.isDisposed) {
          return;
        }
        this.app.shell.activateById(widget.id);
        await this.app.commands.execute('notebook:insert-cell-below');
        widget.content.activeCell?.model.sharedModel.setSource(text);
      }
    };
  }
}
