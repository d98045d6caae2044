import { describe, expect, it } from 'vitest';

import {
  NdjsonParser,
  SseParser,
  StreamFormatError,
  eventParser,
  formatOf,
  readEvents,
  sseToEvent,
  type WireEvent
} from '../src/stream';

function bodyOf(chunks: (string | Uint8Array)[]): ReadableStream<Uint8Array> {
  const encoder = new TextEncoder();
  return new ReadableStream<Uint8Array>({
    start(controller) {
      for (const chunk of chunks) {
        controller.enqueue(typeof chunk === 'string' ? encoder.encode(chunk) : chunk);
      }
      controller.close();
    }
  });
}

async function collect(stream: AsyncIterable<WireEvent>): Promise<WireEvent[]> {
  const out: WireEvent[] = [];
  for await (const event of stream) {
    out.push(event);
  }
  return out;
}

const EVENTS = [
  { type: 'run.meta', run_id: 'run_1', seq: 1, model: 'echo' },
  { type: 'output.text.delta', run_id: 'run_1', seq: 2, delta: 'héllo wörld ✓\nline' },
  { type: 'run.final', run_id: 'run_1', seq: 3, run: { id: 'run_1', status: 'succeeded' } }
];

describe('NdjsonParser', () => {
  const text = EVENTS.map(e => JSON.stringify(e)).join('\n') + '\n';

  it('parses whole lines', () => {
    const parser = new NdjsonParser();
    expect([...parser.push(text), ...parser.end()]).toEqual(EVENTS);
  });

  it('gives the same objects whatever the chunk boundaries', () => {
    for (let cut = 0; cut <= text.length; cut++) {
      const parser = new NdjsonParser();
      const got = [...parser.push(text.slice(0, cut)), ...parser.push(text.slice(cut)), ...parser.end()];
      expect(got).toEqual(EVENTS);
    }
  });

  it('skips blank lines, accepts CRLF and a last line without newline', () => {
    const parser = new NdjsonParser();
    const got = parser.push('\r\n{"type":"a"}\r\n\n  \n{"type":"b"}');
    expect(got).toEqual([{ type: 'a' }]);
    expect(parser.end()).toEqual([{ type: 'b' }]);
    expect(parser.end()).toEqual([]);
  });

  it('rejects lines that are not event objects', () => {
    expect(() => new NdjsonParser().push('not json\n')).toThrow(StreamFormatError);
    expect(() => new NdjsonParser().push('[1,2]\n')).toThrow(/object with a "type"/);
    expect(() => new NdjsonParser().push('{"no_type":1}\n')).toThrow(StreamFormatError);
  });
});

describe('SseParser', () => {
  it('dispatches events on blank lines with name, data and id', () => {
    const parser = new SseParser();
    const got = parser.push('event: run.meta\nid: 7\ndata: {"a":1}\n\n: keep-alive\n\nevent: x\ndata: 1\n');
    expect(got).toEqual([{ event: 'run.meta', data: '{"a":1}', id: '7' }]);
    expect(parser.push('\n')).toEqual([{ event: 'x', data: '1', id: '7' }]);
  });

  it('joins data lines, defaults the name, drops events without data', () => {
    const parser = new SseParser();
    const got = parser.push('data: first\ndata:second\n\nevent: empty\n\ndata\n\n');
    expect(got).toEqual([
      { event: 'message', data: 'first\nsecond', id: null },
      { event: 'message', data: '', id: null }
    ]);
  });

  it('handles CR, CRLF split across chunks, and every cut position', () => {
    const text = 'event: a\r\ndata: {"type":"a","n":1}\r\n\r\nevent: b\rdata: {"n":2}\r\r';
    const expected = [
      { event: 'a', data: '{"type":"a","n":1}', id: null },
      { event: 'b', data: '{"n":2}', id: null }
    ];
    for (let cut = 0; cut <= text.length; cut++) {
      const parser = new SseParser();
      const got = [...parser.push(text.slice(0, cut)), ...parser.push(text.slice(cut)), ...parser.end()];
      expect(got, `cut at ${cut}`).toEqual(expected);
    }
  });

  it('dispatches a last event without the closing blank line at the end', () => {
    const parser = new SseParser();
    expect(parser.push('event: a\ndata: {}')).toEqual([]);
    expect(parser.end()).toEqual([{ event: 'a', data: '{}', id: null }]);
  });
});

describe('sseToEvent', () => {
  it("reads the event object of the data (the server's events carry their type)", () => {
    expect(sseToEvent({ event: 'run.meta', data: '{"type":"run.meta"}', id: '1' })).toEqual({ type: 'run.meta' });
  });

  it('rejects data that is not an event object, as the server never sends it', () => {
    expect(() => sseToEvent({ event: 'usage', data: '{"input_tokens":3}', id: null })).toThrow(StreamFormatError);
    expect(() => sseToEvent({ event: 'ping', data: 'hello', id: null })).toThrow(StreamFormatError);
  });
});

describe('formatOf and eventParser', () => {
  it('picks SSE only for text/event-stream', () => {
    expect(formatOf('text/event-stream; charset=utf-8')).toBe('sse');
    expect(formatOf('application/x-ndjson')).toBe('ndjson');
    expect(formatOf(null)).toBe('ndjson');
  });

  it('gives event objects for both formats', () => {
    const sse = eventParser('sse');
    expect(sse.push(': keepalive\n\nevent: run.status\ndata: {"type":"run.status","status":"running"}\n\n')).toEqual([
      { type: 'run.status', status: 'running' }
    ]);
    expect(sse.end()).toEqual([]);
  });
});

describe('readEvents', () => {
  it('decodes UTF-8 split inside a character and yields every event', async () => {
    const bytes = new TextEncoder().encode(EVENTS.map(e => JSON.stringify(e)).join('\n'));
    const at = bytes.indexOf(0xc3) + 1; // inside the two bytes of "é"
    const got = await collect(readEvents(bodyOf([bytes.slice(0, at), bytes.slice(at)]), 'ndjson'));
    expect(got).toEqual(EVENTS);
  });

  it('reads SSE bodies', async () => {
    const chunks = EVENTS.map(e => `event: ${e.type}\ndata: ${JSON.stringify(e)}\n\n`);
    const got = await collect(readEvents(bodyOf([': hi\n\n', ...chunks]), 'sse'));
    expect(got).toEqual(EVENTS);
  });

  it('stops reading when the consumer breaks out', async () => {
    let cancelled = false;
    const body = new ReadableStream<Uint8Array>({
      pull(controller) {
        controller.enqueue(new TextEncoder().encode('{"type":"tick"}\n'));
      },
      cancel() {
        cancelled = true;
      }
    });
    let count = 0;
    for await (const event of readEvents(body, 'ndjson')) {
      expect(event.type).toBe('tick');
      if (++count === 3) {
        break;
      }
    }
    expect(cancelled).toBe(true);
  });

  it('surfaces a malformed line as an error', async () => {
    await expect(collect(readEvents(bodyOf(['{"type":"a"}\n', 'oops\n']), 'ndjson'))).rejects.toThrow(
      StreamFormatError
    );
  });
});
