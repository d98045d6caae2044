/** The plugin of the notebook bridge (`notebookbridge.ts`): on in every JupyterLab window. */

import { ILabShell, type JupyterFrontEnd, type JupyterFrontEndPlugin } from '@jupyterlab/application';

import { AgiClient } from './api';
import { NotebookBridge } from './notebookbridge';
import { jupyterTransport } from './transport';

export const notebookBridgePlugin: JupyterFrontEndPlugin<void> = {
  id: 'agi-jupyter:notebook-bridge',
  description: 'Lets agents read, edit and run the cells of the notebooks open in this window.',
  autoStart: true,
  requires: [ILabShell],
  activate: (app: JupyterFrontEnd, labShell: ILabShell) => {
    const client = new AgiClient(jupyterTransport(app.serviceManager.serverSettings));
    const bridge = new NotebookBridge(client, () => labShell.widgets('main'));
    const refresh = (): void => bridge.refresh();
    labShell.layoutModified.connect(refresh);
    labShell.currentChanged.connect(refresh);
    void app.restored.then(refresh);
  }
};
