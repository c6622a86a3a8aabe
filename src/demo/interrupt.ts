// What a demo run must undo when it is interrupted (Ctrl-C, a SIGTERM from a supervisor): stop the
// worker processes it started, then remove the state it wrote (the run's Redis keys, its
// PostgreSQL schema), as a finished run does. The CLI's signal handler runs these (see main.ts);
// a strategy registers one while it holds anything, and removes it once it let go.

/** One undo step; it must be safe to run while the run itself is still going (or failing). */
export type Undo = () => Promise<void>;

const undos = new Set<Undo>();

/**
 * Registers `undo` to run on an interrupt; returns the function that removes it again.
 *
 * Usage (the demo is internal to the CLI, not public API):
 *
 *     const forget = onInterrupt(async () => { stopWorkers(); await removeKeys(); });
 *     try { ... } finally { forget(); }
 */
export function onInterrupt(undo: Undo): () => void {
  undos.add(undo);
  return () => {
    undos.delete(undo);
  };
}

/**
 * Runs every registered undo, the latest first (a row registered after another may stand on it),
 * each once; a failing one does not keep the others from running. Resolves with the errors.
 */
export async function undoAll(): Promise<unknown[]> {
  const list = [...undos].reverse();
  undos.clear();
  const errors: unknown[] = [];
  for (const undo of list) {
    try {
      await undo();
    } catch (err) {
      errors.push(err);
    }
  }
  return errors;
}

/**
 * A function that runs `fn` once: every later call returns the first call's promise, so two
 * paths that release the same thing (the run's own failure handling and an interrupt) both wait
 * for the one release to finish, and neither returns while it is still under way.
 */
export function once(fn: () => Promise<void>): () => Promise<void> {
  let running: Promise<void> | undefined;
  return () => {
    running ??= fn();
    return running;
  };
}
