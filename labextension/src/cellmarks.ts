/**
 * What the notebook's cell markers say, apart from JupyterLab (tested without it): whether a
 * cell is protected and its toggle (`cellprotect.ts`), why a cell is stale (`stalecells.ts`).
 */

import type { Trans } from './i18n';
import type { components } from './openapi';

export type StaleCell = components['schemas']['StaleCell'];

type AgiMetadata = Record<string, unknown>;

/** Whether a cell's `agi` metadata marks it protected. */
export function isProtected(agi: unknown): boolean {
  return typeof agi === 'object' && agi !== null && Boolean((agi as AgiMetadata).protected);
}

/** The cell's `agi` metadata after the toggle: `protected` set or taken away, every other key
 * (the agent's provenance) kept; undefined when nothing is left. */
export function toggled(agi: unknown): AgiMetadata | undefined {
  const current: AgiMetadata = typeof agi === 'object' && agi !== null ? { ...(agi as AgiMetadata) } : {};
  if (isProtected(current)) {
    delete current.protected;
  } else {
    current.protected = true;
  }
  return Object.keys(current).length ? current : undefined;
}

/** What the toggle needs of a cell: its metadata (a cell model, or its shared model). */
export interface CellMetadata {
  getMetadata(key: string): unknown;
  setMetadata(key: string, value: unknown): void;
  deleteMetadata(key: string): void;
}

/** Toggle `agi.protected` on a cell's metadata. */
export function toggleProtected(cell: CellMetadata): void {
  const next = toggled(cell.getMetadata('agi'));
  if (next === undefined) {
    cell.deleteMetadata('agi');
  } else {
    cell.setMetadata('agi', next);
  }
}

/** Why a cell is stale, in words. */
export function staleText(cell: StaleCell, trans: Trans): string {
  if (cell.reason === 'changed') {
    return trans.__('Stale: changed since it last ran');
  }
  const names = (cell.names ?? []).join(', ');
  return trans.__('Stale: %1 re-bound by a later run of cell %2', names, cell.by_cell_id ?? '?');
}

