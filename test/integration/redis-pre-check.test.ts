// The ledger pre-check on a real Redis store: `seen` reads the owner's window from Redis (the read
// the filter skips), a false positive reads it and goes on, and the flooded replay of
// test/property/pre-check.test.ts applies every event exactly once here too.
import { describe, expect, it } from 'vitest';
import { createLedger } from '../../src/ledger/ledger.js';
import { createRedisStore } from '../../src/redis/index.js';
import type { Store } from '../../src/store/store.js';
import { wrapStore } from '../../src/testing/wrap-store.js';
import { SeenFilter } from '../../src/windows/seen-filter.js';
import {
  checkExactlyOnce,
  measuredFalsePositiveRate,
  type ReplayEvent,
  replay,
} from '../support/pre-check-replay.js';
import { redisRun } from '../support/redis-run.js';

const { client, prefix } = redisRun('pre-check');

function counted(base: Store) {
  const reads = { n: 0 };
  const store = wrapStore(base, {
    ledgerWindow: (ledger, owner) => {
      reads.n++;
      return base.ledgerWindow(ledger, owner);
    },
  });
  return { store, reads };
}

describe('ledger pre-check on Redis', () => {
  it('seen reads the window from Redis only when the filter says maybe; a restart rebuilds it', async () => {
    const base = createRedisStore({ client, prefix });
    const { store, reads } = counted(base);
    const ledger = createLedger({
      store,
      capacity: 4,
      name: 'pc-1',
      preCheck: new SeenFilter({ expected: 1_000 }),
    });
    const e = { owner: 'p1', signature: 's1', deltas: { coins: 3 } };
    expect(await ledger.seen(e)).toBe(false);
    expect(reads.n).toBe(0);
    expect((await ledger.apply(e)).outcome).toBe('applied');
    expect(await ledger.seen(e)).toBe(true);
    expect(reads.n).toBe(1);
    // Another process, a fresh filter: rebuilt from the windows in Redis.
    const restarted = createLedger({
      store,
      capacity: 4,
      name: 'pc-1',
      preCheck: new SeenFilter({ expected: 1_000 }),
    });
    expect(await restarted.seen(e)).toBe(false); // not rebuilt yet: no read, apply would dedup
    expect((await restarted.apply(e)).outcome).toBe('duplicate');
    const fresh = createLedger({
      store,
      capacity: 4,
      name: 'pc-1',
      preCheck: new SeenFilter({ expected: 1_000 }),
    });
    expect(await fresh.rebuildPreCheck(['p1', 'p2'])).toBe(1);
    expect(await fresh.seen(e)).toBe(true);
  });

  it('a flooded filter: every event of a repeated, reordered stream applied exactly once, as without it', async () => {
    const events: ReplayEvent[] = Array.from({ length: 60 }, (_, i) => ({
      owner: `p${i % 4}`,
      signature: `evt-${i}`,
      amount: i - 30,
    }));
    // Each event 1 to 3 times, shuffled by a fixed permutation (i * 37 mod n visits every index).
    const multiset = events.flatMap((_, id) => Array.from({ length: 1 + (id % 3) }, () => id));
    const deliveries = multiset.map((_, i) => multiset[(i * 37) % multiset.length] as number);
    const filter = new SeenFilter({ expected: 64, falsePositiveRate: 0.5 });
    for (let i = 0; i < 1_000; i++) filter.add(`junk:${i}`);
    expect(measuredFalsePositiveRate(filter, 10_000, 'probe')).toBeGreaterThan(0.45);
    const store = createRedisStore({ client, prefix });
    const plainLedger = createLedger({ store, capacity: 64, horizon: false, name: 'pc-plain' });
    const checked = createLedger({
      store,
      capacity: 64,
      horizon: false,
      name: 'pc-checked',
      preCheck: filter,
    });
    const plain = await replay(plainLedger, events, deliveries, 4);
    const pre = await replay(checked, events, deliveries, 4, { filter, junkPerBatch: 8, prefix: 'more' });
    expect(checkExactlyOnce(events, deliveries, 4, pre)).toBeUndefined();
    const appliedAt = (fates: string[]) => fates.flatMap((f, at) => (f === 'applied' ? [at] : []));
    expect(appliedAt(pre.fates)).toEqual(appliedAt(plain.fates));
    for (const owner of ['p0', 'p1', 'p2', 'p3'])
      expect(await checked.balances(owner)).toEqual(await plainLedger.balances(owner));
  });
});
