// What a demo run must undo when it is interrupted (Ctrl-C's SIGINT, a supervisor's SIGTERM):
// remove the state it wrote (the run's Redis keys, its PostgreSQL schema), as a finished run does,
// and exit 130 or 143. The run registers an undo while it holds a store and removes it once it let
// go. The signal handlers are installed only while an undo is registered: with nothing to undo a
// signal ends the process at once.

import { redactUrl } from '../redact-url.js';
import { EXIT_SIGINT, EXIT_SIGTERM } from './exit-code.js';

/** One undo step; it must be safe to run while the run itself is still going (or failing). */
export type Undo = () => Promise<void>;

const undos = new Set<Undo>();
let interrupted: NodeJS.Signals | undefined;
let notice: () => void = () => {};

/**
 * Registers `undo` to run on an interrupt; returns the function that removes it again.
 *
 * Usage (internal to the CLI):
 *
 *     const forget = onInterrupt(async () => { stopWorkers(); await removeKeys(); });
 *     try { ... } finally { forget(); }
 */
export function onInterrupt(undo: Undo): () => void {
  if (undos.size === 0 && interrupted === undefined) {
    process.on('SIGINT', handle);
    process.on('SIGTERM', handle);
  }
  undos.add(undo);
  return () => {
    undos.delete(undo);
    if (undos.size === 0) stopListening();
  };
}

/** Called first on an interrupt (the CLI stops its progress bar there). */
export function beforeInterrupt(fn: () => void): void {
  notice = fn;
}

/** The signal that interrupted the run, if one did: its own ending is then not reported. */
export function interruptedBy(): NodeJS.Signals | undefined {
  return interrupted;
}

function stopListening(): void {
  process.off('SIGINT', handle);
  process.off('SIGTERM', handle);
}

// Runs every registered undo, the latest first (a row registered after another may stand on
// it), each once; a failing one does not keep the others from running. Then exits 128 + the
// signal's number, as a shell reports it. A second signal meanwhile finds no handler (they are
// removed here) and ends the process at once, leaving what is left, as a kill does.
function handle(signal: NodeJS.Signals): void {
  interrupted = signal;
  stopListening();
  notice();
  process.stderr.write(`onceflow demo: ${signal}: removing the run's state\n`);
  const list = [...undos].reverse();
  undos.clear();
  void (async () => {
    for (const undo of list) {
      try {
        await undo();
      } catch (err) {
        const text = err instanceof Error ? err.message : String(err);
        process.stderr.write(`onceflow demo: clean-up failed: ${redactUrl(text)}\n`);
      }
    }
    process.exit(signal === 'SIGINT' ? EXIT_SIGINT : EXIT_SIGTERM);
  })();
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
