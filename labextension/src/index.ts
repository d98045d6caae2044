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
import { FileDialog } from '@jupyterlab/filebrowser';
import { IRenderMimeRegistry } from '@jupyterlab/rendermime';
import { LabIcon } from '@jupyterlab/ui-components';
import type { Widget } from '@lumino/widgets';

import agiSvg from '../style/icons/agi.svg';
import { AgiClient } from './api';
import { PanelModel } from './model';
import { notebookBridgePlugin } from './bridgeplugin';
import { asNotebookPanel } from './notebookbridge';
import { AgiPanel } from './panel';
import { jupyterTransport } from './transport';

export const PANEL_ID = 'agi-jupyter-panel';
export const OPEN_COMMAND = 'agi-jupyter:open';

export const agiIcon = new LabIcon({ name: 'agi-jupyter:agi', svgstr: agiSvg });

export { jupyterTransport };

/** The path of a notebook widget (its document context), else null. */
function notebookPath(widget: Widget | null): string | null {
  const context = (widget as unknown as { context?: { path?: unknown } } | null)?.context;
  const path = context?.path;
  return typeof path === 'string' && path.endsWith('.ipynb') ? path : null;
}

async function chooseFolder(docManager: IDocumentManager | null, current: string): Promise<string | null> {
  if (docManager) {
    const result = await FileDialog.getExistingDirectory({
      manager: docManager,
      title: 'Choose the AGI project folder',
      defaultPath: current
    });
    if (!result.button.accept || !result.value) {
      return null;
    }
    return result.value[0]?.path ?? current;
  }
  const result = await InputDialog.getText({
    title: 'AGI project folder (relative to the server root)',
    text: current
  });
  return result.button.accept ? (result.value ?? '').replace(/^\/+|\/+$/g, '') : null;
}

const plugin: JupyterFrontEndPlugin<void> = {
  id: 'agi-jupyter:panel',
  description: 'The AGI side panel: sessions, streaming chat, tool calls, runs and artifacts.',
  autoStart: true,
  requires: [IRenderMimeRegistry],
  optional: [ILabShell, ILayoutRestorer, ICommandPalette, IDocumentManager],
  activate: (
    app: JupyterFrontEnd,
    rendermime: IRenderMimeRegistry,
    labShell: ILabShell | null,
    restorer: ILayoutRestorer | null,
    palette: ICommandPalette | null,
    docManager: IDocumentManager | null
  ) => {
    const client = new AgiClient(jupyterTransport(app.serviceManager.serverSettings));
    const model = new PanelModel(client, window.localStorage);
    const panel = new AgiPanel(model, rendermime, () => chooseFolder(docManager, model.snapshot.project));
    panel.id = PANEL_ID;
    panel.title.icon = agiIcon;
    panel.title.caption = 'AGI: sessions, chat, runs and artifacts';
    panel.title.label = '';
    app.shell.add(panel, 'left', { rank: 650 });
    restorer?.add(panel, PANEL_ID);

    if (labShell) {
      const follow = (): void => {
        const path = notebookPath(labShell.currentWidget);
        if (path) {
          model.setActivePath(path);
        }
      };
      // Messages say which cell is active in the notebook the user looks at.
      model.activeCell = () => asNotebookPanel(labShell.currentWidget)?.content.activeCell?.model.id ?? null;
      labShell.currentChanged.connect(follow);
      void app.restored.then(follow);
    }

    app.commands.addCommand(OPEN_COMMAND, {
      label: 'Open the AGI Panel',
      caption: 'Show the AGI side panel and focus its message box',
      execute: () => {
        app.shell.activateById(PANEL_ID);
        requestAnimationFrame(() => panel.focusPrompt());
      }
    });
    palette?.addItem({ command: OPEN_COMMAND, category: 'AGI' });
  }
};

export default [plugin, notebookBridgePlugin];
