/**
 * What a project offers for a new session, loaded together: its agents, its providers with
 * their model choices (and the default model), and the agent SDKs. A listing that fails to
 * load leaves its part unchanged and is reported; the others still load.
 */

import type { AgiClient } from './api';
import type { Snapshot } from './snapshot';

export type Catalogue = Pick<Snapshot, 'agents' | 'providers' | 'defaultModel' | 'sdks'>;

export interface CatalogueLoad {
  patch: Partial<Catalogue>;
  /** The errors of the listings that failed, in the order agents, providers, SDKs. */
  errors: unknown[];
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
    patch.providers = providers.value.providers;
    patch.defaultModel = providers.value.defaultModel;
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
