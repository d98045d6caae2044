import { describe, expect, it } from 'vitest';

import { AgiClient, ApiError, errorText, queryString, toApiError, type Transport } from '../src/api';
import type { AgiEvent } from '../src/types';
import { toAgents, toPage, toProviders, toSdks, unwrap } from '../src/wire';

interface Call {
  path: string;
  init: RequestInit;
}

function fakeTransport(respond: (call: Call) => Response): { transport: Transport; calls: Call[] } {
  const calls: Call[] = [];
  const transport: Transport = async (path, init) => {
    const call = { path, init };
    calls.push(call);
    return respond(call);
  };
  return { transport, calls };
}

function json(body: unknown, status = 200): Response {
  return new Response(JSON.stringify(body), { status, headers: { 'Content-Type': 'application/json' } });
}

describe('AgiClient', () => {
  it('sends the project and unwraps response objects', async () => {
    const { transport, calls } = fakeTransport(() => json({ session: { id: 'ses_1', agent: 'build' } }, 201));
    const client = new AgiClient(transport);
    const session = await client.createSession('notebooks/a b', { agent: 'build', model: '', title: undefined });
    expect(session).toEqual({ id: 'ses_1', agent: 'build' });
    expect(calls[0]?.path).toBe('v1/sessions?project=notebooks%2Fa+b');
    expect(calls[0]?.init.method).toBe('POST');
    expect(JSON.parse(String(calls[0]?.init.body))).toEqual({ agent: 'build' });
  });

  it('leaves the project out for the server root and reads pages', async () => {
    const { transport, calls } = fakeTransport(() => json({ sessions: [{ id: 's1' }], next_cursor: 'c2' }));
    const page = await new AgiClient(transport).listSessions('');
    expect(calls[0]?.path).toBe('v1/sessions?page_size=100');
    expect(page).toEqual({ items: [{ id: 's1' }], next_cursor: 'c2' });
  });

  it('streams a reply as NDJSON and posts the content', async () => {
    const lines = [
      { type: 'run.meta', run_id: 'r', seq: 1 },
      { type: 'run.final', run_id: 'r', seq: 2, run: {} }
    ];
    const { transport, calls } = fakeTransport(
      () =>
        new Response(lines.map(l => JSON.stringify(l)).join('\n') + '\n', {
          headers: { 'Content-Type': 'application/x-ndjson' }
        })
    );
    const got: AgiEvent[] = [];
    for await (const event of new AgiClient(transport).sendMessage('', 'ses_1', 'hello')) {
      got.push(event);
    }
    expect(got).toEqual(lines);
    expect(calls[0]?.path).toBe('v1/sessions/ses_1/messages');
    expect((calls[0]?.init.headers as Record<string, string>).Accept).toBe('application/x-ndjson');
    expect(JSON.parse(String(calls[0]?.init.body))).toEqual({ content: 'hello' });
  });

  it('reads SSE when the server answers with an event stream', async () => {
    const { transport, calls } = fakeTransport(
      () =>
        new Response('event: run.status\ndata: {"run_id":"r","seq":3,"status":"running"}\n\n', {
          headers: { 'Content-Type': 'text/event-stream' }
        })
    );
    const got: AgiEvent[] = [];
    for await (const event of new AgiClient(transport).runEvents('p', 'run_1', 7, true)) {
      got.push(event);
    }
    expect(got).toEqual([{ type: 'run.status', run_id: 'r', seq: 3, status: 'running' }]);
    expect(calls[0]?.path).toBe('v1/runs/run_1/events?project=p&after_seq=7&follow=true');
  });

  it('lists the agent SDKs of the project', async () => {
    const body = {
      default_sdk: 'native',
      sdks: [
        {
          id: 'native',
          display_name: 'Native',
          capabilities: { queue_while_streaming: false, interrupt: true, tool_events: true, full_history: true },
          available: true,
          reason: null
        },
        {
          id: 'codex',
          display_name: 'OpenAI Codex',
          capabilities: { queue_while_streaming: false, interrupt: true, tool_events: true, full_history: false },
          available: false,
          reason: 'install it: npm install -g @openai/codex'
        }
      ]
    };
    const { transport, calls } = fakeTransport(() => json(body));
    const catalogue = await new AgiClient(transport).sdks('work');
    expect(calls[0]?.path).toBe('v1/sdks?project=work');
    expect(calls[0]?.init.method).toBe('GET');
    expect(catalogue).toEqual({ defaultSdk: 'native', sdks: body.sdks });
  });

  it('sends the sdk of a new session', async () => {
    const { transport, calls } = fakeTransport(() => json({ session: { id: 'ses_2', agent: 'build', sdk: 'claude' } }, 201));
    const session = await new AgiClient(transport).createSession('', { agent: 'build', sdk: 'claude' });
    expect(session.sdk).toBe('claude');
    expect(JSON.parse(String(calls[0]?.init.body))).toEqual({ agent: 'build', sdk: 'claude' });
  });

  it('throws ApiError with the server code and message', async () => {
    const { transport } = fakeTransport(() =>
      json({ error: { code: 'PROVIDER_NOT_CONFIGURED', message: "provider 'openai' is not configured" } }, 400)
    );
    const error = await new AgiClient(transport).sendMessage('', 's', 'x').next().catch(e => e);
    expect(error).toBeInstanceOf(ApiError);
    expect(error).toMatchObject({ status: 400, code: 'PROVIDER_NOT_CONFIGURED' });
    expect(errorText(error)).toBe("provider 'openai' is not configured (PROVIDER_NOT_CONFIGURED)");
  });
});

