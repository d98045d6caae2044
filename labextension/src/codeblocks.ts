/**
 * Code blocks of rendered answers get a small toolbar: Copy, and Insert into the active
 * notebook (a new cell below its active cell). The Markdown is rendered by JupyterLab's
 * rendermime (which also highlights the code); this decorates the result after each render.
 */

import { addBelowIcon, copyIcon, type LabIcon } from '@jupyterlab/ui-components';
import React from 'react';

import type { Trans } from './i18n';

export interface CodeActions {
  copy(text: string): void;
  /** Insert `text` as a new code cell below the active notebook's active cell. */
  insert(text: string): Promise<void>;
  /** Whether a notebook is there to insert into. */
  canInsert(): boolean;
}

export const CodeActionsContext = React.createContext<CodeActions | null>(null);

const DECORATED = 'jp-AgiCodeBlock';

/** Wrap every `<pre>` of `root` (once) with its toolbar. */
export function decorateCodeBlocks(root: HTMLElement, actions: CodeActions, trans: Trans): void {
  for (const pre of Array.from(root.querySelectorAll('pre'))) {
    if (pre.parentElement?.classList.contains(DECORATED)) {
      continue;
    }
    const block = document.createElement('div');
    block.className = DECORATED;
    pre.replaceWith(block);
    const code = (): string => (pre.textContent ?? '').replace(/\n$/, '');
    const bar = document.createElement('div');
    bar.className = 'jp-AgiCodeToolbar';
    bar.append(
      button(copyIcon, trans.__('Copy'), 'jp-AgiCodeCopy', () => actions.copy(code())),
      button(addBelowIcon, trans.__('Insert into notebook'), 'jp-AgiCodeInsert', () => void actions.insert(code()), {
        disabled: !actions.canInsert(),
        disabledTitle: trans.__('Open a notebook to insert the code into it')
      })
    );
    block.append(pre, bar);
  }
}

function button(
  icon: LabIcon,
  title: string,
  className: string,
  onClick: () => void,
  state: { disabled: boolean; disabledTitle: string } = { disabled: false, disabledTitle: '' }
): HTMLButtonElement {
  const element = document.createElement('button');
  element.type = 'button';
  element.className = `jp-AgiCodeButton ${className}`;
  element.title = state.disabled ? state.disabledTitle : title;
  element.setAttribute('aria-label', title);
  element.disabled = state.disabled;
  icon.element({ container: element, tag: 'span', elementSize: 'normal' });
  element.addEventListener('click', event => {
    event.preventDefault();
    onClick();
  });
  return element;
}
