/**
 * The notebook bridge: agents reach the notebooks open in this window.
 *
 * - Kernel runs (`%%agi`, the chat widget) open a comm `agi-jupyter:notebook` from the kernel.
 *   The answers cannot go back over the comm (the kernel's shell channel is busy with the
 *   running cell), so they go to `POST /agi/v1/notebook/replies` with the kernel's project
 *   folder, and the kernel takes them from its store. Opening the comm is answered with a
 *   hello the same way, so the kernel knows a tab is listening.
 * - Server runs (the side panel, REST) reach the tab through one request stream per window
 *   (`GET /agi/v1/notebook/bridge`), kept open while notebooks are open; the window says which
 *   ones (`POST /agi/v1/notebook/bridge`) and answers through the same replies route. With
 *   real-time collaboration the server edits the shared document itself and sends nothing here.
 *
 * Requests are applied by `notebookops.ts` to the notebook's shared model. Notebook panels are
 * found through the shell (duck-typed: this extension does not depend on @jupyterlab/notebook).
 */

import type { ISharedNotebook } from '@jupyter/ydoc';
import type { Kernel, KernelMessage } from '@jupyterlab/services';
import type { ISignal } from '@lumino/signaling';
import type { Widget } from '@lumino/widgets';

import { type AgiClient, isAbort } from './api';
import { answer, type BridgeRequest, type NotebookRequest, type Reply } from './notebookops';
import { ErrorCode } from './openapi';

export const COMM_TARGET = 'agi-jupyter:notebook';
const RETRY_MS = [1000, 2000, 5000, 10000];

/** What this module uses of a JupyterLab notebook panel. */
export interface NotebookPanelLike extends Widget {
  context: { path: string; pathChanged?: ISignal<unknown, string> };
  content: { model: { sharedModel: ISharedNotebook } | null; activeCell?: { model: { id: string } } | null };
  sessionContext: {
    session: { kernel: Kernel.IKernelConnection | null } | null;
    kernelChanged: ISignal<unknown, unknown>;
  };
}

export function asNotebookPanel(widget: Widget | null | undefined): NotebookPanelLike | null {
  const candidate = widget as Partial<NotebookPanelLike> | null | undefined;
  const path = candidate?.context?.path;
  if (typeof path === 'string' && path.endsWith('.ipynb') && candidate?.content && candidate.sessionContext) {
    return candidate as NotebookPanelLike;
  }
  return null;
}

function randomId(): string {
  return `win_${Date.now().toString(36)}_${Math.random().toString(36).slice(2, 10)}`;
}

export class NotebookBridge {
  readonly clientId = randomId();
  private panels = new Set<NotebookPanelLike>();
  private kernels = new WeakSet<Kernel.IKernelConnection>();
  private handled = new Set<string>();
  private stream: AbortController | null = null;
  private announced = '';
  private disposed = false;

  constructor(
    private readonly client: AgiClient,
    private readonly widgets: () => Iterable<Widget>
  ) {}

  /** The open notebooks changed (a tab opened, closed or was renamed): follow them. */
  refresh(): void {
    const open = new Set<NotebookPanelLike>();
    for (const widget of this.widgets()) {
      const panel = asNotebookPanel(widget);
      if (panel && !panel.isDisposed) {
        open.add(panel);
      }
    }
    for (const panel of open) {
      if (!this.panels.has(panel)) {
        this.watch(panel);
      }
    }
    this.panels = open;
    void this.announce();
    if (open.size && !this.stream) {
      void this.listen();
    } else if (!open.size && this.stream) {
      this.stream.abort();
      this.stream = null;
    }
  }

  dispose(): void {
    this.disposed = true;
    this.stream?.abort();
  }

  private watch(panel: NotebookPanelLike): void {
    const attach = (): void => this.attachKernel(panel);
    panel.sessionContext.kernelChanged.connect(attach);
    panel.context.pathChanged?.connect(() => void this.announce());
    attach();
  }

  /** Kernel runs: answer the comm of the notebook's kernel (see the module docstring). */
  private attachKernel(panel: NotebookPanelLike): void {
    const kernel = panel.sessionContext.session?.kernel;
    if (!kernel || this.kernels.has(kernel)) {
      return;
    }
    this.kernels.add(kernel);
    kernel.registerCommTarget(COMM_TARGET, (comm, open) => {
      const data = (open.content.data ?? {}) as { project?: string };
      const project = typeof data.project === 'string' ? data.project : undefined;
      void this.reply(`hello:${comm.commId}`, { ok: true, path: panel.context.path }, project);
      comm.onMsg = (msg: KernelMessage.ICommMsgMsg) => {
        const request = msg.content.data as unknown as NotebookRequest;
        this.handle(panel, request, project);
      };
    });
  }

  private handle(panel: NotebookPanelLike, request: NotebookRequest, project?: string): void {
    if (!request?.request_id || this.handled.has(request.request_id)) {
      return; // a second view of the same notebook got it too
    }
    if (this.handled.size > 1000) {
      this.handled.clear(); // ids are unique: only a request's second delivery is skipped
    }
    this.handled.add(request.request_id);
    const model = panel.content.model;
    const reply: Reply = model
      ? answer(model.sharedModel, request)
      : { ok: false, code: ErrorCode.NOTEBOOK_TAB_ERROR, message: 'the notebook is not loaded yet' };
    void this.reply(request.request_id, reply, project);
  }

  private async reply(requestId: string, reply: Reply, project?: string): Promise<void> {
    try {
      await this.client.notebookReply(requestId, reply, project);
    } catch (error) {
      console.warn('agi-jupyter: could not answer a notebook request', error);
    }
  }

  private async announce(): Promise<void> {
    const open = [...this.panels].map(p => p.context.path).sort();
    const key = JSON.stringify(open);
    if (key === this.announced) {
      return;
    }
    this.announced = key;
    try {
      await this.client.announceNotebooks(this.clientId, open);
    } catch {
      this.announced = ''; // the server extension may be off: try again on the next change
    }
  }

  /** Server runs: the window's request stream, reconnected while notebooks are open. */
  private async listen(): Promise<void> {
    const controller = new AbortController();
    this.stream = controller;
    for (let attempt = 0; !controller.signal.aborted && !this.disposed; attempt++) {
      try {
        for await (const event of this.client.notebookRequests(this.clientId, controller.signal)) {
          attempt = 0;
          if ((event as { type: string }).type === 'notebook.request') {
            this.serve(event as unknown as BridgeRequest);
          }
        }
      } catch (error) {
        if (isAbort(error) || controller.signal.aborted) {
          return;
        }
      }
      this.announced = ''; // a new stream: say again which notebooks are open
      await new Promise(resolve => setTimeout(resolve, RETRY_MS[Math.min(attempt, RETRY_MS.length - 1)]));
      void this.announce();
    }
  }

  private serve(request: BridgeRequest): void {
    const panel = [...this.panels].find(p => p.context.path === request.path);
    if (!panel) {
      void this.reply(request.request_id, {
        ok: false,
        code: ErrorCode.NOTEBOOK_TAB_GONE,
        message: 'the notebook is not open here'
      });
      return;
    }
    this.handle(panel, request);
  }
}
