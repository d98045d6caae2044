/**
 * Which session the panel shows: a pinned one, else the active notebook's own session (of
 * those whose `notebook_path` names the notebook, the one used last: each kernel start opens a
 * fresh one), else the one last open in the project, else the newest. Pure functions over the
 * session list (the API lists sessions newest first).
 */

import type { Session } from './types';

/** Whether `session` belongs to the notebook at `path` (relative to the server root); its
 * `notebook_path` is relative to its project, which is the notebook's folder or an ancestor. */
export function isNotebookSession(session: Session, path: string): boolean {
  const own = session.notebook_path;
  return !!own && (own === path || path.endsWith(`/${own}`));
}

/** The session of the notebook at `path` used last (a kernel's fresh session after a
 * restart, or one `%agi use` gave the notebook), or null. */
export function notebookSession(sessions: Session[], path: string): Session | null {
  let found: Session | null = null;
  for (const session of sessions) {
    if (isNotebookSession(session, path) && (!found || session.updated_at > found.updated_at)) {
      found = session;
    }
  }
  return found;
}

export interface Choice {
  sessions: Session[];
  pinned: string | null;
  notebookPath: string | null;
  remembered: string | undefined;
}

/** The session to show (null: none yet; sending then starts one). */
export function sessionToShow(choice: Choice): string | null {
  const { sessions, pinned, notebookPath, remembered } = choice;
  if (pinned && sessions.some(s => s.id === pinned)) {
    return pinned;
  }
  if (notebookPath) {
    return notebookSession(sessions, notebookPath)?.id ?? null;
  }
  return (sessions.find(s => s.id === remembered) ?? sessions[0])?.id ?? null;
}
