/** What the cell actions (`cellactions.ts`) ask the agent: the cell, its traceback, the
 * instruction. No JupyterLab import (unit-tested). */

const MAX_TRACEBACK_LINES = 40;

export interface ErrorOutput {
  output_type: string;
  ename?: string;
  evalue?: string;
  traceback?: string[];
}
/** What the actions read of the active cell (structural: a notebook panel's active cell). */
export interface ActiveCell {
  id: string;
  source: string;
  error: ErrorOutput | null;
}

/** The error output of a cell's outputs (as `toJSON()` gives them), or null. */
export function errorOf(outputs: readonly ErrorOutput[] | undefined): ErrorOutput | null {
  return outputs?.find(output => output.output_type === 'error') ?? null;
}

const ANSI = new RegExp(String.fromCharCode(27) + '\\[[0-9;]*m', 'g');

/** The traceback as plain text: ANSI colours off, its last lines. */
export function tracebackText(error: ErrorOutput): string {
  const lines = (error.traceback ?? []).join('\n').replace(ANSI, '').split('\n');
  const head = `${error.ename ?? 'Error'}: ${error.evalue ?? ''}`;
  return [...lines.slice(-MAX_TRACEBACK_LINES), head].join('\n').trim();
}

export function explainPrompt(cell: ActiveCell): string {
  return `Explain cell \`${cell.id}\` of this notebook: what it does and why.\n\n\`\`\`python\n${cell.source}\n\`\`\``;
}

export function fixPrompt(cell: ActiveCell): string {
  const traceback = cell.error ? tracebackText(cell.error) : '';
  return (
    `Fix cell \`${cell.id}\` of this notebook. It fails with:\n\n\`\`\`\n${traceback}\n\`\`\`\n\n` +
    `The cell:\n\n\`\`\`python\n${cell.source}\n\`\`\`\n\n` +
    `Change the cell with notebook.edit (cell_id ${cell.id}) and say what was wrong.`
  );
}

export function editPrompt(cell: ActiveCell, instruction: string): string {
  return (
    `Edit cell \`${cell.id}\` of this notebook: ${instruction}\n\n\`\`\`python\n${cell.source}\n\`\`\`\n\n` +
    `Change the cell with notebook.edit (cell_id ${cell.id}).`
  );
}
