import { describe, expect, it } from 'vitest';

import { AgiClient, type Transport } from '../src/api';
import { CompletionSource, languageOf, placeOf, type CompletionChunk } from '../src/completionsource';

interface Call {
  path: string;
  init: RequestInit;
}

function chunk(insertText: string, done: boolean): CompletionChunk {
  const type = done ? 'completion.done' : 'completion.delta';
  return { type, insertText, done, model: done ? 'fake:echo' : null, via: done ? 'chat' : null, usage: null };
}

function ndjson(lines: CompletionChunk[]): Response {
  const body = lines.map(line => JSON.stringify(line) + '\n').join('');
  return new Response(body, { status: 200, headers: { 'Content-Type': 'application/x-ndjson' } });
}

function source(respond: (call: Call) => Response): { source: CompletionSource; calls: Call[] } {
  const calls: Call[] = [];
  const transport: Transport = async (path, init) => {
    calls.push({ path, init });
    return respond({ path, init });
  };
  const made = new CompletionSource(new AgiClient(transport));
  made.settings = { ...made.settings, debounceMs: 0 };
  return { source: made, calls };
}

async function all<T>(items: AsyncGenerator<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const item of items) {
    out.push(item);
  }
  return out;
}

const PLACE = { path: 'work/a.ipynb', language: 'python', prefix: 'def f(x):\n', suffix: '\nprint(f(1))' };

describe('CompletionSource', () => {
  it('sends the prefix, the suffix and the notebook, and streams the insertion', async () => {
    const lines = [chunk('    return', false), chunk('    return x', true)];
    const { source: s, calls } = source(() => ndjson(lines));
    const got = await all(s.complete({ ...PLACE, cellsBefore: [{ cell_type: 'markdown', source: 'Doubles' }] }));
    expect(got.map(line => line.insertText)).toEqual(['    return', '    return x']);
    expect(calls[0]?.path).toBe('v1/completions?project=work');
    expect((calls[0]?.init.headers as Record<string, string>).Accept).toBe('application/x-ndjson');
    expect(JSON.parse(String(calls[0]?.init.body))).toEqual({
      prefix: 'def f(x):\n',
      suffix: '\nprint(f(1))',
      language: 'python',
      path: 'a.ipynb',
      cells_before: [{ cell_type: 'markdown', source: 'Doubles' }]
    });
    expect(s.sent).toBe(1);
  });

  it('supersedes the request in flight: its HTTP request is aborted', async () => {
    const signals: AbortSignal[] = [];
    const { source: s } = source(call => {
      signals.push(call.init.signal as AbortSignal);
      return ndjson([chunk('x', true)]);
    });
    s.settings = { ...s.settings, debounceMs: 50 };
    const first = all(s.complete(PLACE));
    const second = all(s.complete({ ...PLACE, prefix: 'def f(x):\n    ' }));
    expect(await first).toEqual([]); // superseded during its debounce: never sent
    expect((await second).map(line => line.insertText)).toEqual(['x']);
    expect(s.sent).toBe(1);
  });

  it('sends the variables of the attached kernel (names, types, summaries), asked once a while', async () => {
    const items = [{ kind: 'var', ref: 'df', type: 'pandas.DataFrame', detail: 'shape (3, 2); columns price, city' }];
    const { source: s, calls } = source(call =>
      call.path.startsWith('v1/mentions')
        ? new Response(JSON.stringify({ items }), { status: 200, headers: { 'Content-Type': 'application/json' } })
        : ndjson([chunk('x', true)])
    );
    await all(s.complete({ ...PLACE, kernel: true }));
    await all(s.complete({ ...PLACE, kernel: true, prefix: 'def f(x):\n    ' }));
    const asked = calls.filter(c => c.path.startsWith('v1/mentions'));
    expect(asked.map(c => c.path)).toEqual(['v1/mentions?project=work&kind=var&notebook_path=work%2Fa.ipynb&limit=50']);
    const bodies = calls.filter(c => c.path.startsWith('v1/completions')).map(c => JSON.parse(String(c.init.body)));
    expect(bodies.map(b => b.variables)).toEqual([
      [{ name: 'df', type: 'pandas.DataFrame', summary: 'shape (3, 2); columns price, city' }],
      [{ name: 'df', type: 'pandas.DataFrame', summary: 'shape (3, 2); columns price, city' }]
    ]);
    await all(s.complete(PLACE)); // no kernel: no variables
    expect(JSON.parse(String(calls[calls.length - 1]?.init.body)).variables).toBeUndefined();
  });

  it('asks nothing for a language or a notebook that is turned off', async () => {
    const { source: s, calls } = source(() => ndjson([]));
    expect(await all(s.complete({ ...PLACE, language: 'markdown' }))).toEqual([]);
    expect(await all(s.complete({ ...PLACE, off: true }))).toEqual([]);
    s.settings = { ...s.settings, enabled: false };
    expect(await all(s.complete(PLACE))).toEqual([]);
    expect(calls).toEqual([]);
  });
});

describe('placeOf', () => {
  it('splits the text at the cursor and reads the cells around the active one', () => {
    const cell = (id: string, type: string, text: string) => ({ model: { id, type, sharedModel: { getSource: () => text } } });
    const cells = [cell('a', 'markdown', '# Title'), cell('b', 'code', 'x = 1'), cell('c', 'code', 'print(x)')];
    const widget = {
      context: { path: 'n.ipynb' },
      content: { activeCell: cells[1], widgets: cells, model: { getMetadata: () => ({ completion: false }) } }
    };
    const place = placeOf({ text: 'x = 1', offset: 4, mimeType: 'text/x-ipython' }, widget);
    expect(place).toMatchObject({ path: 'n.ipynb', language: 'python', prefix: 'x = ', suffix: '1', cellId: 'b', off: true, kernel: false });
    const attached = placeOf({ text: '', offset: 0, mimeType: 'text/x-ipython' }, { ...widget, sessionContext: { session: { kernel: {} } } });
    expect(attached.kernel).toBe(true);
    expect(place.cellsBefore).toEqual([{ cell_type: 'markdown', source: '# Title' }]);
    expect(place.cellsAfter).toEqual([{ cell_type: 'code', source: 'print(x)' }]);
    expect([languageOf('text/x-sql'), languageOf('text/x-rsrc'), languageOf(undefined)]).toEqual(['sql', 'r', 'python']);
  });
});
