import { describe, expect, it } from 'vitest';

import { editPrompt, errorOf, fixPrompt, tracebackText } from '../src/cellprompts';

const ESC = String.fromCharCode(27);

describe('cell actions', () => {
  it('finds the error output and gives its traceback without colours', () => {
    const error = { output_type: 'error', ename: 'KeyError', evalue: "'x'", traceback: [`${ESC}[0;31mKeyError${ESC}[0m: 'x'`] };
    expect(errorOf([{ output_type: 'stream' }, error])).toBe(error);
    expect(errorOf([{ output_type: 'stream' }])).toBeNull();
    expect(tracebackText(error)).toBe("KeyError: 'x'\nKeyError: 'x'");
    const prompt = fixPrompt({ id: 'c1', source: "d['x']", error });
    expect(prompt).toContain('Fix cell `c1`');
    expect(prompt).toContain("KeyError: 'x'");
    expect(prompt).toContain('notebook.edit (cell_id c1)');
  });

  it('puts the instruction and the cell in an edit', () => {
    const prompt = editPrompt({ id: 'c2', source: 'x = 1', error: null }, 'use a loop');
    expect(prompt).toContain('Edit cell `c2` of this notebook: use a loop');
    expect(prompt).toContain('x = 1');
  });
});
