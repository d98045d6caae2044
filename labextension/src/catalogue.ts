/**
 * What a project offers for a new session, loaded together: its agents, the model choices of
 * its providers (and the default model), and the agent SDKs. A listing that fails to load
 * leaves its part unchanged and is reported; the others still load.
 */

import type { AgiClient } from './api';
import type { Snapshot } from './snapshot';
import type { ModelChoice, ProviderList } from './types';

export type Catalogue = Pick<Snapshot, 'agents' | 'models' | 'defaultModel' | 'sdks'>;

export interface CatalogueLoad {
  patch: Partial<Catalogue>;
  /** The errors of the listings that failed, in the order agents, providers, SDKs. */
  errors: unknown[];
}

/**
 * The `provider:model` choices of the enabled providers: each one's default model, then the
 * models a local server says it serves (its `/v1/models`), without repeats.
 */
export function modelChoices(list: ProviderList): ModelChoice[] {
  return list.providers
    .filter(p => p.enabled)
    .flatMap(p => {
      const models = [p.default_model, ...(p.served_models ?? [])].filter(
        (model): model is string => !!model
      );
      return [...new Set(models)].map(model => ({
        id: `${p.name}:${model}`,
        provider: p.name,
        label: p.label,
        configured: p.configured
      }));
    });
}

export async function loadCatalogue(client: AgiClient, project: string): Promise<CatalogueLoad> {
  const [agents, providers, sdks] = await Promise.allSettled([
    client.agents(project),
    client.providers(project),
    client.sdks(project)
  ]);
  const patch: Partial<Catalogue> = {};
  const errors: unknown[] = [];
  if (agents.status === 'fulfilled') {
    patch.agents = agents.value;
  } else {
    errors.push(agents.reason);
  }
  if (providers.status === 'fulfilled') {
    patch.models = modelChoices(providers.value);
    patch.defaultModel = providers.value.default_model;
  } else {
    errors.push(providers.reason);
  }
  if (sdks.status === 'fulfilled') {
    patch.sdks = sdks.value;
  } else {
    errors.push(sdks.reason);
  }
  return { patch, errors };
}
