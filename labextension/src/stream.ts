/**
 * Readers for the two streaming formats of the `/agi/v1` API: NDJSON (one JSON object per
 * line) and Server-Sent Events (`event:` name + `data:` JSON object, blank line between
 * events). Both are incremental: feed text as it arrives, get whole objects back. Pure code
 * with no DOM or JupyterLab imports, so it is unit-tested in node.
 */

import type { AgiEvent } from './types';

/** One JSON object with a `type` as it arrives on the wire; the server sends only the events
 * of its OpenAPI document (`AgiEvent`), which is what `readEvents` yields. */
export type WireEvent = { type: string } & Record<string, unknown>;

/** A line of an NDJSON stream that is not a JSON object. */
export class StreamFormatError extends Error {
  constructor(
    message: string,
    readonly line: string
  ) {
    super(message);
    this.name = 'StreamFormatError';
  }
}

/** Incremental NDJSON parser: `push(text)` returns the objects completed by that text. */
export class NdjsonParser {
  private buffer = '';

  push(text: string): WireEvent[] {
    this.buffer += text;
    const lines = this.buffer.split('\n');
    this.buffer = lines.pop() ?? '';
    return lines.flatMap(line => parseLine(line));
  }

  /** The last line if the stream ended without a trailing newline. */
  end(): WireEvent[] {
    const rest = this.buffer;
    this.buffer = '';
    return parseLine(rest);
  }
}

function parseLine(raw: string): WireEvent[] {
  const line = raw.endsWith('\r') ? raw.slice(0, -1) : raw;
  if (!line.trim()) {
    return [];
  }
  let value: unknown;
  try {
    value = JSON.parse(line);
  } catch {
    throw new StreamFormatError(`not a JSON line: ${line.slice(0, 120)}`, line);
  }
  if (!isObject(value) || typeof value.type !== 'string') {
    throw new StreamFormatError('a stream line must be an object with a "type"', line);
  }
  return [value as WireEvent];
}

/** One dispatched Server-Sent Event. */
export interface SseMessage {
  event: string;
  data: string;
  id: string | null;
}

/**
 * Incremental Server-Sent Events parser following the WHATWG rules that matter here: lines end
 * with LF, CRLF or CR; `:` starts a comment; several `data:` lines join with LF; a blank line
 * dispatches; an event with no data is dropped; the name defaults to `message`.
 */
export class SseParser {
  private buffer = '';
  private pendingCR = false;
  private event = '';
  private data: string[] = [];
  private id: string | null = null;
  private sawData = false;

  push(text: string): SseMessage[] {
    let chunk = text;
    if (this.pendingCR && chunk.startsWith('\n')) {
      chunk = chunk.slice(1);
    }
    this.pendingCR = false;
    this.buffer += chunk;
    const out: SseMessage[] = [];
    const pattern = /\r\n|\r|\n/g;
    let start = 0;
    let match: RegExpExecArray | null;
    while ((match = pattern.exec(this.buffer)) !== null) {
      if (match[0] === '\r' && match.index === this.buffer.length - 1) {
        // A CR at the very end may be the first half of a CRLF split across chunks.
        this.pendingCR = true;
      }
      this.line(this.buffer.slice(start, match.index), out);
      start = match.index + match[0].length;
    }
    this.buffer = this.buffer.slice(start);
    return out;
  }

  /** Dispatch what a stream that ended without a final blank line left pending. */
  end(): SseMessage[] {
    const out: SseMessage[] = [];
    if (this.buffer) {
      this.line(this.buffer, out);
      this.buffer = '';
    }
    this.line('', out);
    return out;
  }

  private line(line: string, out: SseMessage[]): void {
    if (line === '') {
      if (this.sawData) {
        out.push({ event: this.event || 'message', data: this.data.join('\n'), id: this.id });
      }
      this.event = '';
      this.data = [];
      this.sawData = false;
      return;
    }
    if (line.startsWith(':')) {
      return;
    }
    const colon = line.indexOf(':');
    const field = colon < 0 ? line : line.slice(0, colon);
    let value = colon < 0 ? '' : line.slice(colon + 1);
    if (value.startsWith(' ')) {
      value = value.slice(1);
    }
    if (field === 'event') {
      this.event = value;
    } else if (field === 'data') {
      this.data.push(value);
      this.sawData = true;
    } else if (field === 'id' && !value.includes('\0')) {
      this.id = value;
    }
  }
}

/** The event object of an SSE message: its `data`, a JSON object with a `type`. */
export function sseToEvent(message: SseMessage): WireEvent {
  return parseLine(message.data)[0] ?? invalid(message.data);
}

function invalid(data: string): never {
  throw new StreamFormatError('an SSE message must carry a JSON object with a "type"', data);
}

export type StreamFormat = 'ndjson' | 'sse';

/** The format of a response from its Content-Type (NDJSON unless it says event-stream). */
export function formatOf(contentType: string | null): StreamFormat {
  return contentType && contentType.toLowerCase().includes('text/event-stream') ? 'sse' : 'ndjson';
}

/** A parser for either format behind one interface. */
export function eventParser(format: StreamFormat): {
  push(text: string): WireEvent[];
  end(): WireEvent[];
} {
  if (format === 'ndjson') {
    return new NdjsonParser();
  }
  const sse = new SseParser();
  const convert = (messages: SseMessage[]): WireEvent[] => messages.map(sseToEvent);
  return {
    push: (text: string) => convert(sse.push(text)),
    end: () => convert(sse.end())
  };
}

/**
 * The events of a streamed body, decoded as UTF-8 across chunk boundaries. Cancelling the
 * iteration (break, abort) releases the reader.
 */
export async function* readEvents(
  body: ReadableStream<Uint8Array>,
  format: StreamFormat
): AsyncGenerator<AgiEvent, void, undefined> {
  const reader = body.getReader();
  const decoder = new TextDecoder('utf-8');
  const parser = eventParser(format);
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) {
        break;
      }
      yield* parser.push(decoder.decode(value, { stream: true })) as Iterable<AgiEvent>;
    }
    yield* parser.push(decoder.decode()) as Iterable<AgiEvent>;
    yield* parser.end() as Iterable<AgiEvent>;
  } finally {
    try {
      await reader.cancel();
    } catch {
      // the stream is already closed or errored
    }
    reader.releaseLock();
  }
}

export function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
