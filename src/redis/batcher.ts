import { keySlot } from './slot.js';

/** One queued call: its keys (whatever else it carries, its `send` reads), and how to settle it. */
export interface BatchItem<R> {
  readonly keys: readonly string[];
  resolve(reply: R): void;
  reject(err: unknown): void;
}

/**
 * Coalesces calls made in the same turn of the event loop into batches that one script call
 * runs, in call order. Many concurrent callers then share one round trip and one script start
 * (on a local Redis the per-call overhead of EVALSHA is larger than a ledger step itself), while
 * a lone sequential caller still sends one call per apply with one `setImmediate` of delay.
 * On a cluster, a batch holds the calls of one hash slot only.
 */
export function createBatcher<R, I extends BatchItem<R> = BatchItem<R>>(options: {
  /** Runs one batch; resolves to one reply per item, in order. */
  send(items: readonly I[]): Promise<R[]>;
  /** Group by cluster slot of each item's first key. */
  bySlot: boolean;
  maxBatch: number;
}): (item: I) => void {
  let queue: I[] = [];
  let scheduled = false;

  const run = (items: I[]) => {
    options.send(items).then(
      (replies) => {
        for (const [i, item] of items.entries()) item.resolve(replies[i] as R);
      },
      (err: unknown) => {
        for (const item of items) item.reject(err);
      },
    );
  };

  const flush = () => {
    scheduled = false;
    const items = queue;
    queue = [];
    const groups = options.bySlot ? groupBySlot(items) : [items];
    for (const group of groups) {
      for (let i = 0; i < group.length; i += options.maxBatch) run(group.slice(i, i + options.maxBatch));
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
