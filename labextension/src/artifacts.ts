/**
 * A session's artifacts for the artifacts tab: collected from the artifact lists of its newest
 * runs, and one artifact opened with its text (from the row, or `/content` for large ones).
 */

import type { AgiClient } from './api';
import type { ArtifactEntry } from './snapshot';
import type { Artifact } from './types';

/** How many of the newest runs are asked for their artifacts. */
const MAX_RUNS = 30;

export interface ArtifactCollection {
  entries: ArtifactEntry[];
  /** The first failed run listing (the others are still collected), or null. */
  error: unknown | null;
}

export async function collectArtifacts(client: AgiClient, project: string, runIds: string[]): Promise<ArtifactCollection> {
  const runs = [...runIds].sort().reverse().slice(0, MAX_RUNS);
  const lists = await Promise.allSettled(runs.map(id => client.runArtifacts(project, id)));
  const entries: ArtifactEntry[] = [];
  lists.forEach((result, index) => {
    if (result.status === 'fulfilled') {
      for (const artifact of result.value) {
        entries.push({ artifact, runId: runs[index] as string });
      }
    }
  });
  const failed = lists.find((r): r is PromiseRejectedResult => r.status === 'rejected');
  return { entries, error: failed ? failed.reason : null };
}

export async function openArtifact(
  client: AgiClient,
  project: string,
  id: string
): Promise<{ artifact: Artifact; text: string | null }> {
  const artifact = await client.getArtifact(project, id);
  let text = typeof artifact.text === 'string' ? artifact.text : null;
  if (text === null && artifact.path) {
    text = await client.artifactContent(project, id);
  }
  return { artifact, text };
}
