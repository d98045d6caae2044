import { describe, expect, it } from 'vitest';

import { changeTurns } from '../src/undo';

describe('the turns of a run offered for undo', () => {
  it('lists the distinct turns of its changes in order', () => {
    expect(changeTurns([{ turn: 3 }, { turn: 1 }, { turn: 3 }, { turn: 2 }])).toEqual([1, 2, 3]);
  });

  it('offers none when a change has no turn (only the whole run can be undone)', () => {
    expect(changeTurns([{ turn: 1 }, { turn: null }])).toEqual([]);
    expect(changeTurns([])).toEqual([]);
  });
});
