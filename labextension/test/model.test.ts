import { describe, expect, it } from 'vitest';

import { AgiClient, type Transport } from '../src/api';
import type { Storage } from '../src/memory';
import { PanelModel } from '../src/model';
import { folderOf } from '../src/snapshot';
import { agent, message, run, sdk, session, wire } from './fixtures';

function ndjson(lines: object[]): Response {
  return new Response(lines.map(l => JSON.stringify(wire(l as never))).join('\n') + '\n', {
    headers: { 'Content-Type': 'application/x-ndjson' }
  });
}

function json(body: unknown, status = 200): Response {
  return new Response(JSON.stringify(body), { status, headers: { 'Content-Type': 'application/json' } });
}

/** A stream that stays open until the request is aborted (the session stream). */
function hanging(signal: AbortSignal | null | undefined): Response {
  const body = new ReadableStream<Uint8Array>({
    start(controller) {
      signal?.addEventListener('abort', () => controller.error(new DOMException('aborted', 'AbortError')));
    }
  });
  return new Response(body, { headers: { 'Content-Type': 'text/event-stream' } });
}

class MemoryStorage implements Storage {
  data = new Map<string, string>();
  getItem(key: string): string | null {
    return this.data.get(key) ?? null;
  }
  setItem(key: string, value: string): void {
    this.data.set(key, value);
  }
}

/** One body that reads as any empty listing of the API (agents, providers, sessions...). */
const EMPTY = {
  agents: [],
  providers: [],
  sdks: [],
  default_model: 'fake:echo',
  default_sdk: 'native',
  sessions: [],
  messages: [],
  runs: [],
  view: 'full',
  next_cursor: null
};

const SESSION = session({ id: 'ses_1', agent: 'general', model: 'echo' });
const RUN = 'run_1';
const user = message({ id: 'msg_u', run_id: RUN, role: 'user', parts: [{ type: 'text', text: 'hi' }] });
const answer = message({ id: 'msg_a', run_id: RUN, role: 'assistant', parts: [{ type: 'text', text: 'hello there' }] });

async function until(check: () => boolean, what: string): Promise<void> {
  for (let i = 0; i < 200; i++) {
    if (check()) {
      return;
    }
    await new Promise(r => setTimeout(r, 5));
  }
  throw new Error(`timed out waiting for ${what}`);
}

