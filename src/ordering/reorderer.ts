import { randomUUID } from 'node:crypto';
import { anchoredClock, type Clock, wholeMs } from '../core/clock.js';
import { ClosedError, InvalidOptionError, StoreError } from '../core/errors.js';
import { optionWithinLimit } from '../core/limits.js';
import { timerDelay } from '../core/timer-delay.js';
import { isPlainObject, keysOf, knownKeys, nonEmptyString, positiveInt } from '../core/validate.js';
import { requireOps } from '../store/ordering.js';
import type { Store } from '../store/store.js';
import {
  type GapRange,
  type PushResult,
  type Release,
  ReorderBuffer,
  type ReorderBufferOptions,
  type SavedReorderBuffer,
} from '../windows/reorder-buffer.js';
import { REORDER_BUFFER_OPTIONS } from '../windows/reorder-options.js';

/** Options of {@link createReorderer}. */
export interface ReordererOptions<T> extends ReorderBufferOptions {
  /** Receives every release, in order, one at a time (an async effect is awaited before the next). */
  onRelease: (release: Release<T>) => void | Promise<void>;
  /**
   * Receives every gap range the buffer gave up on (hand them to a compensator); after a restart
   * from a checkpoint, the missing ranges it restored too. If it throws, the releases already
   * due are still delivered, then the run stops with that error (push and drained report it).
   */
  onGap?: (gap: GapRange) => void;
  /**
   * Keeps the buffer's state in a store so a restarted consumer continues where it stopped. A
   * checkpoint is saved after the effects of the releases before it ran, every `every` releases
   * (default 100) and on `checkpoint()` / `close()`. The items must be JSON values. A run whose
   * save is refused as stale (another run saved this name since it loaded) stops with a
   * `StoreError`: it has lost the sequence to a newer consumer.
   */
  checkpoint?: { store: Store; name: string; every?: number };
}

/** A timer-driven reorder buffer: see {@link createReorderer}. */
export interface Reorderer<T> {
  /**
   * The buffer underneath, to read (`next`, `stats()`, `snapshot()`). Push through the reorderer,
   * never through this: what the buffer releases directly never reaches `onRelease`, and is then
   * a `duplicate` for the reorderer.
   */
  readonly buffer: ReorderBuffer<T>;
  /** Accepts one item; releases go to `onRelease`, gaps to `onGap`. Throws once an effect failed. */
  push(seq: number, item: T): PushResult<T>;
  /** {@link push} for an item a compensator re-requested (see `ReorderBuffer.pushRecovered`). */
  pushRecovered(seq: number, item: T): PushResult<T>;
  /** Resolves when every release so far went through `onRelease` (rejects with its error). */
  drained(): Promise<void>;
  /** Saves a checkpoint of the state now, after the effects before it. */
  checkpoint(): Promise<void>;
  /**
   * Stops the timer, waits for the effects, saves a last checkpoint. Items still held behind a
   * hole are not released: a restart from the checkpoint continues with them; without a
   * checkpoint they are only in `buffer` (`buffer.snapshot()`), and are dropped with it.
   */
  close(): Promise<void>;
}

