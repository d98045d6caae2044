/**
 * The shapes of `/agi/v1` responses, read leniently: an object or its `{"<key>": ...}`
 * wrapper, pages in the usual forms, and the catalogue listings (agents, providers, SDKs) as
 * the panel's types. A server that adds fields, or wraps a listing differently, still reads.
 */

import type { AgentInfo, ModelInfo, Page, ProviderInfo, SdkInfo } from './types';

export function firstString(...values: unknown[]): string | undefined {
  for (const value of values) {
    if (typeof value === 'string' && value) {
      return value;
    }
  }
  return undefined;
}

export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** The object of a `{"<key>": {...}}` response (or the response itself). */
export function unwrap<T>(json: unknown, key: string): T {
  if (isRecord(json) && isRecord(json[key])) {
    return json[key] as T;
  }
  return json as T;
}

/** A listing as a page: a bare array, `{items}`, `{data}` or `{<key>}`. */
export function toPage<T>(json: unknown, key: string): Page<T> {
  if (Array.isArray(json)) {
    return { items: json as T[], next_cursor: null };
  }
  if (isRecord(json)) {
    const items = json.items ?? json.data ?? json[key];
    if (Array.isArray(items)) {
      const cursor = json.next_cursor ?? json.cursor ?? null;
      return { items: items as T[], next_cursor: typeof cursor === 'string' ? cursor : null };
    }
  }
  return { items: [], next_cursor: null };
}

/** Agents as a list, from a list, `{items}` / `{agents}`, or a name -> agent mapping. */
export function toAgents(json: unknown): AgentInfo[] {
  let items: unknown[] = toPage<unknown>(json, 'agents').items;
  if (!items.length && isRecord(json)) {
    const map = isRecord(json.agents) ? json.agents : json;
    items = Object.entries(map).map(([name, value]) => (isRecord(value) ? { name, ...value } : { name }));
  }
  return items.filter(isRecord).flatMap(item => {
    const name = firstString(item.name, item.id);
    if (!name) {
      return [];
    }
    return [
      {
        name,
        description: firstString(item.description),
        model: firstString(item.model) ?? null,
        tools: Array.isArray(item.tools) ? item.tools.map(String) : undefined,
        sdk: firstString(item.sdk) ?? null
      }
    ];
  });
}

export interface ProviderCatalogue {
  defaultModel: string | null;
  providers: ProviderInfo[];
}

/** `GET /providers`: `{default_model, providers: [{name, label, configured, default_model}]}`.
 * The model choices of a provider are its default model and any listed `models`. */
export function toProviders(json: unknown): ProviderCatalogue {
  const defaultModel = isRecord(json) ? (firstString(json.default_model) ?? null) : null;
  const items: unknown[] = toPage<unknown>(json, 'providers').items;
  const providers = items.filter(isRecord).flatMap((item): ProviderInfo[] => {
    const name = firstString(item.name, item.id);
    if (!name) {
      return [];
    }
    const qualify = (id: string): string => (id.startsWith(`${name}:`) ? id : `${name}:${id}`);
    const ids = [firstString(item.default_model), ...(Array.isArray(item.models) ? item.models : [])]
      .map(m => (typeof m === 'string' ? m : isRecord(m) ? firstString(m.id, m.model, m.name) : undefined))
      .filter((m): m is string => typeof m === 'string' && m.length > 0);
    const models: ModelInfo[] = [...new Set(ids.map(qualify))].map(id => ({ id }));
    return [
      {
        name,
        label: firstString(item.label),
        configured: typeof item.configured === 'boolean' ? item.configured : undefined,
        enabled: typeof item.enabled === 'boolean' ? item.enabled : undefined,
        models
      }
    ];
  });
  return { defaultModel, providers };
}

export interface SdkCatalogue {
  /** The SDK of new sessions whose agent names none (`native` unless configured). */
  defaultSdk: string;
  sdks: SdkInfo[];
}

/** `GET /sdks`: `{default_sdk, sdks: [{id, display_name, capabilities, available, reason}]}`. */
export function toSdks(json: unknown): SdkCatalogue {
  const defaultSdk = (isRecord(json) ? firstString(json.default_sdk) : undefined) ?? 'native';
  const items: unknown[] = toPage<unknown>(json, 'sdks').items;
  const sdks = items.filter(isRecord).flatMap((item): SdkInfo[] => {
    const id = firstString(item.id, item.name);
    if (!id) {
      return [];
    }
    const caps = isRecord(item.capabilities) ? item.capabilities : {};
    return [
      {
        id,
        display_name: firstString(item.display_name, item.label) ?? id,
        capabilities: {
          queue_while_streaming: caps.queue_while_streaming === true,
          interrupt: caps.interrupt === true,
          tool_events: caps.tool_events === true,
          full_history: caps.full_history === true
        },
        available: item.available !== false,
        reason: firstString(item.reason) ?? null
      }
    ];
  });
  return { defaultSdk, sdks };
}
