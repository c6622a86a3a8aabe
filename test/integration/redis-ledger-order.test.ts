// The Redis ledger keeps each owner's call order across batches (chunks of one flush, a batch
// waiting on its registry SADD, a NOSCRIPT fallback), and its reads and limits match the memory
// store's. Each case pins down one way a store can get this wrong.
import { Redis } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import { createLedger } from '../../src/ledger/ledger.js';
import { createRedisStore } from '../../src/redis/index.js';
import { memoryStore } from '../../src/store/memory/memory-store.js';
import type { Store } from '../../src/store/store.js';
import { cleanupPrefix, REDIS_URL, runPrefix } from './redis-env.js';

/** A fresh ledger on `store` with one entry applied: owner p, signature s, scope r. */
async function applyOne(store: Store, deltas: Record<string, number>) {
  const ledger = createLedger({ store, capacity: 4 });
  const r = await ledger.apply({ owner: 'p', signature: 's', deltas, scope: 'r' });
  return { ledger, r };
}

describe('Redis ledger: call order and reads', () => {
  const client = new Redis(REDIS_URL);
  const prefix = runPrefix('order');
  let n = 0;
  const redisStore = (c: unknown = client) =>
    createRedisStore({ client: c as Redis, prefix: `${prefix}${n++}:` });
  afterAll(async () => {
    await cleanupPrefix(client, prefix);
    client.disconnect();
  });

  it('the second chunk of one flush never runs before the first (it needed no registry SADD)', async () => {
    const run = async (store: Store) => {
      const ledger = createLedger({ store, capacity: 1 });
      await ledger.apply({ owner: 'p', signature: 's0', deltas: { coins: 0 } }); // p registered
      const calls = [];
      // 129 calls in one turn: a first batch of 128 with new owners (a SADD first), then p alone.
      for (let i = 0; i < 127; i++)
        calls.push(ledger.apply({ owner: `q${i}`, signature: 'x', deltas: { coins: 1 } }));
      calls.push(ledger.apply({ owner: 'p', signature: 's1', deltas: { coins: 1 } }));
      calls.push(ledger.apply({ owner: 'p', signature: 's2', deltas: { coins: 10 } }));
      const outcomes = (await Promise.all(calls)).slice(-2).map((r) => r.outcome);
      outcomes.push((await ledger.apply({ owner: 'p', signature: 's2', deltas: { coins: 10 } })).outcome);
      return { outcomes, balances: await ledger.balances('p'), window: await ledger.window('p') };
    };
    const memory = await run(memoryStore());
    expect(memory.outcomes).toEqual(['applied', 'applied', 'duplicate']);
    expect(await run(redisStore())).toEqual(memory);
  });

  it('a batch falling back from NOSCRIPT to EVAL is not overtaken by the next batch of its owner', async () => {
    let noscriptOnce = false;
    const flaky = {
      call(command: string, ...args: (string | number)[]) {
        if (command === 'EVALSHA' && noscriptOnce) {
          noscriptOnce = false;
          return new Promise((_, reject) =>
            setTimeout(() => reject(new Error('NOSCRIPT No matching script. Please use EVAL.')), 5),
          );
        }
        return client.call(command, ...args);
      },
    };
    const ledger = createLedger({ store: redisStore(flaky), capacity: 1 });
    await ledger.apply({ owner: 'p', signature: 's0', deltas: { coins: 0 } });
    noscriptOnce = true;
    const first = ledger.apply({ owner: 'p', signature: 's1', deltas: { coins: 1 } });
    await new Promise((resolve) => setImmediate(resolve));
    const second = ledger.apply({ owner: 'p', signature: 's2', deltas: { coins: 10 } });
    await Promise.all([first, second]);
    const again = await ledger.apply({ owner: 'p', signature: 's2', deltas: { coins: 10 } });
    expect(again.outcome).toBe('duplicate');
    expect(await ledger.balances('p')).toEqual({ coins: 11n });
  });

  it('a batch that runs twice (a command re-sent after its reply was lost) applies nothing twice', async () => {
    // ioredis re-sends an unanswered command after a reconnect (autoResendUnfulfilledCommands):
    // emulated by running every ledger script twice and answering with the second run.
    const twice = {
      async call(command: string, ...args: (string | number)[]) {
        if (command === 'EVALSHA' || command === 'EVAL') await client.call(command, ...args);
        return client.call(command, ...args);
      },
    };
    const ledger = createLedger({ store: redisStore(twice), capacity: 2 });
    await ledger.apply({ owner: 'p', signature: 's0', deltas: { coins: 0 } });
    // Three calls of one owner in one turn, more than the capacity.
    const results = await Promise.all(
      ['s1', 's2', 's3'].map((signature) => ledger.apply({ owner: 'p', signature, deltas: { coins: 100 } })),
    );
    expect(await ledger.balances('p')).toEqual({ coins: 300n });
    expect((await ledger.journal({ owner: 'p' })).map((e) => e.signature)).toEqual(['s0', 's1', 's2', 's3']);
    // The caller sees the second run's answer, which is the first run's: each call is recognised by
    // its run id and call number and answered as it ran, with its journal seq.
    expect(results.map((r) => r.outcome)).toEqual(['applied', 'applied', 'applied']);
    expect(results.map((r) => r.seq)).toEqual([2, 3, 4]);
  });

  it('scope totals and balances of fields named like Object.prototype members match the memory store', async () => {
    const run = async (store: Store) => {
      const { ledger, r } = await applyOne(store, { valueOf: 5, constructor: 7 });
      return {
        balances: r.balances,
        totals: await ledger.totals('r'),
        journal: (await ledger.journal())[0]?.deltas,
      };
    };
    const memory = await run(memoryStore());
    expect(memory.totals).toEqual({ valueOf: 5n, constructor: 7n });
    expect(await run(redisStore())).toEqual(memory);
  });

  it('balances, totals and journals of a field a frozen Object.prototype holds read-only read as in memory', async () => {
    // Under a frozen prototype (SES lockdown), `out.toString = x` throws: every read builds its
    // objects with own data properties instead (the Redis balances read once assigned them).
    const descriptor = Object.getOwnPropertyDescriptor(Object.prototype, 'toString') as PropertyDescriptor;
    const run = async (store: Store) => {
      const { ledger, r } = await applyOne(store, { toString: 3, coins: 1 });
      return {
        result: Object.getOwnPropertyDescriptor(r.balances, 'toString')?.value,
        balances: Object.getOwnPropertyDescriptor(await ledger.balances('p'), 'toString')?.value,
        totals: Object.getOwnPropertyDescriptor(await ledger.totals('r'), 'toString')?.value,
        journal: Object.getOwnPropertyDescriptor((await ledger.journal())[0]?.deltas, 'toString')?.value,
      };
    };
    Object.defineProperty(Object.prototype, 'toString', { ...descriptor, writable: false });
    try {
      const memory = await run(memoryStore());
      expect(memory).toEqual({ result: 3n, balances: 3n, totals: 3n, journal: 3n });
      expect(await run(redisStore())).toEqual(memory);
    } finally {
      Object.defineProperty(Object.prototype, 'toString', descriptor);
    }
  });

  it('reads wait for the applies called before them, awaited or not, as in the memory store', async () => {
    const run = async (store: Store) => {
      const ledger = createLedger({ store, capacity: 4 });
      const pending: Promise<unknown>[] = [];
      const apply = (owner: string, signature: string, coins: number) =>
        pending.push(ledger.apply({ owner, signature, deltas: { coins }, scope: 'room' }));
      // Not awaited: each read is called right after applies still queued (p twice: two batches).
      apply('p', 'a', 1);
      apply('p', 'b', 2);
      apply('q', 'a', 4);
      const balances = ledger.balances('p');
      const window = ledger.window('p');
      const ownJournal = ledger.journal({ owner: 'p' });
      apply('q', 'b', 8);
      const totals = ledger.totals('room');
      const journal = ledger.journal();
      const out = {
        balances: await balances,
        window: await window,
        ownJournal: (await ownJournal).map((e) => e.signature),
        totals: await totals,
        journal: (await journal).map((e) => `${e.owner}:${e.signature}`).sort(),
      };
      await Promise.all(pending);
      return out;
    };
    const memory = await run(memoryStore());
    expect(memory).toEqual({
      balances: { coins: 3n },
      window: { signatures: ['a', 'b'] },
      ownJournal: ['a', 'b'],
      totals: { coins: 15n },
      journal: ['p:a', 'p:b', 'q:a', 'q:b'],
    });
    expect(await run(redisStore())).toEqual(memory);
  });

  it('a read is ordered between the applies called before and after it, as in the memory store', async () => {
    const run = async (store: Store) => {
      const ledger = createLedger({ store, capacity: 4 });
      const first = ledger.apply({ owner: 'p', signature: 's1', deltas: { coins: 1 }, scope: 'r' });
      const balances = ledger.balances('p');
      const totals = ledger.totals('r');
      const journal = ledger.journal({ owner: 'p' });
      const second = ledger.apply({ owner: 'p', signature: 's2', deltas: { coins: 10 }, scope: 'r' });
      await Promise.all([first, second]);
      return {
        balances: await balances,
        // Ledger-wide: at least the applies called before it (on Redis it reads owner by owner
        // and does not hold later applies, so one called after it may show too).
        totals: ((await totals).coins ?? 0n) >= 1n,
        journal: (await journal).map((e) => e.signature),
        now: await ledger.balances('p'),
      };
    };
    const memory = await run(memoryStore());
    expect(memory).toEqual({
      balances: { coins: 1n },
      totals: true,
      journal: ['s1'],
      now: { coins: 11n },
    });
    expect(await run(redisStore())).toEqual(memory);
  });

  it('reads do not wait for each other: 50 concurrent reads of one owner take about one read', async () => {
    // Every command answers 20 ms late: reads chained one behind another would take ~1 s.
    const slow = {
      call: (command: string, ...args: (string | number)[]) =>
        new Promise((resolve) => setTimeout(resolve, 20)).then(() => client.call(command, ...args)),
    };
    const ledger = createLedger({ store: redisStore(slow), capacity: 4 });
    await ledger.apply({ owner: 'p', signature: 's', deltas: { coins: 1 }, scope: 'r' });
    const started = Date.now();
    const reads = await Promise.all([
      ...Array.from({ length: 50 }, () => ledger.balances('p')),
      ...Array.from({ length: 10 }, () => ledger.totals('r')),
    ]);
    expect(Date.now() - started).toBeLessThan(400);
    expect(reads[0]).toEqual({ coins: 1n });
    expect(reads[55]).toEqual({ coins: 1n });
  });

  it('an entry with more delta fields than a script can pass is refused before any store is touched', async () => {
    const many = Object.fromEntries(Array.from({ length: 1001 }, (_, i) => [`f${i}`, 1]));
    for (const store of [memoryStore(), redisStore()]) {
      const ledger = createLedger({ store, capacity: 4 });
      await expect(ledger.apply({ owner: 'b', signature: 's', deltas: many })).rejects.toMatchObject({
        code: 'ERR_INVALID_ARGUMENT',
      });
      expect(await ledger.window('b')).toEqual({ signatures: [] });
    }
  });
});
