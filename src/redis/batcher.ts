import { keySlot } from './slot.js';

/** One queued call: its keys (whatever else it carries, its `send` reads), and how to settle it. */
export interface BatchItem<R> {
  readonly keys: readonly string[];
  resolve(reply: R): void;
  reject(err: unknown): void;
}

/**
 * Coalesces calls made in the same turn of the event loop into batches that one script call
 * runs, in call order, one batch in flight per slot (see `tails`). Many concurrent callers then share one round trip and one script start
 * (on a local Redis the per-call overhead of EVALSHA is larger than a ledger step itself), while
 * a lone sequential caller still sends one call per apply with one `setImmediate` of delay.
 * On a cluster, a batch holds the calls of one hash slot only.
 */
export function createBatcher<R, I extends BatchItem<R> = BatchItem<R>>(options: {
  /** Runs one batch; resolves to one reply per item, in order. */
  send(items: readonly I[]): Promise<R[]>;
  /** Group by cluster slot of each item's first key. */
  bySlot: boolean;
  /**
   * One batch in flight per group, each sent after the previous settled (the ledger: call order is
   * part of its contract). Otherwise batches are sent as they are made (pipelined).
   */
  ordered: boolean;
  maxBatch: number;
}): (item: I) => void {
  let queue: I[] = [];
  let scheduled = false;
  // One batch in flight per group (a cluster slot, or the whole client): the next is sent once the
  // previous has settled. Sent concurrently, a later batch could run first (an earlier one still
  // waiting on its registry SADD, a chunk of the same flush, a NOSCRIPT fallback) and break the
  // per-owner call order the window's capacity bound relies on: a repeat could then be applied
  // again. Calls that arrive meanwhile simply join the next batch.
  const tails = new Map<number, Promise<void>>();

  const run = (group: number, items: I[]) => {
    const previous = options.ordered ? (tails.get(group) ?? Promise.resolve()) : Promise.resolve();
    const done = previous
      .then(() => options.send(items))
      .then(
        (replies) => {
          for (const [i, item] of items.entries()) item.resolve(replies[i] as R);
        },
        (err: unknown) => {
          for (const item of items) item.reject(err);
        },
      );
    if (!options.ordered) return;
    tails.set(group, done);
    void done.then(() => {
      if (tails.get(group) === done) tails.delete(group);
    });
  };

  const flush = () => {
    scheduled = false;
    const items = queue;
    queue = [];
    const groups: [number, I[]][] = options.bySlot ? groupBySlot(items) : [[-1, items]];
    for (const [slot, group] of groups) {
      for (let i = 0; i < group.length; i += options.maxBatch)
        run(slot, group.slice(i, i + options.maxBatch));
    }
  };

  return (item) => {
    queue.push(item);
    if (!scheduled) {
      scheduled = true;
      setImmediate(flush);
    }
  };
}

function groupBySlot<I extends { keys: readonly string[] }>(items: I[]): [number, I[]][] {
  const groups = new Map<number, I[]>();
  for (const item of items) {
    const slot = keySlot(item.keys[0] as string);
    let group = groups.get(slot);
    if (!group) groups.set(slot, (group = []));
    group.push(item);
  }
  return [...groups.entries()];
}
