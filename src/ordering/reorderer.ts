import { type Clock, systemClock } from '../core/clock.js';
import { ClosedError, InvalidOptionError } from '../core/errors.js';
import { isPlainObject, nonEmptyString, positiveInt } from '../core/validate.js';
import type { Store } from '../store/store.js';
import {
  type GapRange,
  type PushResult,
  type Release,
  ReorderBuffer,
  type ReorderBufferOptions,
} from '../windows/reorder-buffer.js';
import { requireOps } from './store-ops.js';

/** Options of {@link createReorderer}. */
export interface ReordererOptions<T> extends ReorderBufferOptions {
  /** Receives every release, in order, one at a time (an async effect is awaited before the next). */
  onRelease: (release: Release<T>) => void | Promise<void>;
  /** Receives every gap range the buffer gave up on (hand them to a compensator). */
  onGap?: (gap: GapRange) => void;
  /**
   * Keeps the buffer's state in a store so a restarted consumer continues where it stopped. A
   * checkpoint is saved after the effects of the releases before it ran, every `every` releases
   * (default 100) and on `checkpoint()` / `close()`. The items must be JSON values.
   */
  checkpoint?: { store: Store; name: string; every?: number };
}

/** A timer-driven reorder buffer: see {@link createReorderer}. */
export interface Reorderer<T> {
  readonly buffer: ReorderBuffer<T>;
  /** Accepts one item; releases go to `onRelease`, gaps to `onGap`. Throws once an effect failed. */
  push(seq: number, item: T): PushResult<T>;
  /** Resolves when every release so far went through `onRelease` (rejects with its error). */
  drained(): Promise<void>;
  /** Saves a checkpoint of the state now, after the effects before it. */
  checkpoint(): Promise<void>;
  /** Stops the timer, waits for the effects, saves a last checkpoint. */
  close(): Promise<void>;
}

// 100 releases per checkpoint: a restart replays at most ~100 events (effects downstream are
// idempotent: a version gate or a ledger), and one store write per 100 events is noise.
const DEFAULT_EVERY = 100;

/**
 * A {@link ReorderBuffer} driven by a clock and a timer: a hole is force-advanced when its gap
 * timeout falls due, without waiting for the next push, and its state can be checkpointed in a
 * store (memory or Redis) so a restarted consumer continues where it stopped.
 *
 * @example
 * ```ts
 * const out = [];
 * const r = await createReorderer({ next: 1, capacity: 100, gapTimeout: '20ms', onRelease: (x) => { out.push(x.seq); } });
 * r.push(2, 'b');
 * r.push(1, 'a');
 * await r.close();
 * out; // [1, 2]
 * ```
 */
export async function createReorderer<T>(options: ReordererOptions<T>): Promise<Reorderer<T>> {
  if (!isPlainObject(options as unknown)) throw new InvalidOptionError('options', 'an object', options);
  const { onRelease, onGap, checkpoint: cp, ...bufferOptions } = options;
  if (typeof onRelease !== 'function') throw new InvalidOptionError('onRelease', 'a function', onRelease);
  if (onGap !== undefined && typeof onGap !== 'function')
    throw new InvalidOptionError('onGap', 'a function', onGap);
  const clock: Clock = bufferOptions.clock ?? systemClock;
  const buffer = new ReorderBuffer<T>({ ...bufferOptions, clock });
  let save: ((snapshot: string) => Promise<void>) | undefined;
  let every = Number.POSITIVE_INFINITY;
  if (cp !== undefined) {
    if (!isPlainObject(cp as unknown)) throw new InvalidOptionError('checkpoint', 'an object', cp);
    const ops = requireOps(cp.store, 'checkpoint.store', 'checkpointSave', 'checkpointLoad');
    const name = nonEmptyString('checkpoint.name', cp.name);
    every = positiveInt('checkpoint.every', cp.every ?? DEFAULT_EVERY);
    const saved = await ops.checkpointLoad(name);
    let revision = 0;
    if (saved !== undefined) {
      buffer.restore(JSON.parse(saved.data));
      revision = saved.revision;
    }
    save = async (snapshot) => {
      // 'stale' means another run saved a newer state: this one is behind and must not win.
      await ops.checkpointSave(name, ++revision, snapshot);
    };
  }

  let chain: Promise<void> = Promise.resolve();
  let failure: { error: unknown } | undefined;
  let sinceCheckpoint = 0;
  let timer: ReturnType<typeof setTimeout> | undefined;
  let closed = false;

  const enqueue = (step: () => void | Promise<void>) => {
    chain = chain.then(step).catch((error: unknown) => {
      failure ??= { error };
    });
  };
  const deliver = (releases: readonly Release<T>[], gaps: readonly GapRange[]) => {
    for (const gap of gaps) onGap?.(gap);
    for (const r of releases) enqueue(() => (failure === undefined ? onRelease(r) : undefined));
    sinceCheckpoint += releases.length;
    if (save !== undefined && sinceCheckpoint >= every) takeCheckpoint();
  };
  const takeCheckpoint = () => {
    sinceCheckpoint = 0;
    // The snapshot is taken now; it is saved only after the effects of every release before it.
    const snapshot = JSON.stringify(buffer.snapshot());
    const s = save;
    if (s !== undefined) enqueue(() => (failure === undefined ? s(snapshot) : undefined));
  };
  const arm = () => {
    if (timer !== undefined) clearTimeout(timer);
    timer = undefined;
    const deadline = buffer.deadline;
    if (deadline === undefined || closed) return;
    timer = setTimeout(onTimer, Math.max(0, deadline - clock.now()));
    timer.unref?.();
  };
  function onTimer(): void {
    timer = undefined;
    const { released, gaps } = buffer.tick();
    deliver(released, gaps);
    arm();
  }
  const drained = async () => {
    await chain;
    if (failure !== undefined) throw failure.error;
  };

  return {
    buffer,
    push(seq, item) {
      if (closed) throw new ClosedError('reorderer');
      if (failure !== undefined) throw failure.error;
      const result = buffer.push(seq, item);
      deliver(result, result.gaps);
      arm();
      return result;
    },
    drained,
    async checkpoint() {
      takeCheckpoint();
      await drained();
    },
    async close() {
      if (closed) return drained();
      closed = true;
      if (timer !== undefined) clearTimeout(timer);
      takeCheckpoint();
      await drained();
    },
  };
}
