/**
 * Cells the agent left running (issue 30): a `notebook.run` still waiting for its cells, or one
 * that stopped waiting and answered with an execution handle, goes on in the kernel. The Stop
 * button then offers a choice (Stop / Stop and interrupt), and names what the cancel did to
 * those cells from its answer's `cells`.
 */

import type { ChatState } from './chatstate';
import type { Trans } from './i18n';
import type { ToolBlock } from './items';
import { activeRuns } from './state';
import type { RunningCells } from './types';

/** The tools that follow an execution handle; the last of them tells whether cells still run. */
const CELL_TOOLS = new Set(['notebook.run', 'notebook.wait', 'notebook.interrupt']);
/** How `notebook.run` / `notebook.wait` start an answer given while the cells go on. */
const STILL_RUNNING = 'still running after';

/** Whether an active run of the session may have cells running in a kernel: its last
 * `notebook.run` / `notebook.wait` / `notebook.interrupt` call is running, or answered that
 * the cells go on. */
export function mayHaveCellsRunning(chat: ChatState): boolean {
  const active = new Set(activeRuns(chat).map(r => r.id));
  const last = new Map<string, ToolBlock>();
  for (const item of chat.items) {
    if (item.runId === null || !active.has(item.runId)) {
      continue;
    }
    for (const block of item.blocks) {
      if (block.kind === 'tool' && CELL_TOOLS.has(block.name)) {
        last.set(item.runId, block);
      }
    }
  }
  return [...last.values()].some(
    b => b.status === 'running' || b.status === 'streaming' || (b.output ?? '').startsWith(STILL_RUNNING)
  );
}

/** What a cancel did to the cells its runs left running, one line ("" when there were none):
 * "left running: cell load (a.ipynb)" or "interrupted: cell load (a.ipynb)". */
export function cellsNote(cells: RunningCells[], trans: Trans): string {
  const named = (c: RunningCells): string =>
    c.cell_id ? trans.__('cell %1 (%2)', c.cell_id, c.path) : trans.__('cells of %1', c.path);
  const interrupted = cells.filter(c => c.interrupted).map(named);
  const left = cells.filter(c => !c.interrupted).map(named);
  const parts = [];
  if (interrupted.length) {
    parts.push(trans.__('interrupted: %1', interrupted.join(', ')));
  }
  if (left.length) {
    parts.push(trans.__('left running: %1', left.join(', ')));
  }
  return parts.join('; ');
}