describe('PanelModel', () => {
  it('resumes a dropped reply from its last event with after_seq and follow', async () => {
    const paths: string[] = [];
    const transport: Transport = async (path, init) => {
      paths.push(`${init.method} ${path}`);
      if (path.startsWith('v1/sessions?')) {
        return json({ sessions: [SESSION], next_cursor: null });
      }
      if (path.startsWith('v1/agents') || path.startsWith('v1/providers') || path.startsWith('v1/sdks')) {
        return json(EMPTY);
      }
      if (path.startsWith('v1/sessions/ses_1/history')) {
        return json({ view: 'full', messages: [] });
      }
      if (path.startsWith('v1/sessions/ses_1/runs')) {
        return json({ runs: [], next_cursor: null });
      }
      if (path.startsWith('v1/sessions/ses_1/stream')) {
        return hanging(init.signal);
      }
      if (path.startsWith('v1/sessions/ses_1/messages')) {
        // The connection drops after the first delta: no run.final.
        return ndjson([
          { type: 'run.meta', run_id: RUN, seq: 1, session_id: 'ses_1', agent: 'general', model: 'echo', provider: 'fake' },
          { type: 'run.status', run_id: RUN, seq: 2, status: 'running' },
          { type: 'message.completed', run_id: RUN, seq: 3, message: user },
          { type: 'output.text.delta', run_id: RUN, seq: 4, delta: 'hello ' }
        ]);
      }
      if (path.startsWith(`v1/runs/${RUN}/events`)) {
        return ndjson([
          { type: 'output.text.delta', run_id: RUN, seq: 5, delta: 'there' },
          { type: 'message.completed', run_id: RUN, seq: 6, message: answer },
          { type: 'run.status', run_id: RUN, seq: 7, status: 'succeeded' },
          { type: 'run.final', run_id: RUN, seq: 8, run: run({ id: RUN, status: 'succeeded' }) }
        ]);
      }
      return json({ error: { code: 'NOT_FOUND', message: path } }, 404);
    };
    const storage = new MemoryStorage();
    const model = new PanelModel(new AgiClient(transport), storage);
    model.pickProject('work');
    await until(() => model.snapshot.sessionId === 'ses_1', 'the session to be selected');
    expect(await model.send('hi')).toBe(true);
    const snap = model.snapshot;
    expect(paths).toContain(`GET v1/runs/${RUN}/events?project=work&after_seq=4&follow=true`);
    expect(snap.chat.items.map(i => i.key)).toEqual(['msg_u', 'msg_a']);
    expect(snap.chat.runs[RUN]?.status).toBe('succeeded');
    expect(snap.errors).toEqual([]);
    expect(JSON.parse(storage.getItem('agi-jupyter:panel') ?? '{}')).toMatchObject({
      pinnedProject: 'work',
      sessionByProject: { work: 'ses_1' }
    });
    model.dispose();
  });

  it('shows API errors and drops the unsent message', async () => {
    const transport: Transport = async (path, init) => {
      if (path.startsWith('v1/sessions?')) {
        return json({ sessions: [SESSION], next_cursor: null });
      }
      if (path.startsWith('v1/sessions/ses_1/stream')) {
        return hanging(init.signal);
      }
      if (path.includes('/messages')) {
        return json({ error: { code: 'PROVIDER_NOT_CONFIGURED', message: "provider 'openai' is not configured" } }, 400);
      }
      return json(EMPTY);
    };
    const model = new PanelModel(new AgiClient(transport), null);
    model.pickProject('');
    await until(() => model.snapshot.sessionId === 'ses_1', 'the session');
    expect(await model.send('hi')).toBe(false);
    expect(model.snapshot.chat.items).toEqual([]);
    expect(model.snapshot.errors.map(e => e.text)).toContain(
      "provider 'openai' is not configured (PROVIDER_NOT_CONFIGURED)"
    );
    model.dispose();
  });

  it('decides what a run waits on over the approvals route and shows the queued run', async () => {
    const posted: { path: string; body: unknown }[] = [];
    const transport: Transport = async (path, init) => {
      if (path.startsWith('v1/sessions?')) {
        return json({ sessions: [SESSION], next_cursor: null });
      }
      if (path.startsWith('v1/sessions/ses_1/stream')) {
        return hanging(init.signal);
      }
      if (path.startsWith(`v1/runs/${RUN}/approvals`) && init.method === 'POST') {
        posted.push({ path: path.split('?')[0] as string, body: JSON.parse(String(init.body)) });
        if (posted.length > 1) {
          return json({ error: { code: 'NO_PENDING_APPROVAL', message: 'decided meanwhile' } }, 409);
        }
        return json({ run: run({ id: RUN, session_id: 'ses_1', status: 'queued' }), decided: ['call_1'] });
      }
      return json(EMPTY);
    };
    const model = new PanelModel(new AgiClient(transport), null);
    model.pickProject('');
    await until(() => model.snapshot.sessionId === 'ses_1', 'the session');
    await model.decideApproval(RUN, 'deny', 'call_1', 'not now');
    expect(posted).toEqual([
      { path: `v1/runs/${RUN}/approvals`, body: { decision: 'deny', tool_call_id: 'call_1', message: 'not now', door: 'panel' } }
    ]);
    expect(model.snapshot.chat.runs[RUN]?.status).toBe('queued');
    await model.decideApproval(RUN, 'approve');
    expect(model.snapshot.errors).toEqual([]); // a decision taken elsewhere meanwhile is no error
    model.dispose();
  });

  it('follows the active notebook folder unless a folder is picked', () => {
    const model = new PanelModel(new AgiClient(async () => json(EMPTY)), null);
    model.setActivePath('projects/demo/analysis.ipynb');
    expect(model.snapshot).toMatchObject({ project: 'projects/demo', projectSource: 'notebook' });
    model.pickProject('other');
    model.setActivePath('x/y.ipynb');
    expect(model.snapshot).toMatchObject({ project: 'other', projectSource: 'picked' });
    model.pickProject(null);
    expect(model.snapshot).toMatchObject({ project: 'x', projectSource: 'notebook' });
    expect(folderOf('top.ipynb')).toBe('');
    model.dispose();
  });

  it('loads the agent SDKs with the catalogue and creates a session on the chosen one', async () => {
    const sdks = {
      default_sdk: 'native',
      sdks: [
        sdk({ id: 'native', display_name: 'Native' }),
        sdk({ id: 'claude', display_name: 'Claude Agent SDK', available: false, reason: 'pip install claude-agent-sdk' })
      ]
    };
    const created: unknown[] = [];
    const transport: Transport = async (path, init) => {
      if (path.startsWith('v1/sdks')) {
        return json(sdks);
      }
      if (path.startsWith('v1/agents')) {
        return json({ agents: [agent({ name: 'coder', sdk: 'claude' })] });
      }
      if (path === 'v1/sessions' && init.method === 'POST') {
        created.push(JSON.parse(String(init.body)));
        return json({ session: session({ id: 'ses_9', agent: 'coder', sdk: 'claude' }) }, 201);
      }
      if (path.startsWith('v1/sessions/ses_9/stream')) {
        return hanging(init.signal);
      }
      return json(EMPTY);
    };
    const model = new PanelModel(new AgiClient(transport), null);
    await model.start();
    expect(model.snapshot.sdks?.default_sdk).toBe('native');
    expect(model.snapshot.sdks?.sdks.map(s => [s.id, s.available, s.reason])).toEqual([
      ['native', true, null],
      ['claude', false, 'pip install claude-agent-sdk']
    ]);
    expect(model.snapshot.agents).toEqual([expect.objectContaining({ name: 'coder', sdk: 'claude' })]);
    const made = await model.newSession({ agent: 'coder', sdk: 'claude' });
    expect(created).toEqual([{ agent: 'coder', sdk: 'claude' }]);
    expect(made?.sdk).toBe('claude');
    expect(model.snapshot.sessionId).toBe('ses_9');
    expect(model.snapshot.chat.session?.sdk).toBe('claude');
    expect(model.snapshot.errors).toEqual([]);
    model.dispose();
  });

  it("follows the active notebook's own session, unless another is pinned", async () => {
    let listed = [
      session({ id: 'ses_b', notebook_path: 'b.ipynb' }),
      session({ id: 'ses_a', notebook_path: 'work/a.ipynb' }),
      session({ id: 'ses_x' })
    ];
    const transport: Transport = async (path, init) => {
      if (path.startsWith('v1/sessions?')) {
        return json({ sessions: listed, next_cursor: null });
      }
      if (path.includes('/stream')) {
        return hanging(init.signal);
      }
      return json(EMPTY);
    };
    const storage = new MemoryStorage();
    const model = new PanelModel(new AgiClient(transport), storage);
    const shows = async (id: string | null, what: string): Promise<void> =>
      until(() => model.snapshot.sessionId === id && !model.snapshot.historyLoading, what);
    model.setActivePath('work/a.ipynb');
    await shows('ses_a', "a's session (its path relative to the server root)");
    model.setActivePath('work/b.ipynb');
    await shows('ses_b', "b's session (its path relative to the project)");
    model.setActivePath('work/c.ipynb');
    await shows(null, 'no session: c has none yet');
    expect(model.snapshot.pinned).toBe(false);

    await model.chooseSession('ses_x'); // picked by hand: pinned
    expect(model.snapshot.pinned).toBe(true);
    model.setActivePath('work/a.ipynb');
    await new Promise(r => setTimeout(r, 20));
    expect(model.snapshot.sessionId).toBe('ses_x');
    expect(JSON.parse(storage.getItem('agi-jupyter:panel') ?? '{}').pinnedSessionByProject).toEqual({ work: 'ses_x' });

    await model.togglePin(); // unpinned: back to the notebook's session
    await shows('ses_a', "a's session again");
    expect(model.snapshot.pinned).toBe(false);

    // A kernel restart opens a newer session for the notebook: the poll switches to it.
    listed = [session({ id: 'ses_a2', notebook_path: 'a.ipynb', updated_at: '2026-11-23T11:00:00.000Z' }), ...listed];
    await model.refreshSessions(true);
    await shows('ses_a2', 'the newer session of a');
    model.dispose();
  });
});
