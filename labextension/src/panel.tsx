/** The Lumino widget that hosts the React panel in JupyterLab's left sidebar. */

import type { IRenderMimeRegistry } from '@jupyterlab/rendermime';
import { ReactWidget } from '@jupyterlab/ui-components';
import type { Message } from '@lumino/messaging';
import React from 'react';

import type { NotebookReview } from './cellreview';
import { CodeActionsContext, type CodeActions } from './codeblocks';
import { TransContext, type Trans } from './i18n';
import { RenderMimeContext } from './markdown';
import type { PanelModel } from './model';
import { PanelView } from './view';

export interface PanelServices {
  rendermime: IRenderMimeRegistry;
  trans: Trans;
  codeActions: CodeActions;
  pickFolder: () => Promise<string | null>;
  /** The agent's changes highlighted in the open notebooks (none without a notebook tracker). */
  review?: NotebookReview | null;
}

export class AgiPanel extends ReactWidget {
  private started = false;

  constructor(
    readonly model: PanelModel,
    private readonly services: PanelServices
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

  /**
   * Put the keyboard focus in the message box. The box is rendered once the panel is shown and
   * its sessions are loaded, which can take a few frames after the panel is activated: it is
   * looked for on each frame, for at most two seconds.
   */
  focusPrompt(): void {
    const until = performance.now() + 2000;
    const attempt = (): void => {
      const box = this.node.querySelector<HTMLTextAreaElement>('.jp-AgiPrompt');
      if (box && this.isVisible) {
        box.focus();
      } else if (!this.isDisposed && performance.now() < until) {
        requestAnimationFrame(attempt);
      }
    };
    attempt();
  }

  override dispose(): void {
    this.model.dispose();
    super.dispose();
  }

  protected render(): JSX.Element {
    const { rendermime, trans, codeActions, pickFolder, review } = this.services;
    return (
      <TransContext.Provider value={trans}>
        <RenderMimeContext.Provider value={rendermime}>
          <CodeActionsContext.Provider value={codeActions}>
            <PanelView model={this.model} pickFolder={pickFolder} review={review ?? null} />
          </CodeActionsContext.Provider>
        </RenderMimeContext.Provider>
      </TransContext.Provider>
    );
  }
}
