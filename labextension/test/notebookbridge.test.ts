import { YNotebook } from '@jupyter/ydoc';
import { Signal } from '@lumino/signaling';
import { describe, expect, it } from 'vitest';

import { AgiClient, type Transport } from '../src/api';
import { COMM_TARGET, NotebookBridge, type NotebookPanelLike } from '../src/notebookbridge';

interface Call {
  path: string;
  body: Record<string, unknown>;
}

/** A server that records what the bridge posts and streams `requests` to it once. */
function server(requests: object[]): { transport: Transport; calls: Call[]; streamed: Promise<void> } {
  const calls: Call[] = [];
  let done: () => void = () => {};
  const streamed = new Promise<void>(resolve => (done = resolve));
  const transport: Transport = async (path, init) => {
    if (path.startsWith('v1/notebook/bridge?')) {
      const text = requests.map(r => `event: notebook.request\ndata: ${JSON.stringify(r)}\n\n`).join('');
      setTimeout(done, 0);
      const body = new ReadableStream<Uint8Array>({
        start(controller) {
          controller.enqueue(new TextEncoder().encode(text));
          init.signal?.addEventListener('abort', () => controller.error(new DOMException('aborted', 'AbortError')));
        }
      });
      return new Response(body, { headers: { 'Content-Type': 'text/event-stream' } });
    }
    calls.push({ path, body: JSON.parse(String(init.body ?? '{}')) });
    return new Response('{"ok": true}', { headers: { 'Content-Type': 'application/json' } });
  };
  return { transport, calls, streamed };
}

type CommHandler = (comm: { commId: string; onMsg: unknown }, msg: { content: { data: unknown } }) => void;

function panel(path: string, targets: Map<string, CommHandler>): NotebookPanelLike {
  const model = YNotebook.create();
  model.insertCells(0, [{ cell_type: 'code', source: 'x = 1', id: 'c1', metadata: {}, outputs: [], execution_count: null }] as never);
  const kernel = { registerCommTarget: (name: string, handler: CommHandler) => targets.set(name, handler) };
  return {
    isDisposed: false,
    context: { path },
    content: { model: { sharedModel: model } },
    sessionContext: { session: { kernel }, kernelChanged: new Signal<unknown, unknown>({}) }
  } as unknown as NotebookPanelLike;
}

const settle = () => new Promise(resolve => setTimeout(resolve, 20));

describe('NotebookBridge', () => {
  it('announces open notebooks and answers the server stream', async () => {
    const read = { type: 'notebook.request', request_id: 'nbr_1', op: 'read', path: 'a.ipynb' };
    const edit = {
      type: 'notebook.request',
      request_id: 'nbr_2',
      op: 'apply',
      path: 'a.ipynb',
      change: { op: 'edit', cell_id: 'c1', expected_source: 'x = 1', source: 'x = 2' }
    };
    const { transport, calls, streamed } = server([read, edit, { ...edit, request_id: 'nbr_3', path: 'closed.ipynb' }]);
    const open = panel('a.ipynb', new Map());
    const bridge = new NotebookBridge(new AgiClient(transport), () => [open]);
    bridge.refresh();
    await streamed;
    await settle();
    bridge.dispose();
    const announce = calls.find(c => c.path === 'v1/notebook/bridge');
    expect(announce?.body).toEqual({ client_id: bridge.clientId, open: ['a.ipynb'] });
    const replies = calls.filter(c => c.path === 'v1/notebook/replies').map(c => c.body);
    expect(replies.map(r => r.request_id)).toEqual(['nbr_1', 'nbr_2', 'nbr_3']);
    expect((replies[0]!.reply as { notebook: { cells: unknown[] } }).notebook.cells).toHaveLength(1);
    expect(replies[1]!.reply).toMatchObject({ ok: true });
    expect(open.content.model!.sharedModel.cells[0]!.getSource()).toBe('x = 2');
    expect(replies[2]!.reply).toMatchObject({ ok: false, code: 'NOTEBOOK_TAB_GONE' });
  });

  it("says hello to a kernel's comm and answers it through the server, once per request", async () => {
    const { transport, calls } = server([]);
    const targets = new Map<string, CommHandler>();
    const open = panel('k.ipynb', targets);
    const bridge = new NotebookBridge(new AgiClient(transport), () => [open]);
    bridge.refresh();
    const comm = { commId: 'comm-1', onMsg: null as unknown };
    targets.get(COMM_TARGET)!(comm, { content: { data: { project: '/srv/proj' } } });
    const onMsg = comm.onMsg as (msg: { content: { data: unknown } }) => void;
    const request = { request_id: 'nbr_k', op: 'read' };
    onMsg({ content: { data: request } });
    onMsg({ content: { data: request } });
    await settle();
    bridge.dispose();
    const replies = calls.filter(c => c.path === 'v1/notebook/replies').map(c => c.body);
    expect(replies.map(r => [r.request_id, r.project_dir])).toEqual([
      ['hello:comm-1', '/srv/proj'],
      ['nbr_k', '/srv/proj']
    ]);
    expect(replies[0]!.reply).toEqual({ ok: true, path: 'k.ipynb' });
  });
});
