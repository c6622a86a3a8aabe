import { keySlot } from './slot.js';

/** One queued call: its keys (whatever else it carries, its `send` reads), and how to settle it. */
export interface BatchItem<R> {
  readonly keys: readonly string[];
  resolve(reply: R): void;
  reject(err: unknown): void;
}

/**
 * Coalesces calls made in the same turn of the event loop into batches that one script call
 * runs, in call order (per owner across batches, see `tails`). Many concurrent callers then share
 * one round trip and one script start
 * (on a local Redis the per-call overhead of EVALSHA is larger than a ledger step itself), while
 * a lone sequential caller still sends one call per apply with one `setImmediate` of delay.
 * On a cluster, a batch holds the calls of one hash slot only.
 */
/** Queues an item; `settled` waits out what was queued before it (see {@link createBatcher}). */
export interface Batcher<I> {
  (item: I): void;
  /**
   * Resolves once every call queued so far for `key` (an item's first key: its owner), or for
   * every key when omitted, has settled (a rejected call counts as settled; unordered batchers
   * keep no per-key record and wait for every batch). A read or delete sent after it sees those
   * calls' writes, as it would in the memory store, where a call changes state before it returns.
   */
  settled(key?: string): Promise<void>;
}

const settledNow: Promise<void> = Promise.resolve();
const nothing = (): void => {};

export function createBatcher<R, I extends BatchItem<R> = BatchItem<R>>(options: {
  /** Runs one batch; resolves to one reply per item, in order. */
  send(items: readonly I[]): Promise<R[]>;
  /** Group by cluster slot of each item's first key. */
  bySlot: boolean;
  /**
   * Keep each owner's call order across batches: a batch holding an owner of a batch still in
   * flight is sent once that one settled (the ledger: call order is part of its contract).
   * Otherwise batches are sent as they are made (pipelined).
   */
  ordered: boolean;
  maxBatch: number;
}): Batcher<I> {
  let queue: I[] = [];
  let scheduled = false;
  // Reads waiting for the queued calls to be sent (then for their batches to settle).
  let flushWaiters: (() => void)[] = [];
  // Unordered: the batches in flight (a set of at most a few: one entry per batch, not per call).
  const unorderedInFlight = new Set<Promise<void>>();
  // Per owner (an item's first key), the last batch sent with it. A batch waits for the batches
  // still in flight that hold one of its keys, so one owner's calls run in call order: sent
  // concurrently, a later batch could run first (an earlier one still waiting on its registry
  // SADD, a chunk of the same flush, a NOSCRIPT fallback) and break the window's capacity bound,
  // letting a repeat be applied again. Batches of other owners still go out pipelined.
  const tails = new Map<string, Promise<void>>();

  const run = (items: I[]) => {
    let previous: Promise<unknown> | undefined;
    if (options.ordered) {
      const waits = new Set<Promise<void>>();
      for (const item of items) {
        const tail = tails.get(item.keys[0] as string);
        if (tail !== undefined) waits.add(tail);
      }
      if (waits.size > 0) previous = Promise.all(waits);
    }
    const sent = previous === undefined ? options.send(items) : previous.then(() => options.send(items));
    const done = sent.then(
      (replies) => {
        for (const [i, item] of items.entries()) item.resolve(replies[i] as R);
      },
      (err: unknown) => {
        for (const item of items) item.reject(err);
      },
    );
    if (!options.ordered) {
      unorderedInFlight.add(done);
      void done.then(() => unorderedInFlight.delete(done));
      return;
    }
    for (const item of items) tails.set(item.keys[0] as string, done);
    void done.then(() => {
      for (const item of items) {
        const key = item.keys[0] as string;
        if (tails.get(key) === done) tails.delete(key);
      }
    });
  };

  const flush = () => {
    scheduled = false;
    const items = queue;
    queue = [];
    const groups = options.bySlot ? groupBySlot(items) : [items];
    for (const group of groups) {
      if (!options.ordered) {
        for (let i = 0; i < group.length; i += options.maxBatch) run(group.slice(i, i + options.maxBatch));
        continue;
      }
      // Ordered: at most one call per owner in a batch (a later call of the owner goes to a later
      // batch, which waits for this one). A batch that runs twice (a client re-sending a command
      // whose reply was lost in a reconnect) then finds each of its signatures newest in its
      // owner's window and answers `duplicate`: nothing is applied twice, whatever the capacity.
      let batch: I[] = [];
      let owners = new Set<string>();
      for (const item of group) {
        const owner = item.keys[0] as string;
        if (batch.length === options.maxBatch || owners.has(owner)) {
          run(batch);
          batch = [];
          owners = new Set();
        }
        batch.push(item);
        owners.add(owner);
      }
      if (batch.length > 0) run(batch);
    }
    if (flushWaiters.length > 0) {
      const waiters = flushWaiters;
      flushWaiters = [];
      for (const wake of waiters) wake();
    }
  };

  // Every batch a key (or any key) has in flight or waiting on another: `tails` holds the last one
  // per key, and a key's batches settle in order, so its tail settles last. `done` never rejects.
  const inFlight = (key: string | undefined): Promise<void> => {
    if (!options.ordered) {
      return unorderedInFlight.size === 0 ? settledNow : Promise.all(unorderedInFlight).then(nothing);
    }
    if (key !== undefined) return tails.get(key) ?? settledNow;
    if (tails.size === 0) return settledNow;
    return Promise.all(new Set(tails.values())).then(nothing);
  };

  const batcher = ((item: I) => {
    queue.push(item);
    if (!scheduled) {
      scheduled = true;
      setImmediate(flush);
    }
  }) as Batcher<I>;
  batcher.settled = (key) => {
    if (!scheduled) return inFlight(key);
    return new Promise<void>((wake) => flushWaiters.push(wake)).then(() => inFlight(key));
  };
  return batcher;
}

function groupBySlot<I extends { keys: readonly string[] }>(items: I[]): I[][] {
  const groups = new Map<number, I[]>();
  for (const item of items) {
    const slot = keySlot(item.keys[0] as string);
    let group = groups.get(slot);
    if (!group) groups.set(slot, (group = []));
    group.push(item);
  }
  return [...groups.values()];
}
