/**
 * Complete API records and events for the unit tests, as the server sends them (every field
 * present, per the OpenAPI document): builders fill what a test does not care about.
 */

import type { WireEvent } from '../src/stream';
import type { AgentInfo, AgiEvent, Message, Part, Run, SdkInfo, Session } from '../src/types';

export function session(fields: Partial<Session> & { id: string }): Session {
  return {
    title: null,
    agent: 'general',
    sdk: 'native',
    provider: 'fake',
    model: 'echo',
    system_prompt: null,
    thinking_level: null,
    queue_mode: 'queue',
    tool_config: {},
    metadata: {},
    notebook_path: null,
    budget: null,
    message_count: 0,
    input_tokens: 0,
    output_tokens: 0,
    cost_usd: 0,
    created_at: '2026-11-23T10:00:00.000Z',
    updated_at: '2026-11-23T10:00:00.000Z',
    cached_input_tokens: 0,
    ...fields
  };
}

export function run(fields: Partial<Run> & { id: string }): Run {
  return {
    session_id: 'ses_1',
    type: 'agent',
    execution_mode: 'foreground_stream',
    status: 'queued',
    provider: 'fake',
    model: 'echo',
    agent: null,
    thinking_level: null,
    system_prompt: null,
    input_message_id: null,
    error: null,
    attempt: 1,
    max_attempts: 4,
    next_attempt_at: null,
    provider_response_id: null,
    last_webhook_event_id: null,
    loop_state: null,
    version: 1,
    owner: null,
    epoch: 0,
    heartbeat_at: null,
    usage: {},
    cost_usd: 0,
    notebook_path: null,
    cell_id: null,
    execution_count: null,
    request_hash: null,
    replayed_from: null,
    started_at: null,
    completed_at: null,
    created_at: '2026-11-23T10:00:00.000Z',
    updated_at: '2026-11-23T10:00:00.000Z',
    ...fields
  };
}

type LooseMessage = Partial<Omit<Message, 'parts'>> & { id: string; role: Message['role']; parts: LoosePart[] };
type LoosePart = { type: Part['type'] } & Record<string, unknown>;

/** A message; parts take the defaults of their type (a tool result: no error, no status). */
export function message(fields: LooseMessage): Message {
  return {
    session_id: 'ses_1',
    run_id: null,
    status: 'complete',
    text: '',
    meta: {},
    created_at: '2026-11-23T10:00:00.000Z',
    updated_at: '2026-11-23T10:00:00.000Z',
    ...fields,
    parts: fields.parts.map(part)
  };
}

function part(loose: LoosePart): Part {
  if (loose.type === 'tool_result') {
    return { is_error: false, artifact_id: null, status: null, ...loose } as Part;
  }
  if (loose.type === 'reasoning') {
    return { signature: null, provider_data: null, ...loose } as Part;
  }
  return loose as Part;
}

/** An event as it arrives: `ts` and the payload's defaulted fields filled in. */
export function wire(event: WireEvent): AgiEvent {
  const defaults: Record<string, unknown> = { run_id: '', seq: 0, ts: '2026-11-23T10:00:00.000Z' };
  if (event.type === 'run.meta') {
    defaults.attempt = 1;
  } else if (event.type === 'tool.call.started') {
    defaults.tool_type = 'function';
  } else if (event.type === 'tool.call.output') {
    defaults.status = 'completed';
    defaults.artifact = null;
  } else if (event.type === 'usage') {
    defaults.cost_usd = null;
  } else if (event.type === 'error') {
    defaults.retryable = false;
  }
  return { ...defaults, ...event } as AgiEvent;
}

export function agent(fields: Partial<AgentInfo> & { name: string }): AgentInfo {
  return { description: '', tools: [], read_only: false, model: null, sdk: null, source: 'builtin', ...fields };
}

export function sdk(fields: Partial<SdkInfo> & { id: string }): SdkInfo {
  return {
    display_name: fields.id,
    capabilities: { queue_while_streaming: false, interrupt: true, tool_events: true, full_history: true },
    available: true,
    reason: null,
    ...fields
  };
}