const REORDERER_OPTIONS = [
  ...REORDER_BUFFER_OPTIONS,
  ...keysOf<Omit<ReordererOptions<unknown>, keyof ReorderBufferOptions>>({
    onRelease: true,
    onGap: true,
    checkpoint: true,
  }),
];
const CHECKPOINT_OPTIONS = keysOf<NonNullable<ReordererOptions<unknown>['checkpoint']>>({
  store: true,
  name: true,
  every: true,
});

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
  knownKeys('', options, REORDERER_OPTIONS);
  const { onRelease, onGap, checkpoint: cp, ...bufferOptions } = options;
  if (typeof onRelease !== 'function') throw new InvalidOptionError('onRelease', 'a function', onRelease);
  if (onGap !== undefined && typeof onGap !== 'function')
    throw new InvalidOptionError('onGap', 'a function', onGap);
  // Monotonic by default (see ReorderBufferOptions.clock): the timer waits `deadline - now`.
  const clock: Clock = bufferOptions.clock ?? anchoredClock();
  const buffer = new ReorderBuffer<T>({ ...bufferOptions, clock });
  let save: ((snapshot: string) => Promise<void>) | undefined;
  let every = Number.POSITIVE_INFINITY;
  let restored = false;
  if (cp !== undefined) {
    if (!isPlainObject(cp as unknown)) throw new InvalidOptionError('checkpoint', 'an object', cp);
    knownKeys('checkpoint', cp, CHECKPOINT_OPTIONS);
    const ops = requireOps(cp.store, 'checkpoint.store', 'checkpointSave', 'checkpointLoad');
    const name = optionWithinLimit(
      'checkpoint.name',
      nonEmptyString('checkpoint.name', cp.name),
      'nameBytes',
    );
    every = positiveInt('checkpoint.every', cp.every ?? DEFAULT_EVERY);
    const saved = await ops.checkpointLoad(name);
    let revision = 0;
    if (saved !== undefined) {
      let data: unknown;
      try {
        data = JSON.parse(saved.data);
      } catch (err) {
        // Corrupt store data is the store's failure, typed as such (a raw SyntaxError before).
        throw new StoreError('checkpointLoad', new Error(`checkpoint '${name}' is not JSON`, { cause: err }));
      }
      try {
        buffer.restore(reanchor(snapshotOf(data), clock.now()));
      } catch (err) {
        // JSON of the wrong shape: corrupt store data too (the cause names the field).
        throw new StoreError('checkpointLoad', err);
      }
      revision = saved.revision;
      restored = true;
    }
    // Each run saves under an id of its own: the store answers 'saved' to a save it already holds
    // (the same command re-sent after a lost reply), so two runs that would save the same state at
    // the same revision must still differ.
    const run = randomUUID();
    save = async (snapshot) => {
      // 'stale': another run saved a newer state since this one loaded. This run is behind (it
      // lost its partition, or two consumers share one name): it must stop, not keep saving.
      const data = `{"run":${JSON.stringify(run)},"snapshot":${snapshot}}`;
      if ((await ops.checkpointSave(name, ++revision, data)) === 'stale') {
        throw new StoreError(
          'checkpointSave',
          new Error(`checkpoint '${name}' was saved by another run since this one loaded it: stop this one`),
        );
      }
    };
  }

  let chain: Promise<void> = Promise.resolve();
  let failure: { error: unknown } | undefined;
  let sinceCheckpoint = 0;
  let timer: ReturnType<typeof setTimeout> | undefined;
  let closed = false;
  // The clock failed while arming the timer: the run has failed, and nothing re-arms it.
  let clockFailed = false;

  const enqueue = (step: () => void | Promise<void>) => {
    chain = chain.then(step).catch((error: unknown) => {
      failure ??= { error };
    });
  };
  // A failure of this turn's own work (a hook, the snapshot) is queued behind the effects already
  // queued: they still run, everything after it stops, and push/drained report it.
  const fail = (error: unknown) =>
    enqueue(() => {
      throw error;
    });
  const report = (gaps: readonly GapRange[]) => {
    for (const gap of gaps) {
      try {
        onGap?.(gap);
      } catch (error) {
        fail(error);
      }
    }
  };
  const deliver = (releases: readonly Release<T>[], gaps: readonly GapRange[]) => {
    // Releases first: the buffer has moved past them, so a failing onGap must not lose them.
    for (const r of releases) enqueue(() => (failure === undefined ? onRelease(r) : undefined));
    report(gaps);
    sinceCheckpoint += releases.length;
    if (save !== undefined && sinceCheckpoint >= every) takeCheckpoint();
  };
  const takeCheckpoint = () => {
    sinceCheckpoint = 0;
    if (save === undefined) return; // no checkpoint store: nothing to serialise (items need not be JSON)
    // The snapshot is taken now; it is saved only after the effects of every release before it.
    let snapshot: string;
    try {
      snapshot = JSON.stringify(buffer.snapshot());
    } catch (error) {
      fail(error); // an item that is not JSON
      return;
    }
    const s = save;
    enqueue(() => (failure === undefined ? s(snapshot) : undefined));
  };
  // Never throws (push calls it after the buffer took the item, and a timer must not throw): a
  // clock that fails or reads NaN fails the run instead, and the timer is not armed again (a NaN
  // wait would fire every millisecond until close()).
  const arm = () => {
    if (timer !== undefined) clearTimeout(timer);
    timer = undefined;
    const deadline = buffer.deadline;
    if (deadline === undefined || closed || clockFailed) return;
    try {
      timer = setTimeout(onTimer, timerDelay(deadline - wholeMs(clock.now(), 'clock.now()'))); // a clamped wait fires early and re-arms
      timer.unref?.();
    } catch (error) {
      clockFailed = true;
      fail(error);
    }
  };
  function onTimer(): void {
    timer = undefined;
    try {
      const { released, gaps } = buffer.tick();
      deliver(released, gaps);
    } catch (error) {
      fail(error); // never an uncaught exception in a timer
    }
    arm();
  }
  const drained = async () => {
    await chain;
    if (failure !== undefined) throw failure.error;
  };
  const accept = (seq: number, item: T, recovered: boolean): PushResult<T> => {
    if (closed) throw new ClosedError('reorderer');
    if (failure !== undefined) throw failure.error;
    const result = recovered ? buffer.pushRecovered(seq, item) : buffer.push(seq, item);
    deliver(result, result.gaps);
    arm();
    return result;
  };
  if (restored) {
    // A restarted consumer: the holes it inherited are handed to onGap again (a compensator in
    // this process has not heard of them), and their timeouts run from now on.
    report(buffer.missing());
    arm();
  }

  return {
    buffer,
    push: (seq, item) => accept(seq, item, false),
    pushRecovered: (seq, item) => accept(seq, item, true),
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

/**
 * The snapshot in a saved checkpoint: `{ run, snapshot }`, or a bare snapshot (a checkpoint saved
 * without the run that wrote it, read as it is so that it still loads).
 */
function snapshotOf<T>(data: unknown): SavedReorderBuffer<T> {
  if (isPlainObject(data) && typeof data.run === 'string' && 'snapshot' in data) {
    return data.snapshot as SavedReorderBuffer<T>;
  }
  return data as SavedReorderBuffer<T>;
}

/**
 * A saved state on this process's clock. Times in a checkpoint are readings of the clock of the run
 * that saved it; when this clock reads earlier (a process-relative clock such as
 * `performance.now()`, or a host whose clock is behind), every saved time moves back by the
 * difference, so the holes keep the age they had when saved instead of waiting out the
 * difference (time never moves back inside a buffer). A clock that reads later is left as it is:
 * the time the restart took counts towards the gap timeouts.
 */
function reanchor<T>(saved: SavedReorderBuffer<T>, now: number): SavedReorderBuffer<T> {
  const last = saved?.lastNow;
  if (typeof last !== 'number' || typeof now !== 'number' || !(now < last)) return saved;
  // A malformed save goes to restore() as it is, for its typed error.
  if (!Array.isArray(saved.buffered) || !Array.isArray(saved.missing)) return saved;
  const shift = now - last;
  return {
    ...saved,
    buffered: saved.buffered.map(([seq, item, at]) => [seq, item, at + shift]),
    missing: saved.missing.map(([from, to, openedAt]) => [from, to, openedAt + shift]),
    lastNow: now,
  };
}
