/** One queued call: its keys (whatever else it carries, its `send` reads), and how to settle it. */
export interface BatchItem<R> {
  readonly keys: readonly string[];
  resolve(reply: R): void;
  reject(err: unknown): void;
}

/** Queues an item; `barrier` runs a read or a delete in call order with the queued items. */
export interface Batcher<I> {
  (item: I): void;
  /**
   * Runs `fn` (a read, a delete) in call order with the calls queued here, as the memory store
   * does them (a call changes state before it returns): after every call queued before it has
   * settled, and before any call queued after it is sent. With a `key` (an item's first key: its
   * owner) on an ordered batcher, only that key's calls: others go on pipelined. Without one (or
   * on an unordered batcher), every call. A rejected call counts as settled. `holdLater: false`
   * lets later calls go on meanwhile (a long barrier, such as a SCAN of the keyspace, must not
   * stall them): then only the calls before it are ordered.
   */
  barrier<T>(key: string | undefined, fn: () => Promise<T>, holdLater?: boolean): Promise<T>;
}

const nothing = (): void => {};

/**
 * Coalesces calls made in the same turn of the event loop into batches that one script call
 * runs, in call order (per owner across batches, see `tails`). Many concurrent callers then share
 * one round trip and one script start
 * (on a local Redis the per-call overhead of EVALSHA is larger than a ledger step itself), while
 * a lone sequential caller still sends one call per apply with one `setImmediate` of delay.
 * On a cluster, a batch holds the calls of one group only (`groupOf`: their master, node-batch.ts).
 */
