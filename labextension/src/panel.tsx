/** The Lumino widget that hosts the React panel in JupyterLab's left sidebar. */

import type { IRenderMimeRegistry } from '@jupyterlab/rendermime';
import { ReactWidget } from '@jupyterlab/ui-components';
import type { Message } from '@lumino/messaging';
import React from 'react';

import { RenderMimeContext } from './markdown';
import type { PanelModel } from './model';
import { PanelView } from './view';

export class AgiPanel extends ReactWidget {
  private started = false;

  constructor(
    readonly model: PanelModel,
    private readonly rendermime: IRenderMimeRegistry,
    private readonly pickFolder: () => Promise<string | null>
  ) {
    super();
    this.addClass('jp-AgiPanel');
  }

  protected override onAfterShow(msg: Message): void {
    super.onAfterShow(msg);
    this.model.setVisible(true);
    if (!this.started) {
      this.started = true;
      void this.model.start();
    }
  }

  protected override onAfterHide(msg: Message): void {
    super.onAfterHide(msg);
    this.model.setVisible(false);
  }

  /** Put the keyboard focus in the message box. */
  focusPrompt(): void {
    this.node.querySelector<HTMLTextAreaElement>('.jp-AgiPrompt')?.focus();
  }

  override dispose(): void {
    this.model.dispose();
    super.dispose();
  }

  protected render(): JSX.Element {
    return (
      <RenderMimeContext.Provider value={this.rendermime}>
        <PanelView model={this.model} pickFolder={this.pickFolder} />
      </RenderMimeContext.Provider>
    );
  }
}
