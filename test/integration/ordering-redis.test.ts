import { type Cluster, Redis } from 'ioredis';
import { afterAll, expect, it } from 'vitest';
import {
  createReorderer,
  FakeClock,
  memoryStore,
  type Release,
  Snowflake,
  VersionGate,
} from '../../src/index.js';
import { createRedisStore } from '../../src/redis/index.js';
import { orderingModelSuite } from '../support/model-suites/ordering.js';
import { cleanupPrefix, clusterClient, REDIS_URL, runPrefix } from './redis-env.js';

const clients: { label: string; make: () => Redis | Cluster }[] = [
  { label: 'standalone', make: () => new Redis(REDIS_URL) },
  { label: 'cluster', make: () => clusterClient() },
];

for (const { label, make } of clients) {
  const client = make();
  const prefixes: string[] = [];
  let models = 0;
  const fresh = (what: string) => {
    const prefix = runPrefix(`ordering-${label}-${what}`);
    prefixes.push(prefix);
    return createRedisStore({ client, prefix });
  };
  afterAll(async () => {
    for (const p of prefixes) await cleanupPrefix(client, p);
    await client.quit();
  });

  orderingModelSuite(
    { label: `Redis (${label})`, store: () => fresh(`model-${models++}`), runScale: 1 / 3 },
    {
      // Hash tags and the separators of Redis keys.
      gates: ['u{1}', 'a:b'],
      keys: ['k|3', 'ü'],
      checkpoints: ['p{1}', 'x:y'],
      clocks: ['p{1}', 'x:y'],
    },
    () => {
      it('concurrent upserts from many writers converge on the newest version, and never go back', async () => {
        const store = fresh('race');
        const other = make();
        const second = createRedisStore({ client: other, prefix: prefixes[prefixes.length - 1] as string });
        const a = new VersionGate({ store, name: 'rows' });
        const b = new VersionGate({ store: second, name: 'rows' });
        const versions = Array.from({ length: 200 }, (_, i) => (i * 7919) % 200);
        const results = await Promise.all(versions.map((v, i) => (i % 2 ? a : b).upsert('row-1', v, { v })));
        await other.quit();
        expect(await a.get('row-1')).toEqual({ version: 199n, value: { v: 199 } });
        // Each applied write was newer than everything applied before it.
        const applied = results.filter((r) => r.outcome === 'applied').map((r) => r.version);
        expect(applied).toEqual([...applied].sort((x, y) => (x < y ? -1 : 1)));
        expect(new Set(applied).size).toBe(applied.length);
      });

      it('a checkpoint save sent twice (a re-send after a lost reply) is saved both times, a save of another run is stale', async () => {
        for (const store of [memoryStore(), fresh('resend')]) {
          expect(await store.checkpointSave?.('cp', 1, '{"a":1}')).toBe('saved');
          expect(await store.checkpointSave?.('cp', 2, '{"a":2}')).toBe('saved');
          expect(await store.checkpointSave?.('cp', 2, '{"a":2}')).toBe('saved'); // the same command again
          expect(await store.checkpointSave?.('cp', 2, '{"b":9}')).toBe('stale'); // another run, same revision
          expect(await store.checkpointSave?.('cp', 1, '{"a":1}')).toBe('stale'); // an older save, late
          expect(await store.checkpointLoad?.('cp')).toEqual({ revision: 2, data: '{"a":2}' });
        }
      });

      it('a restarted consumer continues from its Redis checkpoint', async () => {
        const store = fresh('checkpoint');
        const seen: [number, boolean][] = [];
        const options = {
          capacity: 64,
          gapTimeout: '1m' as const,
          checkpoint: { store, name: 'cdc:public.users', every: 2 },
          onRelease: (r: Release<{ id: number }>) => void seen.push([r.seq, r.late]),
        };
        const first = await createReorderer<{ id: number }>(options);
        for (const s of [0, 1, 3, 5]) first.push(s, { id: s });
        await first.checkpoint();
        const second = await createReorderer<{ id: number }>(options); // the first one "crashed"
        expect(second.buffer.next).toBe(2);
        expect(second.push(1, { id: 1 }).outcome).toBe('duplicate');
        expect(second.push(2, { id: 2 }).map((r) => r.seq)).toEqual([2, 3]);
        expect(second.push(4, { id: 4 }).map((r) => r.seq)).toEqual([4, 5]);
        await second.close();
        expect(seen).toEqual([0, 1, 2, 3, 4, 5].map((s) => [s, false]));
      });

      it('a snowflake generator restarted with a clock behind its persisted lease is refused', async () => {
        const store = fresh('snowflake');
        const t0 = Date.UTC(2026, 0, 1);
        const clock = new FakeClock(t0);
        const first = await Snowflake.start({ worker: 9, store, name: 'orders', clock, lease: '1s' });
        const id = first.next();
        const behind = new FakeClock(t0 - 60_000);
        await expect(
          Snowflake.start({ worker: 9, store, name: 'orders', clock: behind }),
        ).rejects.toMatchObject({
          code: 'ERR_CLOCK_ROLLBACK',
        });
        const later = new FakeClock(t0 + 5_000);
        const second = await Snowflake.start({ worker: 9, store, name: 'orders', clock: later });
        expect(second.next() > id).toBe(true);
        first.close();
        second.close();
      });

      it('a second live generator under one name is refused: the store records the run holding it', async () => {
        const store = fresh('snowflake-twin');
        const first = await Snowflake.start({ worker: 4, store, name: 'ids', lease: '200ms' });
        first.next();
        // The twin reads the lease and waits it out while the first, in use, renews it at half-time.
        const busy = setInterval(() => first.next(), 10);
        const err = await Snowflake.start({ worker: 4, store, name: 'ids', lease: '200ms' }).catch(
          (e: unknown) => e,
        );
        clearInterval(busy);
        expect(err).toMatchObject({ code: 'ERR_STORE' });
        expect(String(err)).toMatch(/another run holds 'ids'/);
        expect(typeof first.next()).toBe('bigint');
        first.close();
      });
    },
  );
}