export function createBatcher<R, I extends BatchItem<R> = BatchItem<R>>(options: {
  /** Runs one batch; resolves to one reply per item, in order. */
  send(items: readonly I[]): Promise<R[]>;
  /**
   * The group of an item, by its first key (on a cluster, the master of its slot): a batch holds
   * items of one group. Absent: one group.
   */
  groupOf?: ((key: string) => string | number) | undefined;
  /**
   * Keep each owner's call order across batches: a batch holding an owner of a batch still in
   * flight is sent once that one settled (the ledger: call order is part of its contract).
   * Otherwise batches are sent as they are made (pipelined).
   */
  ordered: boolean;
  maxBatch: number;
}): Batcher<I> {
  // Longer than most functions: one closure over the queue, the owners' batches in flight and the
  // barriers, which enqueueing, flushing and barriers share (their ordering is one mechanism).
  let queue: I[] = [];
  let scheduled = false;
  // Per owner (an item's first key), the last batch sent with it. A batch waits for the batches
  // still in flight that hold one of its keys, so one owner's calls run in call order: sent
  // concurrently, a later batch could run first (an earlier one still waiting on its registry
  // SADD, a chunk of the same flush, a NOSCRIPT fallback) and break the window's capacity bound,
  // letting a repeat be applied again. Batches of other owners still go out pipelined.
  const tails = new Map<string, Promise<void>>();
  // Barriers (reads, deletes) are ordered against batches only, never against each other: two
  // reads, or deletes of different keys, do not conflict, and chaining them ran them one at a time.
  // Per owner: the keyed barriers since its last batch, which its next batch waits for.
  const readers = new Map<string, Set<Promise<void>>>();
  // Every batch not settled yet: what a barrier on every key waits for.
  const batches = new Set<Promise<void>>();
  // Barriers on every key still running: every batch sent after one waits for it.
  const gates = new Set<Promise<void>>();

  const run = (items: I[]) => {
    let waits: Set<Promise<void>> | undefined;
    for (const gate of gates) (waits ??= new Set()).add(gate);
    if (options.ordered) {
      for (const item of items) {
        const key = item.keys[0] as string;
        const tail = tails.get(key);
        if (tail !== undefined) (waits ??= new Set()).add(tail);
        if (readers.size > 0) {
          const reads = readers.get(key);
          if (reads !== undefined) {
            for (const read of reads) (waits ??= new Set()).add(read);
            readers.delete(key); // held back by this batch now: later barriers wait for it
          }
        }
      }
    }
    const sent =
      waits === undefined ? options.send(items) : Promise.all(waits).then(() => options.send(items));
    const done = sent.then(
      (replies) => {
        for (const [i, item] of items.entries()) item.resolve(replies[i] as R);
      },
      (err: unknown) => {
        for (const item of items) item.reject(err);
      },
    );
    batches.add(done);
    void done.then(() => batches.delete(done));
    if (!options.ordered) return;
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
    if (items.length === 0) return; // flushed early by a barrier
    queue = [];
    const groups = options.groupOf === undefined ? [items] : groupBy(items, options.groupOf);
    for (const group of groups) {
      if (!options.ordered) {
        for (let i = 0; i < group.length; i += options.maxBatch) run(group.slice(i, i + options.maxBatch));
        continue;
      }
      // Ordered: at most one call per owner in a batch (a later call of the owner goes to a later
      // batch, which waits for this one). A batch that runs twice (a client re-sending a command
      // whose reply was lost in a reconnect) then finds each of its signatures newest in its
      // owner's window and answers `duplicate`: nothing is applied twice, whatever the capacity.
      // An owner's n-th call of the flush goes to layer n, and layers are sent in order: the
      // batches are as few as the busiest owner's calls (where cutting the queue at each owner met
      // twice would make one batch per owner of a turn in which each owner applies then repeats).
      const layers: I[][][] = [];
      const calls = new Map<string, number>();
      for (const item of group) {
        const owner = item.keys[0] as string;
        const n = calls.get(owner) ?? 0;
        calls.set(owner, n + 1);
        let batches = layers[n];
        if (batches === undefined) layers.push((batches = [[]]));
        let last = batches[batches.length - 1] as I[];
        if (last.length === options.maxBatch) batches.push((last = []));
        last.push(item);
      }
      for (const batches of layers) for (const batch of batches) run(batch);
    }
  };

  const batcher = ((item: I) => {
    queue.push(item);
    if (!scheduled) {
      scheduled = true;
      setImmediate(flush);
    }
  }) as Batcher<I>;

  batcher.barrier = <T>(key: string | undefined, fn: () => Promise<T>, holdLater = true): Promise<T> => {
    // What was queued before goes out now, as batches this barrier can wait for; what is queued
    // after forms later batches, which wait for the barrier (a reader of their key, or a gate).
    flush();
    const keyed = options.ordered && key !== undefined;
    let before: Promise<void>[] = [];
    if (keyed) {
      const tail = tails.get(key);
      if (tail !== undefined) before.push(tail);
    } else {
      before = [...batches];
    }
    // A synchronous throw of fn becomes a rejection, as any failure of a store call.
    const done =
      before.length === 0 ? new Promise<T>((resolve) => resolve(fn())) : Promise.all(before).then(fn);
    if (!holdLater) return done;
    const settled = done.then(nothing, nothing);
    if (keyed) {
      let reads = readers.get(key);
      if (reads === undefined) readers.set(key, (reads = new Set()));
      const own = reads;
      own.add(settled);
      void settled.then(() => {
        own.delete(settled);
        if (own.size === 0 && readers.get(key) === own) readers.delete(key);
      });
    } else {
      gates.add(settled);
      void settled.then(() => gates.delete(settled));
    }
    return done;
  };
  return batcher;
}

/** `items` grouped by `groupOf` of their first key, in first-seen order within each group. */
export function groupBy<I extends { readonly keys: readonly string[] }>(
  items: readonly I[],
  groupOf: (key: string) => string | number,
): I[][] {
  const groups = new Map<string | number, I[]>();
  for (const item of items) {
    const group = groupOf(item.keys[0] as string);
    const list = groups.get(group);
    if (list === undefined) groups.set(group, [item]);
    else list.push(item);
  }
  return [...groups.values()];
}
