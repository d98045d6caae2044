import { YCodeCell } from '@jupyter/ydoc';
import { describe, expect, it } from 'vitest';

import { isProtected, staleText, toggled, toggleProtected } from '../src/cellmarks';
import { bundle } from '../src/i18n';


describe('protected cells', () => {
  it('toggles agi.protected and keeps the other agi keys', () => {
    expect(isProtected({ protected: true })).toBe(true);
    expect(isProtected(undefined)).toBe(false);
    expect(isProtected({ run_id: 'run_1' })).toBe(false);
    expect(toggled(undefined)).toEqual({ protected: true });
    expect(toggled({ protected: true })).toBeUndefined();
    expect(toggled({ protected: true, run_id: 'run_1' })).toEqual({ run_id: 'run_1' });
  });

  it('changes a shared cell\'s metadata, and takes the agi key away when nothing is left', () => {
    const cell = YCodeCell.create();
    cell.setMetadata({ tags: ['setup'], agi: { run_id: 'run_1' } } as never);
    toggleProtected(cell as never);
    expect(cell.getMetadata()).toEqual({ tags: ['setup'], agi: { run_id: 'run_1', protected: true } });
    toggleProtected(cell as never);
    expect(cell.getMetadata()).toEqual({ tags: ['setup'], agi: { run_id: 'run_1' } });
    cell.deleteMetadata('agi');
    toggleProtected(cell as never);
    toggleProtected(cell as never);
    expect(cell.getMetadata()).toEqual({ tags: ['setup'] });
  });
});

describe('stale cells', () => {
  it('says why a cell is stale', () => {
    const trans = bundle();
    expect(staleText({ cell_id: 'a', reason: 'changed', names: [], by_cell_id: null }, trans)).toBe(
      'Stale: changed since it last ran'
    );
    expect(staleText({ cell_id: 'b', reason: 'upstream', names: ['df', 'x'], by_cell_id: 'load' }, trans)).toBe(
      'Stale: df, x re-bound by a later run of cell load'
    );
  });
});
