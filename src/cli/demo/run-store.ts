import { once, onInterrupt } from './interrupt.js';
import { type DemoStore, openStore } from './store.js';

/**
 * A demo run's store with its clean-up tied to interrupts: `open` resolves to the store; `release`
 * removes the run's keys or schema and closes it, once, whoever asks first (the run's end or an
 * interrupt: the other waits for it). An interrupt stops the run first (`stop`, then the promise
 * given to `running`): nothing may write after the clean-up. It waits for the store to be open: an
 * interrupt while PostgreSQL's schema is being made drops it once made (dropped before, the
 * migration would make it again). A store that failed to open removed what it made itself. With
 * the memory store there is nothing to remove, and a signal ends the process at once.
 */
export async function openRunStore(url: string | undefined): Promise<RunStore> {
  const opening = openStore(url);
  const release = once(async () => {
    const opened = await opening.catch(() => undefined);
    if (opened === undefined) return;
    try {
      await opened.cleanup();
    } finally {
      await opened.close();
    }
  });
  const stop = new AbortController();
  let running: Promise<unknown> = Promise.resolve();
  // Registered before the store opens, so no moment of the run is without it.
  const forget =
    url === undefined
      ? () => {}
      : onInterrupt(async () => {
          stop.abort();
          await running.catch(() => {});
          await release();
        });
  let store: DemoStore;
  try {
    store = await opening;
  } catch (err) {
    forget();
    throw err;
  }
  return {
    store,
    signal: stop.signal,
    running(work) {
      running = work;
    },
    release,
    async end() {
      // Forgotten only once released: a Ctrl-C during the clean-up waits for it instead.
      await release();
      forget();
    },
  };
}

export interface RunStore {
  readonly store: DemoStore;
  /** Aborted by an interrupt: the run stops writing. */
  readonly signal: AbortSignal;
  /** The work an interrupt waits for before it cleans up. */
  running(work: Promise<unknown>): void;
  /** Removes the run's keys or schema and closes the store (once). */
  release(): Promise<void>;
  /** `release`, then the interrupt handler forgotten: the run's last step. */
  end(): Promise<void>;
}
