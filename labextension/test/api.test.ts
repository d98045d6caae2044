import { describe, expect, it } from 'vitest';

import { AgiClient, ApiError, errorText, queryString, toApiError, type Transport } from '../src/api';
import { modelChoices } from '../src/catalogue';
import type { AgiEvent } from '../src/types';
import { run, session, wire } from './fixtures';

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
  it('sends the project, leaves empty fields out and reads the documented response', async () => {
    const created = session({ id: 'ses_1', agent: 'build' });
    const { transport, calls } = fakeTransport(() => json({ session: created }, 201));
    const client = new AgiClient(transport);
    const got = await client.createSession('notebooks/a b', { agent: 'build', model: '', title: null });
    expect(got).toEqual(created);
    expect(calls[0]?.path).toBe('v1/sessions?project=notebooks%2Fa+b');
    expect(calls[0]?.init.method).toBe('POST');
    expect(JSON.parse(String(calls[0]?.init.body))).toEqual({ agent: 'build' });
  });

  it('leaves the project out for the server root and reads a page', async () => {
    const listed = [session({ id: 's1' })];
    const { transport, calls } = fakeTransport(() => json({ sessions: listed, next_cursor: 'c2' }));
    expect(await new AgiClient(transport).listSessions('')).toEqual(listed);
    expect(calls[0]?.path).toBe('v1/sessions?page_size=100');
  });

  it('fills path parameters, escaped', async () => {
    const { transport, calls } = fakeTransport(() => json({ run: run({ id: 'run/1' }) }));
    await new AgiClient(transport).getRun('p', 'run/1');
    expect(calls[0]?.path).toBe('v1/runs/run%2F1?project=p');
  });

  it('streams a reply as NDJSON and posts the content', async () => {
    const lines = [
      wire({ type: 'run.meta', run_id: 'r', seq: 1, session_id: 's', agent: 'a', provider: 'p', model: 'm' }),
      wire({ type: 'run.final', run_id: 'r', seq: 2, run: run({ id: 'r', status: 'succeeded' }) })
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
    const status = wire({ type: 'run.status', run_id: 'r', seq: 3, status: 'running' });
    const { transport, calls } = fakeTransport(
      () =>
        new Response(`: keepalive\n\nevent: run.status\nid: 3\ndata: ${JSON.stringify(status)}\n\n`, {
          headers: { 'Content-Type': 'text/event-stream' }
        })
    );
    const got: AgiEvent[] = [];
    for await (const event of new AgiClient(transport).runEvents('p', 'run_1', 7, true)) {
      got.push(event);
    }
    expect(got).toEqual([status]);
    expect(calls[0]?.path).toBe('v1/runs/run_1/events?project=p&after_seq=7&follow=true');
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

  it('only type-checks documented routes, parameters and bodies', () => {
    // Compile-time checks (`npm run typecheck`): each line below must stay an error.
    const client = new AgiClient(async () => json({}));
    const never = (): void => {
      // @ts-expect-error: no such route
      void client.request('get', '/agi/v1/nothing', {});
      // @ts-expect-error: the route has no DELETE
      void client.request('delete', '/agi/v1/agents', { query: {} });
      // @ts-expect-error: an undocumented query parameter
      void client.request('get', '/agi/v1/sessions', { query: { project: '', page: 2 } });
      // @ts-expect-error: the path parameter is missing
      void client.request('get', '/agi/v1/runs/{run_id}', { query: {} });
      // @ts-expect-error: a body field the server refuses
      void client.request('post', '/agi/v1/sessions', { query: {}, body: { colour: 'red' } });
    };
    expect(typeof never).toBe('function');
  });
});

describe('toApiError', () => {
  it("reads the API's errors, Jupyter's own, and anything else as the status line", async () => {
    expect((await toApiError(json({ message: 'Forbidden', reason: null }, 403))).message).toBe('Forbidden');
    const validation = await toApiError(json({ error: { code: 'VALIDATION_ERROR', message: 'content: Field required' } }, 400));
    expect(validation.readable).toBe('content: Field required (VALIDATION_ERROR)');
    const html = await toApiError(new Response('<html>oops</html>', { status: 502, statusText: 'Bad Gateway' }));
    expect(html.message).toBe('502 Bad Gateway');
    expect((await toApiError(new Response('', { status: 500 }))).message).toMatch(/^500/);
    expect(errorText(new TypeError('Failed to fetch'))).toBe('Failed to fetch');
  });
});

describe('helpers', () => {
  it('queryString skips empty values', () => {
    expect(queryString({ a: '', b: undefined, c: null, d: 0, e: false, f: 'x y' })).toBe('?d=0&e=false&f=x+y');
    expect(queryString({})).toBe('');
  });

  it("offers each enabled provider's default model, saying which are configured", () => {
    const provider = {
      wire: 'openai-chat',
      base_url: null,
      key_env: [],
      served_models: null,
      served_models_error: null
    };
    const choices = modelChoices({
      default_model: 'fake:echo',
      providers: [
        { ...provider, name: 'openai', label: 'OpenAI', enabled: true, configured: false, default_model: 'gpt-5-mini' },
        { ...provider, name: 'fake', label: 'Fake', enabled: true, configured: true, default_model: 'echo' },
        { ...provider, name: 'ollama', label: 'Ollama', enabled: false, configured: true, default_model: 'llama3' },
        { ...provider, name: 'compat', label: 'Compat', enabled: true, configured: true, default_model: null },
        {
          ...provider,
          name: 'llamacpp',
          label: 'llama.cpp',
          enabled: true,
          configured: true,
          default_model: 'qwen3',
          served_models: ['qwen3', 'gemma3']
        }
      ]
    });
    expect(choices.map(c => [c.id, c.configured])).toEqual([
      ['openai:gpt-5-mini', false],
      ['fake:echo', true],
      ['llamacpp:qwen3', true],
      ['llamacpp:gemma3', true]
    ]);
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
    await client.undoRun('p', 'run_1', false, 3);
    expect(JSON.parse(String(calls[3]?.init.body))).toEqual({ force: false, turn: 3 });
  });

  it('turns an undo refusal into an ApiError with its code', async () => {
    const { transport } = fakeTransport(() =>
      json({ error: { code: 'UNDO_CONFLICT', message: 'cannot undo run r: cell c1 edited' } }, 409)
    );
    await expect(new AgiClient(transport).undoRun('', 'r')).rejects.toMatchObject({ code: 'UNDO_CONFLICT', status: 409 });
  });
});