describe('toApiError', () => {
  it('reads Jupyter errors, validation details, HTML and empty bodies', async () => {
    expect((await toApiError(json({ message: 'Forbidden', reason: null }, 403))).message).toBe('Forbidden');
    const validation = await toApiError(
      json({ error: { code: 'VALIDATION_ERROR', message: 'invalid body', details: [{ loc: ['body', 'content'], msg: 'Field required' }] } }, 400)
    );
    expect(validation.readable).toBe('invalid body: body.content: Field required (VALIDATION_ERROR)');
    const html = await toApiError(new Response('<html>oops</html>', { status: 502, statusText: 'Bad Gateway' }));
    expect(html.message).toBe('502 Bad Gateway');
    expect((await toApiError(new Response('', { status: 500 }))).message).toMatch(/^500/);
    expect(errorText(new TypeError('Failed to fetch'))).toBe('Failed to fetch');
  });
});

describe('normalisers', () => {
  it('queryString skips empty values', () => {
    expect(queryString({ a: '', b: undefined, c: null, d: 0, e: false, f: 'x y' })).toBe('?d=0&e=false&f=x+y');
    expect(queryString({})).toBe('');
  });

  it('toPage and unwrap accept the usual shapes', () => {
    expect(toPage([1], 'x').items).toEqual([1]);
    expect(toPage({ items: [2] }, 'x').items).toEqual([2]);
    expect(toPage({ runs: [3], next_cursor: null }, 'runs')).toEqual({ items: [3], next_cursor: null });
    expect(toPage('nope', 'x').items).toEqual([]);
    expect(unwrap({ run: { id: 'r' } }, 'run')).toEqual({ id: 'r' });
    expect(unwrap({ id: 'r' }, 'run')).toEqual({ id: 'r' });
  });

  it('toAgents reads the server list and a mapping', () => {
    const listed = toAgents({ agents: [{ name: 'plan', description: 'read-only', tools: ['fs.read'], read_only: true, model: null, source: 'builtin' }] });
    expect(listed).toEqual([{ name: 'plan', description: 'read-only', model: null, tools: ['fs.read'], sdk: null }]);
    expect(toAgents({ agents: [{ name: 'coder', sdk: 'claude' }] })[0]?.sdk).toBe('claude');
    expect(toAgents({ build: { description: 'd' } }).map(a => a.name)).toEqual(['build']);
  });

  it('toProviders qualifies model ids and keeps configured flags', () => {
    const catalogue = toProviders({
      default_model: 'fake:echo',
      providers: [
        { name: 'openai', label: 'OpenAI', configured: false, enabled: true, default_model: 'gpt-5-mini' },
        { name: 'fake', label: 'Fake', configured: true, default_model: 'fake:echo', models: ['echo', { id: 'slow' }] },
        { name: 'ollama', configured: true, default_model: null }
      ]
    });
    expect(catalogue.defaultModel).toBe('fake:echo');
    expect(catalogue.providers.map(p => [p.name, p.configured, p.models.map(m => m.id)])).toEqual([
      ['openai', false, ['openai:gpt-5-mini']],
      ['fake', true, ['fake:echo', 'fake:slow']],
      ['ollama', true, []]
    ]);
  });

  it('toSdks fills in what an SDK entry leaves out and defaults to native', () => {
    const catalogue = toSdks({ sdks: [{ id: 'claude', available: false }, { display_name: 'no id' }, 'junk'] });
    expect(catalogue).toEqual({
      defaultSdk: 'native',
      sdks: [
        {
          id: 'claude',
          display_name: 'claude',
          capabilities: { queue_while_streaming: false, interrupt: false, tool_events: false, full_history: false },
          available: false,
          reason: null
        }
      ]
    });
    expect(toSdks({ default_sdk: 'codex', sdks: [] }).defaultSdk).toBe('codex');
    expect(toSdks(null)).toEqual({ defaultSdk: 'native', sdks: [] });
  });
});

describe('AgiClient notebook calls', () => {
  it('sends where the user is with a message, and reads changes and undo results', async () => {
    const { transport, calls } = fakeTransport(call => {
      if (call.path.includes('/changes')) {
        return json({ changes: [{ id: 'chg_1', kind: 'notebook', path: 'a.ipynb' }] });
      }
      if (call.path.includes('/undo')) {
        return json({ run_id: 'run_1', notebooks: [{ path: 'a.ipynb', status: 'restored', backend: 'tab', forced: true }] });
      }
      return new Response('', { headers: { 'Content-Type': 'application/x-ndjson' } });
    });
    const client = new AgiClient(transport);
    for await (const _event of client.sendMessage('p', 'ses_1', 'hi', undefined, { notebook_path: 'p/a.ipynb', cell_id: 'c1' })) {
      // no events
    }
    expect(JSON.parse(String(calls[0]?.init.body))).toEqual({ content: 'hi', notebook_path: 'p/a.ipynb', cell_id: 'c1' });
    expect(await client.runChanges('p', 'run_1')).toEqual([{ id: 'chg_1', kind: 'notebook', path: 'a.ipynb' }]);
    expect(calls[1]?.path).toBe('v1/runs/run_1/changes?project=p');
    const undone = await client.undoRun('p', 'run_1', true);
    expect(undone.notebooks[0]?.forced).toBe(true);
    expect(calls[2]?.path).toBe('v1/runs/run_1/undo?project=p');
    expect(JSON.parse(String(calls[2]?.init.body))).toEqual({ force: true });
  });

  it('turns an undo refusal into an ApiError with its code', async () => {
    const { transport } = fakeTransport(() =>
      json({ error: { code: 'UNDO_CONFLICT', message: 'cannot undo run r: cell c1 edited' } }, 409)
    );
    await expect(new AgiClient(transport).undoRun('', 'r')).rejects.toMatchObject({ code: 'UNDO_CONFLICT', status: 409 });
  });
});
