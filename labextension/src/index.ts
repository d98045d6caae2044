/**
 * agi-jupyter's JupyterLab extension: the "AGI" side panel in the left sidebar. It reads and
 * writes only through the server's `/agi/v1` API, so a reload loses nothing and no other
 * extension (collaboration, kernels) is needed.
 */

import {
  ILabShell,
  ILayoutRestorer,
  type JupyterFrontEnd,
  type JupyterFrontEndPlugin
} from '@jupyterlab/application';
import { ICommandPalette, InputDialog } from '@jupyterlab/apputils';
import { IDocumentManager } from '@jupyterlab/docmanager';
import { INotebookTracker } from '@jupyterlab/notebook';
import { FileDialog } from '@jupyterlab/filebrowser';
import { IRenderMimeRegistry } from '@jupyterlab/rendermime';
import { ITranslator } from '@jupyterlab/translation';

import { AgiClient } from './api';
import { notebookBridgePlugin } from './bridgeplugin';
import { NotebookReview, refreshWhenRunsEnd } from './cellreview';

import { addCellActions } from './cellactions';
import { addProtectToggle } from './cellprotect';
import { completionPlugin } from './completion';
import { bundle, type Trans } from './i18n';
import { agiIcon } from './icons';
import { PanelModel } from './model';
import { ActiveNotebook } from './notebooks';
import { MentionSource, openNotebooks } from './mentions';
import { AgiPanel } from './panel';
import { StaleCells } from './stalecells';
import { jupyterTransport } from './transport';

export { agiIcon };
export const PANEL_ID = 'agi-jupyter-panel';
export const OPEN_COMMAND = 'agi-jupyter:open';

export { jupyterTransport };

async function chooseFolder(docManager: IDocumentManager | null, current: string, trans: Trans): Promise<string | null> {
  if (docManager) {
    const result = await FileDialog.getExistingDirectory({
      manager: docManager,
      title: trans.__('Choose the AGI project folder'),
      defaultPath: current
    });
    if (!result.button.accept || !result.value) {
      return null;
    }
    return result.value[0]?.path ?? current;
  }
  const result = await InputDialog.getText({
    title: trans.__('AGI project folder (relative to the server root)'),
    text: current
  });
  return result.button.accept ? (result.value ?? '').replace(/^\/+|\/+$/g, '') : null;
}

const plugin: JupyterFrontEndPlugin<void> = {
  id: 'agi-jupyter:panel',
  description: 'The AGI side panel: sessions, streaming chat, tool calls, runs and artifacts.',
  autoStart: true,
  requires: [IRenderMimeRegistry],
  optional: [ILabShell, ILayoutRestorer, ICommandPalette, IDocumentManager, ITranslator, INotebookTracker],
  activate: (
    app: JupyterFrontEnd,
    rendermime: IRenderMimeRegistry,
    labShell: ILabShell | null,
    restorer: ILayoutRestorer | null,
    palette: ICommandPalette | null,
    docManager: IDocumentManager | null,
    translator: ITranslator | null,
    tracker: INotebookTracker | null
  ) => {
    const trans = bundle(translator);
    const client = new AgiClient(jupyterTransport(app.serviceManager.serverSettings));
    const model = new PanelModel(client, window.localStorage);
    const notebook = new ActiveNotebook(app);
    const review = tracker ? new NotebookReview(client, tracker, () => model.snapshot.project) : null;
    if (review) {
      refreshWhenRunsEnd(model, review);
    }
    if (tracker) {
      addProtectToggle(app, tracker, trans, palette);
      new StaleCells(client, tracker, () => model.snapshot.project, trans);
    }
    const panel = new AgiPanel(model, {
      rendermime,
      trans,
      review,
      codeActions: notebook.codeActions(),
      pickFolder: () => chooseFolder(docManager, model.snapshot.project, trans)
    });
    panel.id = PANEL_ID;
    panel.title.icon = agiIcon;
    panel.title.caption = trans.__('AGI: sessions, chat, runs and artifacts');
    panel.title.label = '';
    app.shell.add(panel, 'left', { rank: 650 });
    restorer?.add(panel, PANEL_ID);

    model.activeCell = () => notebook.activeCellId();
    model.mentionSource = new MentionSource(client, () => openNotebooks(tracker));
    model.readFile = async path => {
      const file = await app.serviceManager.contents.get(path, { type: 'file', format: 'base64', content: true });
      return String(file.content);
    };
    if (labShell) {
      const follow = (): void => {
        const path = notebook.track(labShell.currentWidget);
        if (path) {
          model.setActivePath(path);
        }
      };
      labShell.currentChanged.connect(follow);
      void app.restored.then(follow);
    }

    app.commands.addCommand(OPEN_COMMAND, {
      label: trans.__('Open the AGI Panel'),
      caption: trans.__('Show the AGI side panel and focus its message box'),
      execute: () => {
        app.shell.activateById(PANEL_ID);
        panel.focusPrompt();
      }
    });
    palette?.addItem({ command: OPEN_COMMAND, category: 'AGI' });
    const sendFromCell = (prompt: string): Promise<boolean> => {
      app.shell.activateById(PANEL_ID);
      return model.send(prompt);
    };
    addCellActions(app, sendFromCell, trans);
  }
};

export default [plugin, notebookBridgePlugin, completionPlugin];
