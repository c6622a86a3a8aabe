// The batcher's contract against a fake server, over random interleavings of calls and barriers
// (sends and barrier functions that fail at random, batches of a few calls, by slot or not):
// every call is sent once and settles; a barrier runs after every call queued before it (of its
// key, when keyed on an ordered batcher) has settled; a holding barrier sends no later call of
// its scope before it has finished.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { type BatchItem, createBatcher } from './batcher.js';

interface Item extends BatchItem<number> {
  id: number;
  q: number;
  sentAt?: number;
  settledAt?: number;
}
interface Barrier {
  key: string | undefined;
  holdLater: boolean;
  q: number;
  startAt?: number;
  endAt?: number;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
// A pause of `turns` event-loop turns (the batcher flushes on setImmediate): what the property is
// about is the order in which sends, barriers and calls interleave, not wall time, so a random
// number of turns gives the same interleavings as a random sleep without waiting milliseconds.
const turns = async (n: number) => {
  for (let i = 0; i < n; i++) await new Promise((resolve) => setImmediate(resolve));
};

async function trial(seed: number, ordered: boolean, bySlot: boolean): Promise<string[]> {
  let state = seed >>> 0 || 1;
  const random = () => {
    state = (state * 1103515245 + 12345) & 0x7fffffff;
    return state / 0x7fffffff;
  };
  let clock = 0;
  const tick = () => ++clock;
  const sent = new Map<number, number>();
  const items: Item[] = [];
  const barriers: Barrier[] = [];
  const violations: string[] = [];
  const batcher = createBatcher<number, Item>({
    ordered,
    bySlot,
    maxBatch: 3,
    async send(batch) {
      const at = tick();
      for (const item of batch) {
        item.sentAt = at;
        sent.set(item.id, (sent.get(item.id) ?? 0) + 1);
      }
      await turns(Math.floor(random() * 4));
      if (random() < 0.1) throw new Error('batch failed');
      return batch.map((item) => item.id);
    },
  });
  const keys = ['{a}x', '{b}y', '{c}z', '{a}w'];
  const all: Promise<unknown>[] = [];
  for (let q = 0; q < 40; q++) {
    if (random() < 0.7) {
      const item = {
        id: q,
        q,
        keys: [keys[Math.floor(random() * keys.length)] as string],
      } as unknown as Item;
      items.push(item);
      const settled = new Promise<number>((resolve, reject) => {
        // Settled is when the batcher settles the call (resolve or reject), not when a
        // continuation of the caller's promise runs a microtask or two later: a barrier may rightly
        // start in between.
        item.resolve = (value: number) => {
          item.settledAt ??= tick();
          resolve(value);
        };
        item.reject = (err: unknown) => {
          item.settledAt ??= tick();
          reject(err);
        };
        batcher(item);
      });
      all.push(settled.then(nothing, nothing));
    } else {
      const barrier: Barrier = {
        key: random() < 0.5 ? keys[Math.floor(random() * keys.length)] : undefined,
        holdLater: random() < 0.8,
        q,
      };
      barriers.push(barrier);
      const done = batcher.barrier(
        barrier.key,
        async () => {
          barrier.startAt = tick();
          await turns(Math.floor(random() * 4));
          barrier.endAt = tick();
          if (random() < 0.2) throw new Error('read failed');
        },
        barrier.holdLater,
      );
      all.push(done.then(nothing, nothing));
    }
    const pause = random(); // a macrotask, a microtask, or none before the next call
    if (pause < 0.3) await turns(Math.floor(random() * 3));
    else if (pause < 0.5) await Promise.resolve();
  }
  let timer: NodeJS.Timeout | undefined;
  const hang = new Promise<string>((resolve) => (timer = setTimeout(() => resolve('hang'), 3000)));
  const outcome = await Promise.race([Promise.all(all).then(() => 'ok'), hang]);
  clearTimeout(timer);
  if (outcome === 'hang') violations.push('a call or barrier never settled');
  for (const item of items) {
    if (sent.get(item.id) !== 1) violations.push(`call ${item.id} sent ${sent.get(item.id) ?? 0} times`);
  }
  for (const barrier of barriers) {
    const inScope = (item: Item) => !(ordered && barrier.key !== undefined) || item.keys[0] === barrier.key;
    for (const item of items) {
      if (!inScope(item)) continue;
      if (item.q < barrier.q && !((item.settledAt ?? Infinity) < (barrier.startAt ?? -1))) {
        violations.push(`call ${item.q} had not settled when barrier ${barrier.q} ran`);
      }
      if (barrier.holdLater && item.q > barrier.q && !((item.sentAt ?? -1) > (barrier.endAt ?? Infinity))) {
        violations.push(`call ${item.q} was sent before barrier ${barrier.q} finished`);
      }
    }
  }
  return violations;
}

function nothing(): void {}

describe('createBatcher barrier', () => {
  it('orders calls and barriers as called, sends each call once, settles everything', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 1, max: 2 ** 30 }),
        fc.boolean(),
        fc.boolean(),
        async (seed, ordered, bySlot) => {
          expect(await trial(seed, ordered, bySlot)).toEqual([]);
        },
      ),
      { numRuns: 100 },
    );
  });

  it('barriers do not wait for each other: 20 slow reads of one key overlap', async () => {
    const batcher = createBatcher<number, Item>({
      ordered: true,
      bySlot: false,
      maxBatch: 8,
      send: async () => [],
    });
    let running = 0;
    let most = 0;
    await Promise.all(
      Array.from({ length: 20 }, () =>
        batcher.barrier('{a}x', async () => {
          most = Math.max(most, ++running);
          await sleep(5);
          running--;
        }),
      ),
    );
    expect(most).toBe(20);
  });
});
