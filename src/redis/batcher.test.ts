// The batcher's contract against a fake server, over random interleavings of calls and barriers
// (sends and barrier functions that fail at random, batches of a few calls, in one group, by slot
// or by node):
// every call is sent once and settles; a barrier runs after every call queued before it (of its
// key, when keyed on an ordered batcher) has settled; a holding barrier sends no later call of
// its scope before it has finished.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { type BatchItem, createBatcher } from './batcher.js';
import { nodeRouter } from './node-batch.js';
import { keySlot } from './slot.js';

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

type Grouping = 'one' | 'slot' | 'node';
// By node: '{a}' and '{c}' share a node, '{b}' has one of its own (a cluster's map, see below).
const groupings: Record<Grouping, ((key: string) => string | number) | undefined> = {
  one: undefined,
  slot: keySlot,
  node: (key) => (key.startsWith('{b}') ? 'n2' : 'n1'),
};

async function trial(seed: number, ordered: boolean, grouping: Grouping): Promise<string[]> {
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
    groupOf: groupings[grouping],
    maxBatch: 3,
    async send(batch) {
      const at = tick();
      const groups = new Set(batch.map((item) => groupings[grouping]?.(item.keys[0] as string)));
      if (groups.size !== 1) violations.push(`a batch of ${groups.size} groups`);
      const owners = new Set(batch.map((item) => item.keys[0]));
      if (ordered && owners.size !== batch.length) violations.push('an owner twice in an ordered batch');
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
  if (ordered) {
    // Each owner's calls in call order: a call is sent once the owner's previous one has settled.
    for (const [i, item] of items.entries()) {
      const next = items.slice(i + 1).find((later) => later.keys[0] === item.keys[0]);
      if (next !== undefined && !((next.sentAt ?? Infinity) > (item.settledAt ?? Infinity))) {
        violations.push(`call ${next.q} was sent before call ${item.q} of its owner settled`);
      }
    }
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
        fc.constantFrom<Grouping>('one', 'slot', 'node'),
        async (seed, ordered, grouping) => {
          expect(await trial(seed, ordered, grouping)).toEqual([]);
        },
      ),
      { numRuns: 100 },
    );
  });

  it('barriers do not wait for each other: 20 slow reads of one key overlap', async () => {
    const batcher = createBatcher<number, Item>({
      ordered: true,
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

describe('createBatcher grouped by node', () => {
  // Owners of 6 slots on 2 nodes, 3 calls each, all in one turn.
  const owners = ['{a}', '{b}', '{c}', '{d}', '{e}', '{f}'];
  const nodeOf = (key: string) => (owners.indexOf(key.slice(0, 3)) % 2 === 0 ? 'even' : 'odd');

  async function sent(ordered: boolean, maxBatch: number): Promise<string[][]> {
    const batches: string[][] = [];
    const batcher = createBatcher<number, Item>({
      ordered,
      groupOf: nodeOf,
      maxBatch,
      send: async (batch) => {
        batches.push(batch.map((item) => item.keys[0] as string));
        return batch.map(() => 0);
      },
    });
    const calls: Promise<number>[] = [];
    for (let round = 0; round < 3; round++) {
      for (const owner of owners) {
        calls.push(
          new Promise<number>((resolve, reject) =>
            batcher({ keys: [`${owner}x`], resolve, reject } as unknown as Item),
          ),
        );
      }
    }
    await Promise.all(calls);
    return batches;
  }

  it('unordered: one batch per node holds every slot of it, in call order', async () => {
    expect(await sent(false, 128)).toEqual([
      ['{a}x', '{c}x', '{e}x', '{a}x', '{c}x', '{e}x', '{a}x', '{c}x', '{e}x'],
      ['{b}x', '{d}x', '{f}x', '{b}x', '{d}x', '{f}x', '{b}x', '{d}x', '{f}x'],
    ]);
  });

  it('ordered: at most one call per owner in a batch, each owner in call order across batches', async () => {
    const batches = await sent(true, 128);
    // Three rounds of each node's three owners: three batches per node, one round each.
    expect(batches).toEqual([
      ['{a}x', '{c}x', '{e}x'],
      ['{b}x', '{d}x', '{f}x'],
      ['{a}x', '{c}x', '{e}x'],
      ['{b}x', '{d}x', '{f}x'],
      ['{a}x', '{c}x', '{e}x'],
      ['{b}x', '{d}x', '{f}x'],
    ]);
  });

  it('ordered: each owner applying then repeating in one turn makes two batches per node, not one per owner', async () => {
    const batches: string[][] = [];
    const batcher = createBatcher<number, Item>({
      ordered: true,
      groupOf: nodeOf,
      maxBatch: 128,
      send: async (batch) => {
        batches.push(batch.map((item) => item.keys[0] as string));
        return batch.map(() => 0);
      },
    });
    const calls: Promise<number>[] = [];
    for (const owner of owners) {
      for (let i = 0; i < 2; i++)
        calls.push(
          new Promise((resolve, reject) =>
            batcher({ keys: [`${owner}x`], resolve, reject } as unknown as Item),
          ),
        );
    }
    await Promise.all(calls);
    expect(batches).toEqual([
      ['{a}x', '{c}x', '{e}x'],
      ['{b}x', '{d}x', '{f}x'],
      ['{a}x', '{c}x', '{e}x'],
      ['{b}x', '{d}x', '{f}x'],
    ]);
  });

  it('maxBatch bounds a node batch', async () => {
    const batches = await sent(false, 4);
    expect(batches.map((b) => b.length)).toEqual([4, 4, 1, 4, 4, 1]);
    for (const batch of batches) expect(new Set(batch.map(nodeOf)).size).toBe(1);
  });

  it("nodeRouter groups by the master a Cluster's slot map names, by slot where it names none", () => {
    const slots: (string[] | undefined)[] = [];
    const a = keySlot('{a}x');
    const b = keySlot('{b}x');
    const c = keySlot('{c}x');
    slots[a] = ['127.0.0.1:7000', '127.0.0.1:7003'];
    slots[b] = ['127.0.0.1:7000'];
    const cluster = { isCluster: true, slots, call: async () => null };
    const router = nodeRouter(cluster, 1000);
    expect(router?.groupOf('{a}x')).toBe('127.0.0.1:7000');
    expect(router?.groupOf('{b}y')).toBe('127.0.0.1:7000');
    expect(router?.groupOf('{c}x')).toBe(c);
    expect(nodeRouter({ call: async () => null }, 1000)).toBeUndefined();
  });
});
