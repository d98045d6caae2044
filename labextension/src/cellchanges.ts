/**
 * The agent's changes to a notebook still to review, per cell (pure: no JupyterLab import).
 *
 * The server lists the changes ended runs made to a notebook that are neither undone nor kept
 * (`GET /changes?path=&to_review=true`). Each cell shows the last of its changes; *Undo* of a
 * cell undoes all of its changes (a run's later change of a cell goes first, so runs are undone
 * latest first), *Keep* keeps them all. Undo is the server's three-way merge: a cell the user
 * changed since is a conflict, left as it is until "Undo anyway".
 */

import type { Change, UndoResult } from './types';

/** One cell with changes to review: the changes in the order they were made. */
export interface CellReview {
  cellId: string;
  /** What the last change did: inserted, edited, deleted, moved, outputs. */
  action: Change['action'];
  changes: Change[];
}

/** The changes of one notebook grouped by cell, in the order the cells were first changed. */
export function reviewsByCell(changes: readonly Change[]): CellReview[] {
  const cells = new Map<string, CellReview>();
  for (const change of changes) {
    if (!change.cell_id) {
      continue;
    }
    const known = cells.get(change.cell_id);
    if (known) {
      known.changes.push(change);
      known.action = change.action;
    } else {
      cells.set(change.cell_id, { cellId: change.cell_id, action: change.action, changes: [change] });
    }
  }
  return [...cells.values()];
}

/** One request per run, with the ids of its changes: for undo the latest run first (its
 * change of a cell sits on top of an earlier run's), for keep in the order they were made. */
export function perRun(changes: readonly Change[], latestFirst: boolean): { runId: string; ids: string[] }[] {
  const runs = new Map<string, string[]>();
  for (const change of changes) {
    const runId = change.run_id ?? '';
    if (runId) {
      runs.set(runId, [...(runs.get(runId) ?? []), change.id]);
    }
  }
  const ordered = [...runs.entries()].map(([runId, ids]) => ({ runId, ids }));
  return latestFirst ? ordered.reverse() : ordered;
}

/** The next cell with changes after `active` in the notebook's order (wrapping around);
 * null when no cell of the notebook has any. */
export function nextChanged(order: readonly string[], changed: ReadonlySet<string>, active: string | null): string | null {
  const start = active === null ? -1 : order.indexOf(active);
  for (let step = 1; step <= order.length; step++) {
    const id = order[(start + step + order.length) % order.length];
    if (id !== undefined && changed.has(id)) {
      return id;
    }
  }
  return null;
}

/** Where a notebook open at `tabPath` (relative to the server root) is for the API: in the
 * panel's project when that holds it, else in its own folder (the project a notebook's runs
 * use unless a folder was picked). */
export function locate(tabPath: string, project: string): { project: string; path: string } {
  const root = project.replace(/\/+$/, '');
  if (!root) {
    return { project: '', path: tabPath };
  }
  if (tabPath.startsWith(`${root}/`)) {
    return { project: root, path: tabPath.slice(root.length + 1) };
  }
  const slash = tabPath.lastIndexOf('/');
  return slash < 0 ? { project: '', path: tabPath } : { project: tabPath.slice(0, slash), path: tabPath.slice(slash + 1) };
}

/** What an undo left as the user has it, readable (null: nothing). */
export function conflictText(results: readonly UndoResult[]): string | null {
  const conflicts = results.flatMap(result => result.conflicts ?? []);
  if (!conflicts.length) {
    return null;
  }
  return `changed since, left as it is: ${conflicts.map(c => c.reason || c.cell_id || c.path).join('; ')}`;
}

/** The label of a cell's changes: "Agent edited this cell", with how many changes. */
export function reviewLabel(review: CellReview): string {
  const what: Record<string, string> = {
    inserted: 'Agent inserted this cell',
    edited: 'Agent edited this cell',
    moved: 'Agent moved this cell',
    outputs: 'Agent ran this cell',
    deleted: 'Agent deleted a cell'
  };
  const label = what[review.action] ?? `Agent changed this cell (${review.action})`;
  return review.changes.length > 1 ? `${label} (${review.changes.length} changes)` : label;
}
